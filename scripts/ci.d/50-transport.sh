#!/usr/bin/env bash
# Transport floods, overload and lockouts against the real binary (release build), each on a
# fresh server on 127.0.0.1:
#   - the floods at full size: 50,000 HEADERS-only streams on one connection, 40 x 100
#     stalled 64 KiB bodies, 100,000 self-dependent PRIORITY frames, 2,000 preface-less
#     connections, file-descriptor exhaustion (nofile 256), h2load -c500 -m100 on CommitSeed,
#     and that h2load flood again beside 40 x 100 stalled bodies (every limit reached at
#     once). Each must keep the server's peak RSS under 96 MiB with health answering
#     throughout; whether its RSS comes back within 20 % of its level before the flood within
#     a minute is printed (an open bound: ENFORCE_RSS_RETURN=1 enforces it); on the
#     default threads and on one;
#   - overload on one worker thread (scripts/transport/overload-run.sh): under h2load -c500
#     -m100 and under the same load from the flood tool, health answers, a fresh client from
#     the load's own address gets >= 80 % of its calls answered OK, and the calls served have
#     a p99 within 250 ms (MAX_OK_P99_MS), every other call RESOURCE_EXHAUSTED (or not taken,
#     after its connection's GOAWAY);
#   - the lockout sweep (tests/it/lockouts.rs, `sweep_*`): every attacker shape at a short
#     list of N on one and two worker threads, a fresh client at another address >= 90 % OK
#     (REDDOG_LOCKOUT_SWEEP=full for the whole sweep: docs/RELIABILITY.md, "No lockouts").
# The figures are in docs/RELIABILITY.md. Installs h2load (Debian's nghttp2-client) if missing.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
START=$(date +%s)

if ! command -v h2load >/dev/null || ! command -v prlimit >/dev/null || ! command -v taskset >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client util-linux >/dev/null
fi

echo "-- build (release: the binary the floods measure, and the flood tool)"
# The flood tool is its own small crate (tools/) on the engine's dependencies: with the engine's
# release build it adds two small binaries, not a release build of every dev-dependency.
cargo build --locked --release --bin reddog --bin flood

status=0
echo "-- floods"
RSS_RETURNS_SECS=30 MAX_RSS_MIB=96 MAX_RSS_ALL_MIB=96 bash scripts/transport/floods.sh target/release/reddog target/release/flood full || status=1
echo "-- floods, one thread serving calls (what a pod limited to one CPU runs)"
SERVER_ARGS="--worker-threads 1" RSS_RETURNS_SECS=30 MAX_RSS_MIB=96 MAX_RSS_ALL_MIB=96 \
  bash scripts/transport/floods.sh target/release/reddog target/release/flood full || status=1
echo "-- overload, one worker thread"
bash scripts/transport/overload-run.sh target/release/reddog target/release/flood || status=1

echo "-- lockout sweep (short list of N; one test at a time: each measures its own server)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
REDDOG_TEST_BIN=$PWD/target/release/reddog cargo test --locked --test it -- --ignored --test-threads 1 --nocapture \
  lockouts::sweep_ >"$log" 2>&1 || status=1
grep -E '^sweep:|^test |test result' "$log" || true
[ "$status" -eq 0 ] || grep -E -A8 'panicked' "$log" | head -40
echo "transport step took $(( $(date +%s) - START )) s"
exit "$status"
