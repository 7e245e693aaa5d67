#!/usr/bin/env bash
# The gRPC benchmark of docs/BENCHMARKS.md: each RPC of the real `reddog serve` binary against
# an in-tree no-op server with the same transport, both pinned to one core, h2load and the
# latency client on the other. Arguments go to examples/grpc_ratio.rs (see its header), e.g.
#   scripts/bench-grpc.sh --rounds 3 --calls 40000
#   scripts/bench-grpc.sh --rpc Decide --engine-env RUST_LOG=warn
# Needs 2 cores, taskset (util-linux) and h2load (Debian's nghttp2-client, installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v h2load >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client >/dev/null
fi
nice -n 10 cargo build --release --locked --bin reddog --example grpc_ratio
CLIENT_CPU="${CLIENT_CPU:-1}"
exec taskset -c "$CLIENT_CPU" target/release/examples/grpc_ratio --engine target/release/reddog --client-cpu "$CLIENT_CPU" "$@"
