#!/usr/bin/env bash
# One h2load run on CommitSeed against a fresh `reddog serve` on 127.0.0.1, printing h2load's
# summary, the server's peak RSS (VmHWM) and its own gRPC counters (h2load sees only HTTP
# status). Used to set the transport defaults (docs/RELIABILITY.md):
#
#   scripts/transport/h2load-run.sh BINARY CONNECTIONS STREAMS REQUESTS [server flags...]
#   e.g. scripts/transport/h2load-run.sh target/release/reddog 500 100 200000 --max-connections 256
set -euo pipefail
BIN=$1; C=$2; M=$3; N=$4; shift 4
OUT="$(mktemp)"; BODY="$(mktemp)"
REDDOG_KEY_RING='{"primary":"f","keys":{"f":"5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"}}' \
  RUST_LOG=warn "$BIN" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 "$@" >"$OUT" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null; rm -f "$OUT" "$BODY"' EXIT
ADDR=""
for _ in $(seq 100); do ADDR="$(sed -n 's/^listening on //p' "$OUT")"; [ -n "$ADDR" ] && break; sleep 0.1; done
METRICS="$(sed -n 's/^metrics on //p' "$OUT")"
printf '\x00\x00\x00\x00\x08\x0a\x06h2load' >"$BODY"          # CommitSeedRequest{round_id:"h2load"}
h2load -n "$N" -c "$C" -m "$M" -d "$BODY" -H 'content-type: application/grpc' -H 'te: trailers' \
  "http://$ADDR/reddog.v1.RedDog/CommitSeed" | grep -E '^(finished|requests)'
echo "server VmHWM: $(awk '/VmHWM/ {printf "%.1f MiB", $2/1024}' /proc/$PID/status)"
python3 - "$METRICS" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode()
for l in text.splitlines():
    if l.startswith(('reddog_rpc_requests_total{method="CommitSeed"', "reddog_load_shed_total", "reddog_connections_closed_total")):
        print("server " + l)
PY
