#!/usr/bin/env bash
# System calls and CPU time per call of one server under h2load (docs/BENCHMARKS.md, "One core,
# one thread"): the server pinned to core 0, h2load -c 4 -m 32 on core 1, the server's
# writev/recvfrom/epoll_wait/futex/getrandom calls counted with `perf stat` tracepoints.
#
#   scripts/syscalls-per-call.sh SERVER RPC FIXTURES [CALLS] [-- SERVE_ARGS...]
#
# SERVER is a `reddog` binary (run as `reddog serve`, with the benchmark's key ring) or the
# plain baseline `plain-tonic` (bench/plain-tonic, given FIXTURES/responses.bin). FIXTURES is the directory
# `grpc_ratio --out DIR` fills (RPC.bin, responses.bin), e.g.
#   target/release/examples/grpc_ratio --engine target/release/reddog --rounds 1 --rpc GetRules --out /tmp/fx
#   scripts/syscalls-per-call.sh target/release/reddog CommitSeed /tmp/fx 100000
#   scripts/syscalls-per-call.sh target/release/reddog CommitSeed /tmp/fx 100000 -- --worker-threads 2
#   scripts/syscalls-per-call.sh target/release/plain-tonic CommitSeed /tmp/fx 100000
# Needs perf (Debian's linux-perf), h2load (nghttp2-client), taskset and 2 cores; root for
# the tracepoints.
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,16p "$0"; exit 2; }
server=$1 rpc=$2 fixtures=$3 calls=${4:-100000}
shift $(( $# >= 4 ? 4 : 3 ))
[ "${1:-}" = "--" ] && shift
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
export REDDOG_KEY_RING='{"primary":"bench","keys":{"bench":"4242424242424242424242424242424242424242424242424242424242424242"}}'
if [[ $(basename "$server") == plain-tonic* ]]; then
  taskset -c 0 "$server" "$fixtures/responses.bin" >"$work/out" 2>"$work/err" &
else
  taskset -c 0 "$server" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --audit-log /dev/null "$@" \
    >"$work/out" 2>"$work/err" &
fi
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/out" && break; sleep 0.1; done
addr=$(grep -m1 -o "listening on [0-9.:]*" "$work/out" | awk '{print $3}')
[ -n "$addr" ] || { cat "$work/err"; exit 1; }
load() {
  taskset -c 1 h2load -n "$1" -c 4 -m 32 -d "$fixtures/$rpc.bin" \
    -H content-type:application/grpc -H te:trailers "http://$addr/reddog.v1.RedDog/$rpc"
}
load 5000 >/dev/null
ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$pid/stat"; }
t0=$(ticks)
events=writev,recvfrom,epoll_wait,futex,getrandom
perf stat -x, -o "$work/stat" -p "$pid" \
  -e "$(echo "$events" | sed 's/\([a-z_]*\)/syscalls:sys_enter_\1/g')" -- bash -c "$(declare -f load); addr=$addr fixtures=$fixtures rpc=$rpc load $calls" >"$work/h2load"
t1=$(ticks)
grep -E "^(finished in|requests:)" "$work/h2load"
grep -q "$calls succeeded" "$work/h2load" || { echo "not every call succeeded" >&2; exit 1; }
awk -F, -v n="$calls" '/syscalls:/ { sub(/syscalls:sys_enter_/, "", $3); printf "%-11s %6.3f per call\n", $3, $1 / n }' "$work/stat"
awk -v a="$t0" -v b="$t1" -v n="$calls" -v hz="$(getconf CLK_TCK)" \
  'BEGIN { printf "CPU        %6.1f µs per call (user + system)\n", (b - a) / hz * 1e6 / n }'
