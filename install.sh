#!/usr/bin/env bash
# Installs everything focuscrawl needs into ./.venv (and, as root, the Debian packages
# the tests use: redis-server, chromium). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES="redis-server chromium chromium-driver"
APT_LOCK_TIMEOUT=${APT_LOCK_TIMEOUT:-600}

# apt-get that waits (up to APT_LOCK_TIMEOUT s) for another apt/dpkg run, e.g. a
# freshly booted machine's unattended upgrade, instead of failing at once (rc 100).
# DPkg::Lock::Timeout covers the dpkg lock; apt-get update ignores it for the lists
# lock, so a held lock is retried here too, and said.
apt_get() {
  local waited=0 rc log
  log=$(mktemp)
  while :; do
    rc=0
    apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" "$@" 2>&1 | tee "$log" >&2 || rc=${PIPESTATUS[0]}
    if [ "$rc" != 0 ] && [ $waited -lt "$APT_LOCK_TIMEOUT" ] && grep -q "Could not get lock" "$log"; then
      [ $waited = 0 ] && echo "install.sh: another apt/dpkg run holds its lock; waiting up to ${APT_LOCK_TIMEOUT}s ..." >&2
      sleep 2
      waited=$((waited + 2))
      continue
    fi
    rm -f "$log"
    return "$rc"
  done
}
if [ "${1:-}" = "apt-get" ]; then  # ./install.sh apt-get ARGS...: just the waiting apt-get (tests)
  shift
  apt_get "$@"
  exit
fi

missing=""
for pkg in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "install.sh: apt-get install$missing"
    apt_get update -qq
    DEBIAN_FRONTEND=noninteractive apt_get install -y -qq $missing
  else
    echo "install.sh: please install as root:$missing (tests needing them will fail)" >&2
  fi
fi

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
echo "install.sh: ready (.venv)"

# KenLM's build_binary (for `train-lm --binary`): compiled from the kenlm sdist of
# requirements.txt when g++ and zlib are there (about 2 minutes, once); optional.
if [ ! -x .venv/bin/build_binary ] && command -v g++ >/dev/null && [ -f /usr/include/zlib.h ]; then
  kenlm_tmp=$(mktemp -d)
  venv_bin=$PWD/.venv/bin
  if .venv/bin/python -m pip install -q wheel \
     && .venv/bin/python -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
          -d "$kenlm_tmp" "$(grep -i '^kenlm==' requirements.txt)" \
     && tar xzf "$kenlm_tmp"/kenlm-*.tar.gz -C "$kenlm_tmp" \
     && (cd "$kenlm_tmp"/kenlm-*/ && g++ -O2 -DNDEBUG -DKENLM_MAX_ORDER=6 -DHAVE_ZLIB -std=c++11 -I. -w \
           $(ls util/*.cc lm/*.cc util/double-conversion/*.cc | grep -v -E '(main|test)\.cc$') \
           lm/build_binary_main.cc -o "$venv_bin/build_binary" -lz -lpthread); then
    echo "install.sh: built .venv/bin/build_binary"
  else
    echo "install.sh: could not build KenLM's build_binary (train-lm --binary unavailable)" >&2
  fi
  rm -rf "$kenlm_tmp"
fi
