#!/usr/bin/env bash
# Transport floods against the real binary (release build), each on a fresh server on
# 127.0.0.1, at full size: 50,000 HEADERS-only streams on one connection, 40 x 100 stalled
# 64 KiB bodies, 100,000 self-dependent PRIORITY frames, 2,000 preface-less connections,
# file-descriptor exhaustion (nofile 256), h2load -c500 -m100 on CommitSeed, and that h2load
# flood again beside 40 x 100 stalled bodies (every limit reached at once). Each must keep the
# server's peak RSS under 96 MiB, the last under 112 MiB (the pod limit is 128 MiB), with
# health answering throughout.
# The figures are in docs/RELIABILITY.md ("Floods and limits"). About a minute per run.
# Installs h2load (Debian's nghttp2-client) if missing. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v h2load >/dev/null || ! command -v prlimit >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client util-linux >/dev/null
fi

echo "-- build (release: the binary the floods measure, and the flood tool)"
# The flood tool is its own small crate (tools/) on the engine's dependencies: with the engine's
# release build it adds two small binaries, not a release build of every dev-dependency.
cargo build --locked --release --bin reddog --bin flood

echo "-- floods"
MAX_RSS_MIB=96 bash scripts/transport/floods.sh target/release/reddog target/release/flood full
echo "-- floods, one thread serving calls (what a pod limited to one CPU runs)"
SERVER_ARGS="--worker-threads 1" MAX_RSS_MIB=96 \
  bash scripts/transport/floods.sh target/release/reddog target/release/flood full
