# Sourced by the build scripts (scripts/build, scripts/build-test,
# scripts/bazel-test): where the compiler caches live, and the settings that
# make them safe to share between checkouts.
#
#   UNDERSTUDY_CACHE=DIR   the caches' root (default: $XDG_CACHE_HOME/understudy,
#                          or ~/.cache/understudy); DIR/ccache for the CMake
#                          trees (ccache, Debian), DIR/bazel-disk for Bazel's
#                          --disk_cache
#   UNDERSTUDY_CACHE=off   no cache at all
#
# A cache never lives inside the checkout: a root inside it is refused (with a
# note on stderr) and the build runs without a cache, so that a fresh clone
# can never pick up a committed or stale build. A cache that is missing is
# created; an entry that is corrupt or was made by another compiler is a miss,
# never a failure (ccache checks every entry it reads and keys each on the
# compiler; for Bazel's disk cache see scripts/bazel-test).
#
# After sourcing: UNDERSTUDY_CACHE_ROOT is the root in use ("" for none);
# understudy_cmake_launcher prints the CMake flags that put ccache in front of
# the compiler (nothing when there is no cache or no ccache).

understudy_repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)

understudy_resolve_cache_root() {
  local want=${UNDERSTUDY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/understudy}
  if [[ $want == off ]]; then
    return 0
  fi
  mkdir -p "$want" 2>/dev/null || {
    echo "caches: cannot create $want; building without a cache" >&2
    return 0
  }
  local resolved
  resolved=$(cd "$want" && pwd -P)
  case "$resolved/" in
    "$understudy_repo_root"/*)
      echo "caches: $resolved is inside the checkout ($understudy_repo_root);" \
        "caches must live outside it: building without a cache" >&2
      return 0
      ;;
  esac
  echo "$resolved"
}

UNDERSTUDY_CACHE_ROOT=$(understudy_resolve_cache_root)

if [[ -n $UNDERSTUDY_CACHE_ROOT ]] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR=$UNDERSTUDY_CACHE_ROOT/ccache
  # Paths under the checkout are hashed relative to it, and the working
  # directory is not hashed: a second clone elsewhere hits the same entries.
  export CCACHE_BASEDIR=$understudy_repo_root
  export CCACHE_NOHASHDIR=true
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  # Objects of the release and test trees differ by compiler and flags; both
  # fit. Entries are compressed (the default), checked when read.
fi

understudy_cmake_launcher() {
  if [[ -n ${CCACHE_DIR:-} ]]; then
    echo "-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  fi
}

# Configures the CMake tree DIR with the flags that follow, unless it was
# configured with exactly these already (a change of flags, or a launcher
# that appeared or went, configures it again).
understudy_configure() {
  local dir=$1
  shift
  local stamp=$dir/.understudy-configure
  local want
  want=$(printf '%s\n' "$@")
  if [[ -f $dir/build.ninja && -f $stamp ]] && [[ $(cat "$stamp") == "$want" ]]; then
    return 0
  fi
  cmake -S "$understudy_repo_root" -B "$dir" -G Ninja "$@" >&2
  printf '%s\n' "$@" >"$stamp"
}
