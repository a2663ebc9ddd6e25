#!/usr/bin/env bash
# Checks the npm package as a user installs it: a new npm project in
# SANDBOX/npm-project installs DIST/understudy-client-VERSION.tgz (no link
# to the repository), the official openai SDK, and TypeScript; then, with a
# clean environment (only PATH, HOME=SANDBOX/npm-home,
# TMPDIR=SANDBOX/npm-tmp and UNDERSTUDY_BIN) and the project as working
# directory:
#   - npm_smoke/smoke.mjs checks the installed package holds every file it
#     needs (naming any that is missing), records a chat completion from a
#     fake upstream through the installed server with the openai SDK,
#     replays it with the upstream gone, and asserts on the trace with the
#     installed client;
#   - npm_smoke/consumer.ts must compile with `tsc --strict` against the
#     installed type declarations.
#
#   UNDERSTUDY_BIN=/path/to/installed/understudy packaging/verify/npm.sh DIST SANDBOX
#
# Builds nothing. SANDBOX must be outside the repository; it is created if
# needed, and only its npm-project, npm-home and npm-tmp are touched
# (replaced), so the other checks can share it. Exits 0 when every
# check passes, else 1 with a message naming what failed.
set -euo pipefail

# The TypeScript the declarations are checked with.
TYPESCRIPT_VERSION=5.9.3

die() {
  echo "npm.sh: FAILED: $*" >&2
  exit 1
}
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

[[ $# -eq 2 ]] || die "usage: UNDERSTUDY_BIN=/path/to/understudy packaging/verify/npm.sh DIST_DIR SANDBOX"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
[[ -d $1 ]] || die "DIST_DIR $1 is not a directory"
dist=$(cd "$1" && pwd)
sandbox=$(realpath -m -- "$2")
case "$sandbox/" in "$(realpath -- "$repo")"/*) die "SANDBOX $sandbox is inside the repository $repo: use a fresh temporary folder" ;; esac
mkdir -p "$sandbox"

bin=${UNDERSTUDY_BIN:-}
[[ -n $bin ]] || die "UNDERSTUDY_BIN is not set: it names the installed understudy binary (packaging/verify/deb.sh prints it)"
[[ -x $bin ]] || die "UNDERSTUDY_BIN=$bin is not an executable file"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

# The artifact of the project's version (DIST may hold older ones).
version=$(sed -n 's/^project(understudy VERSION \([0-9][0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
tarball=$dist/understudy-client-$version.tgz
if [[ ! -f $tarball ]]; then
  found=$(find "$dist" -maxdepth 1 -name 'understudy-client-*.tgz' -printf '%f ')
  die "no understudy-client-$version.tgz in $dist (found: ${found:-none}); build it with clients/node/scripts/pack.sh $dist"
fi

# The versions the repository's own tests use.
openai_version=$(node -p "require('$repo/clients/node/package-lock.json').packages['node_modules/openai'].version")
types_node_version=$(node -p "require('$repo/clients/node/package-lock.json').packages['node_modules/@types/node'].version")

# A clean environment: node and npm, a home and a temp dir in the sandbox.
node_dir=$(dirname "$(command -v node)")
clean_path=$node_dir
for d in /usr/local/bin /usr/bin /bin; do
  [[ :$clean_path: == *:$d:* ]] || clean_path=$clean_path:$d
done
case ":$clean_path:" in *":$repo"*) die "node is inside the repository ($node_dir): use an installed one" ;; esac
project=$sandbox/npm-project
home=$sandbox/npm-home
tmp=$sandbox/npm-tmp
rm -rf "$project" "$home" "$tmp"
mkdir -p "$project" "$home" "$tmp"
clean_env=(env -i "PATH=$clean_path" "HOME=$home" "TMPDIR=$tmp" "LANG=C.UTF-8")
# npm keeps the user's download cache and registry; and a proxy, if any.
npm_env=("npm_config_cache=$(npm config get cache)" "npm_config_registry=$(npm config get registry)"
  npm_config_update_notifier=false)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [[ -z ${!v:-} ]] || npm_env+=("$v=${!v}")
done

cat >"$project/package.json" <<'JSON'
{
  "name": "understudy-npm-smoke",
  "version": "1.0.0",
  "private": true,
  "type": "module"
}
JSON
cp "$here/npm_smoke/smoke.mjs" "$here/npm_smoke/consumer.ts" "$here/npm_smoke/tsconfig.json" "$project/"

t=$(now)
(cd "$project" && "${clean_env[@]}" "${npm_env[@]}" npm install --prefer-offline --no-audit --no-fund \
  --loglevel=error "$tarball" "openai@$openai_version" "typescript@$TYPESCRIPT_VERSION" \
  "@types/node@$types_node_version" >&2) ||
  die "npm install of $tarball (with openai@$openai_version, typescript@$TYPESCRIPT_VERSION) in $project failed"
echo "npm.sh: installed $(basename "$tarball"), openai@$openai_version, typescript@$TYPESCRIPT_VERSION in $(took "$t")" >&2
installed=$project/node_modules/@understudy/client
[[ -d $installed && ! -L $installed ]] || die "npm install left no copy of the package at $installed"

t=$(now)
(cd "$project" && "${clean_env[@]}" "UNDERSTUDY_BIN=$bin" node smoke.mjs) ||
  die "the smoke test of the installed @understudy/client (smoke.mjs in $project) failed; its message is above"
echo "npm.sh: smoke test passed in $(took "$t")" >&2

t=$(now)
(cd "$project" && "${clean_env[@]}" node node_modules/typescript/bin/tsc -p tsconfig.json >&2) ||
  die "the TypeScript declarations of the installed @understudy/client ($installed/index.d.ts) do not type-check consumer.ts with tsc $TYPESCRIPT_VERSION --strict (errors above)"
echo "npm.sh: consumer.ts type-checks against the installed declarations in $(took "$t")" >&2
echo "npm.sh: OK" >&2
