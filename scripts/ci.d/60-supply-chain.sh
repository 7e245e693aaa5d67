#!/usr/bin/env bash
# Supply chain: `cargo deny check` with the repository's deny.toml — licences, bans, sources
# and advisories — plus the LICENSE file matching Cargo.toml.
#
# cargo-deny is installed into .tools/cargo-deny (`cargo install cargo-deny --locked --root`),
# so a warm machine skips the build. The advisory database is a git repository (RustSec);
# this step tries to fetch it. If it cannot be reached, the step says so on a line of its own
# and runs the other three checks — unless REDDOG_DENY_ADVISORIES=require, which makes an
# unreachable database a failure. SECURITY.md ("Supply chain") explains the gap.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
START=$(date +%s)
TOOLS=$ROOT/.tools
DENY=$TOOLS/cargo-deny/bin/cargo-deny

if [ ! -x "$DENY" ]; then
  echo "-- cargo install cargo-deny --locked (once; cached in .tools/cargo-deny)"
  t=$(date +%s)
  cargo install cargo-deny --locked --quiet --root "$TOOLS/cargo-deny"
  echo "   installed in $(( $(date +%s) - t )) s"
fi
echo "$("$DENY" --version)"

PASS=0; FAIL=0
check() { local what=$1; shift; if "$@"; then PASS=$((PASS + 1)); echo "  ok    $what"; else FAIL=$((FAIL + 1)); echo "  FAIL  $what"; fi; }

echo "-- licence of the crate"
license=$(sed -n 's/^license *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
check "Cargo.toml license = \"$license\" and LICENSE is its text" \
  sh -c "[ '$license' = Apache-2.0 ] && grep -q 'Apache License' LICENSE && grep -q 'Version 2.0, January 2004' LICENSE && grep -q 'END OF TERMS AND CONDITIONS' LICENSE"

echo "-- cargo deny check licenses bans sources"
check "licences, bans, sources (deny.toml)" "$DENY" --log-level warn check --config deny.toml licenses bans sources

echo "-- cargo deny check advisories"
DBS=${CARGO_HOME:-$HOME/.cargo}/advisory-dbs
fetch_log=$(mktemp)
trap 'rm -f "$fetch_log"' EXIT
if timeout 120 "$DENY" --log-level warn fetch --config deny.toml db >"$fetch_log" 2>&1; then
  check "advisories (RustSec database, fetched now)" \
    "$DENY" --log-level warn check --config deny.toml --disable-fetch advisories
elif [ -n "$(ls -A "$DBS" 2>/dev/null)" ]; then
  echo "  note  the advisory database could not be fetched now; using the copy in $DBS"
  check "advisories (RustSec database, cached copy)" \
    "$DENY" --log-level warn check --config deny.toml --disable-fetch advisories
else
  reason=$(grep -Eo '(Could not resolve host|failed to resolve|Connection refused|timed out|unable to access)[^"]*' "$fetch_log" | head -1)
  reason=${reason:-$(tail -1 "$fetch_log")}
  if [ "${REDDOG_DENY_ADVISORIES:-auto}" = require ]; then
    check "advisories: the RustSec database could not be fetched ($reason)" false
  else
    echo "  SKIPPED advisories: the RustSec advisory database (a git repository) could not be fetched:"
    echo "          $reason"
    echo "          run 'cargo deny check advisories' where it can be reached (SECURITY.md, \"Supply chain\")"
  fi
fi

echo "supply chain checks took $(( $(date +%s) - START )) s"
echo "supply-chain: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
