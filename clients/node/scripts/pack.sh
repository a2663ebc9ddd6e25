#!/usr/bin/env bash
# Builds the npm tarball of @understudy/client into OUT_DIR and prints its
# path: OUT_DIR/understudy-client-VERSION.tgz.
#
#   clients/node/scripts/pack.sh OUT_DIR
#
# In the repository the package's proto/understudy/v1 is a symlink to the
# repository's proto/understudy/v1, and npm pack leaves symlinks out. So the
# package is copied to a temporary staging directory with symlinks replaced
# by what they point at, and packed from there; its package.json "files"
# decides what ships. The version must be the project's (CMakeLists.txt
# project(... VERSION ...)).
# Writes only OUT_DIR/understudy-client-VERSION.tgz (replacing it) and a
# temporary directory it removes; running it twice gives the same bytes.
set -euo pipefail

die() {
  echo "pack.sh: $*" >&2
  exit 1
}

[[ $# -eq 1 ]] || die "usage: clients/node/scripts/pack.sh OUT_DIR"
pkg=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo=$(cd "$pkg/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

version=$(node -p "require('$pkg/package.json').version")
project_version=$(sed -n 's/^project(understudy VERSION \([0-9][0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[[ -n $project_version ]] || die "no 'project(understudy VERSION x.y.z' line in $repo/CMakeLists.txt"
[[ $version == "$project_version" ]] ||
  die "$pkg/package.json has version $version but $repo/CMakeLists.txt has $project_version: make them the same"

stage=$(mktemp -d "${TMPDIR:-/tmp}/understudy-client-pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT
# Everything but installed dependencies, with symlinks followed (-h).
tar -C "$pkg" -ch --exclude=./node_modules . | tar -C "$stage" -x

tarball=$(cd "$stage" && npm pack --pack-destination "$out" --json --loglevel=error |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s)[0].filename))')
[[ -f $out/$tarball ]] || die "npm pack reported $tarball but $out/$tarball is not there"
echo "$out/$tarball"
