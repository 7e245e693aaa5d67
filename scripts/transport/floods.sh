#!/usr/bin/env bash
# The floods of docs/RELIABILITY.md ("Floods and limits"), each against a fresh `reddog serve`
# on 127.0.0.1, with the server's peak RSS (VmHWM of a process started for that flood alone),
# its CPU time, the HTTP/2 answers and health during the flood. Loopback only; every flood is
# bounded in size and time.
#
#   scripts/transport/floods.sh BINARY [FLOOD_TOOL] [quick]
#
# BINARY: the reddog binary to test; FLOOD_TOOL: the built flood tool (tools/, default
# target/release/flood). `quick` runs smaller floods (CI). Needs h2load
# (apt-get install nghttp2-client) for the h2load runs. Prints one `flood:` line per flood and
# exits non-zero if a flood took the server over MAX_RSS_MIB (default 96; the last flood, with
# every limit reached at once, over MAX_RSS_ALL_MIB, default MAX_RSS_MIB), if health failed, or
# if the server's RSS did not come back within 20 % of its level before the flood within
# RSS_RETURNS_SECS (default 60) after it — that last bound is an open one (it has held in every
# run at the current limits, but once missed by a few MiB before): it is measured and printed,
# and fails the run only with ENFORCE_RSS_RETURN=1.
# During the h2load floods health over a connection idle 1.5 s between checks must answer
# SERVING every time; a RedDog client in use (a CommitSeed every 100 ms over a connection
# opened before the flood) and fresh clients (one every 500 ms) are timed and printed, with
# the server's in-process queue wait (reddog_rpc_queue_wait_seconds) and its sheds. With
# MAX_OK_CALL_MS set, the client in use must get every answer within it, OK or
# RESOURCE_EXHAUSTED (not by default: the waits are not the engine's to bound, see
# docs/RELIABILITY.md, "Overload").
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:?usage: floods.sh BINARY [FLOOD_TOOL] [quick]}"
FLOOD="${2:-target/release/flood}"
MODE="${3:-full}"
MAX_RSS="${MAX_RSS_MIB:-96}"
MAX_RSS_ALL="${MAX_RSS_ALL_MIB:-$MAX_RSS}"
RETURNS=(--rss-returns-within-secs "${RSS_RETURNS_SECS:-60}")
[ "${ENFORCE_RSS_RETURN:-0}" = 1 ] || RETURNS+=(--rss-return-open-bound)
OK_CHECK=(); [ -n "${MAX_OK_CALL_MS:-}" ] && OK_CHECK=(--max-ok-call-ms "$MAX_OK_CALL_MS")
EXTRA=(${SERVER_ARGS:-})
RING='{"primary":"f","keys":{"f":"5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"}}'
failures=0
runs=0

if [ "$MODE" = quick ]; then
  HEADERS=20000; BODY_CONNS=10; BODY_STREAMS=100; PRIO=100000; IDLE=500; H2SECS=4; H2C=100; H2M=100; FDS=1
else
  HEADERS=50000; BODY_CONNS=40; BODY_STREAMS=100; PRIO=100000; IDLE=2000; H2SECS=10; H2C=500; H2M=100; FDS=1
fi

OUT="$(mktemp)"; PID=""
start() { # start [prefix command...]
  : >"$OUT"
  REDDOG_KEY_RING="$RING" RUST_LOG=warn "$@" "$BIN" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    "${EXTRA[@]}" >"$OUT" 2>"$OUT.err" &
  PID=$!
  ADDR=""; METRICS=""
  for _ in $(seq 1 200); do
    ADDR="$(sed -n 's/^listening on //p' "$OUT")"; METRICS="$(sed -n 's/^metrics on //p' "$OUT")"
    [ -n "$ADDR" ] && [ -n "$METRICS" ] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "server did not start:"; cat "$OUT.err"; exit 1
}
stop() {
  kill -TERM "$PID" 2>/dev/null
  for _ in $(seq 1 300); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""
}
trap 'if [ -n "$PID" ]; then kill -KILL "$PID" 2>/dev/null; fi; rm -f "$OUT" "$OUT.err"' EXIT
metric() { # metric NAME_WITH_LABELS -> value (0 if absent)
  python3 - "$METRICS" "$1" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode()
print(next((l.split()[-1] for l in text.splitlines() if l.startswith(sys.argv[2] + " ")), "0"))
PY
}
line=""
flood() { # flood NAME ARGS... (sets $line)
  local name="$1"; shift
  line="$("$FLOOD" --target "$ADDR" --pid "$PID" --health --max-rss-mib "$MAX_RSS" "${RETURNS[@]}" "$@" 2>"$OUT.flood")"
  local rc=$?
  runs=$((runs + 1))
  echo "flood[$name]: $line"
  if [ $rc -ne 0 ]; then failures=$((failures + 1)); sed 's/^/  /' "$OUT.flood" | tail -5; fi
  grep -h 'NOT MET' "$OUT.flood" | sed 's/^/  /'
}

start; flood "headers x$HEADERS, 1 connection" headers --streams "$HEADERS"; stop
start; flood "stalled 64KiB bodies ${BODY_CONNS}x$BODY_STREAMS" bodies --conns "$BODY_CONNS" --streams "$BODY_STREAMS"; stop
start; flood "self-dependent PRIORITY x$PRIO" priority --frames "$PRIO"; stop
start; flood "idle preface-less x$IDLE" --settle-secs 1 idle --conns "$IDLE" --hold-secs 8; stop

if [ "$FDS" = 1 ]; then
  # Out of file descriptors: the server may hold 256; 400 silent connections take them all.
  start prlimit --nofile=256:256
  flood "fd exhaustion (nofile 256) x400" --settle-secs 1 idle --conns 400 --hold-secs 8
  # A busy accept loop would burn ~15 s of CPU here on an idle machine; the back-off ~0.05 s.
  cpu="$(sed -n 's/.*server_cpu_secs=\([0-9.]*\).*/\1/p' <<<"$line")"
  if [ -n "$cpu" ] && awk -v c="$cpu" 'BEGIN { exit !(c > 3) }'; then
    echo "  FAIL: the server used $cpu s of CPU while out of file descriptors (accept loop spinning?)"
    failures=$((failures + 1))
  fi
  stop
fi

h2load_flood() { # h2load_flood LABEL MAX_RSS [BODIES]: h2load on CommitSeed against the running
  # server; with BODIES, the stalled-bodies flood too, from 2 s into h2load's run
  local max_rss="$2" bodies="${3:-}"
  body="$(mktemp)"; printf '\x00\x00\x00\x00\x08\x0a\x06h2load' >"$body"
  ok0="$(metric 'reddog_rpc_requests_total{method="CommitSeed",code="OK"}')"
  shed0="$(metric 'reddog_load_shed_total')"; queued0="$(metric 'reddog_load_shed_queued_total')"
  # h2load starts 2 s after the watcher, whose connections (health, the client in use) are
  # then open before the flood; `exec` keeps the pid the watcher waits for.
  (sleep 2; exec h2load -D "$H2SECS" -c "$H2C" -m "$H2M" -d "$body" -H 'content-type: application/grpc' \
    -H 'te: trailers' "http://$ADDR/reddog.v1.RedDog/CommitSeed" >"$OUT.h2load" 2>&1) &
  H2PID=$!
  if [ -n "$bodies" ]; then
    (sleep 4; exec "$FLOOD" --target "$ADDR" --pid "$PID" --max-rss-mib "$MAX_RSS_ALL" "${RETURNS[@]}" \
      --settle-secs 0 bodies --conns "$BODY_CONNS" --streams "$BODY_STREAMS" --hold-secs 8 >"$OUT.bodies" 2>&1) &
    BPID=$!
  fi
  "$FLOOD" --target "$ADDR" --pid "$PID" --health --health-every-ms 1500 --call-every-ms 100 \
    "${OK_CHECK[@]}" --fresh-every-ms 500 --max-rss-mib "$max_rss" "${RETURNS[@]}" --settle-secs 0 \
    watch --secs 600 --while-pid "$H2PID" >"$OUT.watch" 2>"$OUT.flood" &
  WPID=$!
  wait "$H2PID"
  wait "$WPID"; wrc=$?
  ok1="$(metric 'reddog_rpc_requests_total{method="CommitSeed",code="OK"}')"
  shed="$(awk -v a="$(metric 'reddog_load_shed_total')" -v b="$shed0" 'BEGIN { print a - b }')"
  queued="$(awk -v a="$(metric 'reddog_load_shed_queued_total')" -v b="$queued0" 'BEGIN { print a - b }')"
  hwm="$(awk '/VmHWM/ {printf "%.1f", $2/1024}' /proc/"$PID"/status)"
  echo "flood[h2load -D $H2SECS -c $H2C -m $H2M CommitSeed$1]: $(grep -E '^requests:' "$OUT.h2load") grpc_ok=$(awk -v a="$ok1" -v b="$ok0" 'BEGIN { print a - b }') grpc_resource_exhausted=$shed (queued_too_long=$queued) vmhwm_mib=$hwm"
  echo "  watch: $(cat "$OUT.watch")"
  h2fail=0
  [ "$wrc" -eq 0 ] || { h2fail=1; tail -5 "$OUT.flood" | sed 's/^/  /'; }
  grep -E '^(finished in|status codes|time for request)' "$OUT.h2load" | sed 's/^/  /'
  awk -v m="$max_rss" -v h="$hwm" 'BEGIN { exit !(h > m) }' && { echo "  FAIL: VmHWM $hwm MiB > $max_rss MiB"; h2fail=1; }
  python3 - "$METRICS" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode()
b = [(l.split('le="')[1].split('"')[0], float(l.split()[-1])) for l in text.splitlines()
     if l.startswith("reddog_rpc_queue_wait_seconds_bucket")]
total = b[-1][1] if b else 0
print("  in-process queue wait (headers at the service to handler start): "
      + ", ".join("<=%s s: %d" % (le, n) for le, n in b if le in ("0.001", "0.01", "0.1", "0.25", "+Inf"))
      + " of %d calls" % total)
PY
  runs=$((runs + 1)); failures=$((failures + h2fail))
  rm -f "$body"
}

if command -v h2load >/dev/null; then
  start; h2load_flood "" "$MAX_RSS"; stop
  # Every limit at once: h2load fills every stream of the connection cap; 2 s in, stalled
  # bodies come from the same address, each retiring one of h2load's busy connections
  # (h2load does not reconnect), fill the pending request bytes and hold their connections:
  # the cap full, every stream open, the pending bytes full.
  start
  h2load_flood " beside ${BODY_CONNS}x$BODY_STREAMS stalled bodies" "$MAX_RSS_ALL" bodies
  wait "$BPID"; brc=$?
  echo "  bodies: $(grep '^flood:' "$OUT.bodies")"
  [ "$brc" -eq 0 ] || { echo "  FAIL: the stalled bodies beside h2load: $(tail -3 "$OUT.bodies")"; failures=$((failures + 1)); }
  stop
else
  echo "h2load not installed (apt-get install nghttp2-client): h2load run skipped"
fi

echo "floods: $((runs - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
