#!/usr/bin/env bash
# Overload against one worker thread (docs/RELIABILITY.md, "Overload"): a fresh
# `reddog serve --worker-threads 1` pinned to CPU 0, the load on CPU 1, twice:
#   1. `h2load -D SECS -c 500 -m 100` on CommitSeed ($SECS s, default 15), with the flood
#      tool's watcher beside it: health over a connection idle 1.5 s between checks, a
#      CommitSeed every 100 ms over a connection opened before the flood, and a fresh client
#      (a new connection from the same address, 127.0.0.1) every 500 ms, whose calls must be
#      answered OK at least MIN_FRESH_OK of the time (default 0.8); then h2load's summary and
#      the server's own counts (h2load sees HTTP status only: a refusal is HTTP 200 too);
#   2. the same load from the flood tool's `load` (500 connections x 100 streams of
#      CommitSeed for $SECS s, default 15, reading every gRPC status; a connection closed
#      gracefully is replaced at once), whose calls answered OK must have a p99 within
#      MAX_OK_P99_MS (default 250), every other call RESOURCE_EXHAUSTED or not taken (sent
#      after its connection's GOAWAY: `load_going_away`); the same watcher beside it.
#   Health (the watcher's exit status) is checked in both.
#
#   scripts/transport/overload-run.sh BINARY FLOOD_TOOL [server flags...]
#   e.g. scripts/transport/overload-run.sh target/release/reddog target/release/flood
# Exits non-zero if a check fails. Needs h2load (apt-get install nghttp2-client) and taskset.
set -uo pipefail
BIN=$1; FLOOD=$2; shift 2
SECS=${SECS:-15}
MIN_FRESH_OK=${MIN_FRESH_OK:-0.8}; MAX_OK_P99_MS=${MAX_OK_P99_MS:-250}
OUT=$(mktemp); BODY=$(mktemp); PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -f "$OUT" "$OUT".* "$BODY"' EXIT
failures=0
start() {
  : >"$OUT"
  REDDOG_KEY_RING='{"primary":"f","keys":{"f":"5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"}}' RUST_LOG=warn \
    taskset -c 0 "$BIN" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --worker-threads 1 "$@" >"$OUT" 2>/dev/null &
  PID=$!
  ADDR=""; M=""
  for _ in $(seq 100); do
    ADDR="$(sed -n 's/^listening on //p' "$OUT")"; M="$(sed -n 's/^metrics on //p' "$OUT")"
    [ -n "$ADDR" ] && [ -n "$M" ] && return 0
    sleep 0.1
  done
  echo "server did not start"; exit 1
}
stop() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""; }
counts() {
  curl -s "http://$M/metrics" | grep -E '^reddog_(rpc_requests_total\{method="CommitSeed"|load_shed|connections_closed_total|worker_wait)' | sed 's/^/  server /'
}
fresh_share() { # fresh_share WATCH_LINE: the fresh clients' share of calls answered OK, checked
  awk -v min="$MIN_FRESH_OK" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
    END { n = v["fresh_ok"] + v["fresh_shed"] + v["fresh_failed"]; s = n ? v["fresh_ok"] / n : 0;
          printf "fresh clients %d of %d OK (%.2f, bound %s)\n", v["fresh_ok"], n, s, min; exit !(s >= min) }' <<<"$1"
}
fail() { echo "  FAIL: $1"; failures=$((failures + 1)); }
watch() { # watch PID_TO_WATCH: the watcher, on CPU 1, until that process exits
  taskset -c 1 "$FLOOD" --target "$ADDR" --pid "$PID" --health --health-every-ms 1500 --call-every-ms 100 \
    --fresh-every-ms 500 --settle-secs 0 watch --secs 600 --while-pid "$1" >"$OUT.watch" 2>"$OUT.watch.err"
}

printf '\x00\x00\x00\x00\x08\x0a\x06h2load' >"$BODY"   # CommitSeedRequest{round_id:"h2load"}
echo "-- h2load -D $SECS -c 500 -m 100 on CommitSeed, one worker thread (server on CPU 0, load on CPU 1)"
start "$@"
(sleep 2; exec taskset -c 1 h2load -D "$SECS" -c 500 -m 100 -d "$BODY" -H 'content-type: application/grpc' -H 'te: trailers' \
  "http://$ADDR/reddog.v1.RedDog/CommitSeed" >"$OUT.h2load" 2>&1) &
H=$!
watch "$H"; rc=$?
wait "$H"
grep -E '^(finished|requests|status codes|time for request)' "$OUT.h2load" | sed 's/^/  /'
echo "  watch: $(cat "$OUT.watch")"
[ "$rc" -eq 0 ] || { failures=$((failures + 1)); sed 's/^/  /' "$OUT.watch.err" | tail -3; }
share="$(fresh_share "$(cat "$OUT.watch")")" && echo "  $share" || fail "$share"
counts
stop

echo "-- flood load: 500 connections x 100 streams of CommitSeed for $SECS s, one worker thread"
start "$@"
(sleep 2; exec taskset -c 1 "$FLOOD" --target "$ADDR" --settle-secs 0 --max-ok-p99-ms "$MAX_OK_P99_MS" \
  load --conns 500 --streams 100 --secs "$SECS" >"$OUT.load" 2>"$OUT.load.err") &
L=$!
watch "$L"; rc=$?
wait "$L"; lrc=$?
echo "  load: $(cat "$OUT.load")"
echo "  watch: $(cat "$OUT.watch")"
[ "$rc" -eq 0 ] || { failures=$((failures + 1)); sed 's/^/  /' "$OUT.watch.err" | tail -3; }
share="$(fresh_share "$(cat "$OUT.watch")")" && echo "  $share" || fail "$share"
[ "$lrc" -eq 0 ] || { fail "the load's served p99 or its outcomes: $(tail -1 "$OUT.load.err")"; }
# Every call of the load that was not served was refused RESOURCE_EXHAUSTED (or not taken:
# sent after its connection's GOAWAY, counted apart).
other="$(sed -n 's/.*load_other=\[\([^]]*\)\].*/\1/p' "$OUT.load")"
if [ -n "$other" ]; then fail "load calls neither OK nor RESOURCE_EXHAUSTED: $other"; fi
counts
stop
echo "overload: load average $(cut -d' ' -f1-3 /proc/loadavg); $failures check(s) failed"
[ "$failures" -eq 0 ]
