#!/usr/bin/env bash
# Short soak and fault runs against the release binary (the long ones are documented commands:
# docs/RELIABILITY.md). The test code is the integration-test binary `cargo test` already
# built (tests/it/soak.rs, tests/it/faults.rs, tests/it/fleet.rs); the server is
# target/release/reddog (built here if the container step has not):
#   - soak: 5 000 complete rounds, 32 concurrent players, ledger and Prometheus counters
#     reconciled, every reveal verified, RSS flat;
#   - faults, 3 000 rounds each, 16 players, two replicas sharing the key ring: SIGKILL of one
#     under load, SIGTERM (drain) of one under load, the three-step key rotation rolled to both
#     under load — every round settled exactly once;
#   - the evidence checks, with every `reddog` process the release binary: a forged reveal
#     refused given the player's record, signed receipts, audit-log's findings (the
#     settle-older fork, a 50 ms clock skew, tampered and truncated trails, open rounds, a
#     disputed reveal), RUST_LOG=warn keeping the whole trail, reports and reconciliation;
#   - the lockouts (tests/it/lockouts.rs: four connections that never read, stalled calls,
#     a churn of unused connections, an unread audit pipe and SIGTERM with
#     --drain-timeout-secs 3) and the key-file modes refused at start-up, on the release
#     binary as an attacker or an operator meets it;
#   - the audit sink under every fault (tests/it/audit_sink_faults.rs, as root: a tmpfs filled
#     and freed under load then a SIGKILL and a restart on the torn tail, /dev/full, ext4 on a
#     loop device frozen and thawed with fsfreeze, a stalled stdout reader, a full stderr pipe
#     at every log level, a run's end cut after a restart): every answer received is in the
#     trail, readiness NOT_SERVING within 2 s, calls again within 10 s, audit-log's findings,
#     SIGTERM within the drain bound.
# Prints each run's figures; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
START=$(date +%s)
cargo build --release --locked --quiet --bin reddog
export REDDOG_TEST_BIN=$PWD/target/release/reddog
export REDDOG_SOAK_SHORT_ROUNDS=${REDDOG_SOAK_SHORT_ROUNDS:-5000}
export REDDOG_FAULT_ROUNDS=${REDDOG_FAULT_ROUNDS:-3000}
# One test at a time: each drives its own processes and measures them.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --locked --test it -- --test-threads 1 --nocapture soak::soak_short faults:: >"$log" 2>&1 || status=$?
grep -E '^(soak|sigkill|sigterm|rotation):|^test |test result' "$log" || true
[ "$status" -eq 0 ] || grep -E -A4 'panicked' "$log" | head -40
echo "-- evidence checks against $REDDOG_TEST_BIN"
evidence=0
cargo test --locked --test it -- --nocapture audit_log:: fairness_cli:: receipts:: report:: \
  audit_trail::rust_log_warn_keeps_the_whole_trail_and_sigterm_ends_it_with_audit_stopped \
  lockouts:: operator_errors:: >"$log" 2>&1 || evidence=$?
grep -E '^(fresh client|unread audit pipe|SIGTERM with)|test result' "$log" || true
[ "$evidence" -eq 0 ] || { grep -E -A6 'panicked|FAILED' "$log" | head -60; status=$evidence; }
echo "-- the audit sink under every fault, against $REDDOG_TEST_BIN"
sink=0
cargo test --locked --test it -- --test-threads 1 --nocapture audit_sink_faults:: >"$log" 2>&1 || sink=$?
grep -E 'refused|answered|answers|SIGTERM|torn|SKIPPED|test result' "$log" | sed 's/^test [^ ]* \.\.\. //' || true
[ "$sink" -eq 0 ] || { grep -E -A6 'panicked|FAILED' "$log" | head -60; status=$sink; }
echo "soak and faults took $(( $(date +%s) - START )) s"
exit "$status"
