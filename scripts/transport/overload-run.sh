#!/usr/bin/env bash
# Where calls wait under overload (docs/RELIABILITY.md, "Overload"): a fresh `reddog serve`
# on 127.0.0.1, h2load -n N (default 200000) -c 500 -m 100 on CommitSeed started 2 s after the
# flood tool's watcher (health over a connection idle 1.5 s between checks, a CommitSeed every
# 100 ms over a connection opened before the flood, one over a fresh connection every 500 ms),
# then h2load's summary and the server's sheds, in-process queue wait and closed connections.
#
#   scripts/transport/overload-run.sh BINARY FLOOD_TOOL [server flags...]
#   e.g. scripts/transport/overload-run.sh target/release/reddog target/release/flood --max-concurrent-streams 16
set -uo pipefail
BIN=$1; FLOOD=$2; shift 2
OUT=$(mktemp); BODY=$(mktemp)
REDDOG_KEY_RING='{"primary":"f","keys":{"f":"5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"}}' RUST_LOG=warn \
  "$BIN" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 "$@" >"$OUT" 2>/dev/null &
PID=$!
for _ in $(seq 100); do ADDR="$(sed -n 's/^listening on //p' "$OUT")"; [ -n "$ADDR" ] && break; sleep 0.1; done
M="$(sed -n 's/^metrics on //p' "$OUT")"
printf '\x00\x00\x00\x00\x08\x0a\x06h2load' >"$BODY"
(sleep 2; exec h2load -n ${N:-200000} -c 500 -m 100 -d "$BODY" -H 'content-type: application/grpc' -H 'te: trailers' "http://$ADDR/reddog.v1.RedDog/CommitSeed" > "$OUT.h2load" 2>&1) &
H=$!
"$FLOOD" --target "$ADDR" --pid "$PID" --health --health-every-ms 1500 --call-every-ms 100 --fresh-every-ms 500 --settle-secs 0 watch --secs 600 --while-pid "$H"
echo "rc=$?"
grep -E '^(finished|requests|status codes|time for request)' "$OUT.h2load"
curl -s "http://$M/metrics" | grep -E '^reddog_(load_shed|rpc_queue_wait_seconds_(bucket|count|sum)|connections_closed_total)' 
kill "$PID"; rm -f "$OUT" "$OUT.h2load" "$BODY"
