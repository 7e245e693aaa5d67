#!/usr/bin/env bash
# The reference platform (demo/): lint and test the demo crate, run the browser's
# verifier against the vectors in node, then the end-to-end test in headless Chromium
# (Debian's chromium driven by npm playwright-core) against the real engine and platform,
# and finally `reddog audit-log` over the engine's log (inside the e2e script).
# Installs what a fresh machine lacks: chromium (apt), node/npm (apt), playwright-core
# and axe-core (npm, under .tools/e2e, git-ignored). Prints the time of each phase.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS="$ROOT/.tools/e2e"
t() { date +%s; }
T0=$(t)
phase() { echo "-- $1 ($(( $(t) - T0 )) s so far)"; }

need_apt=()
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if ((${#need_apt[@]})); then
  phase "apt-get install ${need_apt[*]}"
  a=$(t)
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  echo "   apt install took $(( $(t) - a )) s"
fi

if [ ! -f "$TOOLS/node_modules/playwright-core/package.json" ] \
   || ! cmp -s demo/e2e/package-lock.json "$TOOLS/package-lock.json"; then
  phase "npm ci playwright-core axe-core (into .tools/e2e)"
  mkdir -p "$TOOLS"
  cp demo/e2e/package.json demo/e2e/package-lock.json "$TOOLS/"
  (cd "$TOOLS" && npm ci --silent --no-audit --no-fund >/dev/null)
fi

phase "rustfmt / clippy (demo crate)"
cargo fmt -p reddog-demo --check
cargo clippy -p reddog-demo --all-targets --features crash-points --locked -- -D warnings

phase "build the engine and the platform"
a=$(t)
# The engine binary exactly as `cargo test` (scripts/test-all) builds it, so this is a no-op
# after that step; built together with the demo, cargo would unify their dependencies'
# features and rebuild everything once more.
# (If the engine's tests do not compile, scripts/test-all has failed already; build the binary
# alone so that this step still reports on the demo.)
cargo test --locked -p reddog --no-run >/dev/null 2>&1 || cargo build --locked -p reddog --bin reddog
# One build of the demo, with the recovery test's `crash-points` feature: its failpoints are
# inert unless REDDOG_DEMO_CRASH_AT is set (only tests/recovery.rs sets it), so the same
# binary serves the load run and the browser test.
cargo build --locked -p reddog-demo --features crash-points
echo "   build took $(( $(t) - a )) s"

phase "cargo test -p reddog-demo (unit tests, crash recovery with the real binaries)"
cargo test --locked -p reddog-demo --features crash-points --lib
# --nocapture: the log shows the ledger after each crash and recovery.
# The crash failpoints exist only with the `crash-points` feature (never in a release build).
REDDOG_ENGINE_BIN="$ROOT/target/debug/reddog" cargo test --locked -p reddog-demo --features crash-points --test recovery -- --nocapture

phase "a short load run through the HTTP API (20 players x 5 rounds, ledger reconciled)"
# The documented run is 200 players on release binaries (demo/README.md, "Under load");
# this one checks in seconds that concurrent players leave the ledger exact.
node demo/load/load.mjs --players 20 --rounds 5 --bin-dir "$ROOT/target/debug"

phase "the browser's verifier in node, against tests/vectors"
node --test demo/js/

phase "the standalone verifier page from file://, offline (verify/web)"
node verify/web/web.e2e.mjs

phase "the table's badge against a dishonest platform: bet rewritten, keys stripped, key swapped"
node demo/e2e/badge.e2e.mjs

phase "end-to-end in headless Chromium"
export E2E_ARTIFACTS="$ROOT/target/demo-e2e-artifacts"
node demo/e2e/table.e2e.mjs
echo "   layout screenshots (CI artefacts): $E2E_ARTIFACTS"

phase "the table in a player's hand: a phone with 7 seats, net amounts, motion, checks panel, recovery"
node demo/e2e/hand.e2e.mjs

phase "done"
echo "demo step: $(( $(t) - T0 )) s"
