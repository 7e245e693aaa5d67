#!/usr/bin/env bash
# SMOKE run of the gRPC benchmark (scripts/bench-grpc.sh, examples/grpc_ratio.rs and
# bench/plain-tonic), not a measurement: the debug build, one round of few calls per
# RPC, so the harness cannot rot. It still checks what every run checks: every call of the
# run answered OK by the engine's own counters, the three servers moving the same bytes.
# Its figures mean nothing; real measurements: docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
BENCH_PROFILE=dev BENCH_NICE=0 scripts/bench-grpc.sh --rounds 1 --calls 3000 --warmup 300 \
  --rate 500 --latency-secs 1
echo "gRPC benchmark smoke run: $((SECONDS - start)) s"
