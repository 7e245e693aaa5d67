#!/usr/bin/env bash
# The gRPC benchmark of docs/BENCHMARKS.md: each RPC of the real `reddog serve` binary against
# a plain tonic server with tonic's defaults and codec (bench/plain-tonic, no engine code) and the engine's own
# transport around canned answers (the no-op), all pinned to one core, h2load and the
# latency client on the other. Arguments go to examples/grpc_ratio.rs (see its header), e.g.
#   scripts/bench-grpc.sh --rounds 5 --calls 40000
#   scripts/bench-grpc.sh --rpc Decide --engine-env RUST_LOG=warn
# Needs 2 cores, taskset (util-linux) and h2load (Debian's nghttp2-client, installed if missing).
#
# On a machine shared with other work the CFS scheduler gives each session ("autogroup") an
# equal share of a core, so other sessions' builds would decide the wall-clock figures. The
# run therefore gets its own session (setsid) whose autogroup is set to nice $BENCH_NICE
# (default -15; needs root, else it runs at nice 0 and says so). A run takes 2-5 minutes.
# ENGINE=path/to/reddog measures another build of the engine (e.g. an older commit's).
# BENCH_PROFILE=dev uses the debug build instead (CI's smoke run: scripts/ci.d/55-bench-grpc-smoke.sh;
# its figures mean nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v h2load >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client >/dev/null
fi
if [ "${BENCH_PROFILE:-release}" = dev ]; then
  OUT_DIR=target/debug PROFILE=()
else
  OUT_DIR=target/release PROFILE=(--release)
fi
# Two builds: the plain server's tonic gets tonic's default features only, not the engine's
# (one build would unify them), and the engine binary is the one `cargo build --bin reddog` makes.
nice -n 10 cargo build "${PROFILE[@]}" --locked --bin reddog --example grpc_ratio
nice -n 10 cargo build "${PROFILE[@]}" --locked -p plain-tonic
CLIENT_CPU="${CLIENT_CPU:-1}"
ENGINE="${ENGINE:-$OUT_DIR/reddog}"
export CLIENT_CPU ENGINE OUT_DIR BENCH_NICE="${BENCH_NICE:--15}"
exec setsid --wait bash -c '
  if echo "$BENCH_NICE" 2>/dev/null >/proc/self/autogroup; then
    echo "scheduling: own autogroup at nice $BENCH_NICE" >&2
  else
    echo "scheduling: could not set the autogroup nice (not root?): figures share the cores with everything else" >&2
  fi
  exec taskset -c "$CLIENT_CPU" "$OUT_DIR/examples/grpc_ratio" --engine "$ENGINE" --plain "$OUT_DIR/plain-tonic" \
    --client-cpu "$CLIENT_CPU" "$@"
' bench-grpc "$@"
