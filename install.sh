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
