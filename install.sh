#!/usr/bin/env bash
# Installs everything focuscrawl needs into ./.venv (and, as root, the Debian packages
# the tests use: redis-server, chromium). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES="redis-server chromium chromium-driver"
missing=""
for pkg in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "install.sh: apt-get install$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
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
