#!/usr/bin/env bash
# Regenerates requirements.txt (beside this file) from requirements.in: every package the CI
# steps install and all their dependencies, each pinned by version with the SHA-256 of every
# distribution file the package index lists for that version (all platforms' wheels and the
# sdist), so `pip install --require-hashes` installs exactly these files or nothing.
# Resolved for the Python this runs with (CI's: Debian's python3); pins already in
# requirements.txt are kept unless requirements.in needs others (`--upgrade` to move them).
#   bash scripts/ci.d/tools/lock-pip.sh [--upgrade]
set -euo pipefail
cd "$(dirname "$0")"
PIP_TOOLS=7.7.0
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "pip-tools==$PIP_TOOLS"
# No index, find-links or trusted-host lines: the file names packages, not where they come from.
CUSTOM_COMPILE_COMMAND="bash scripts/ci.d/tools/lock-pip.sh" "$venv/bin/pip-compile" -q \
  --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links --no-emit-trusted-host \
  --output-file requirements.txt "$@" requirements.in
echo "requirements.txt: $(grep -c '^[A-Za-z0-9]' requirements.txt) packages, $(grep -c -- '--hash=' requirements.txt) hashes"
