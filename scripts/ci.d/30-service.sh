#!/usr/bin/env bash
# gRPC service checks: `buf lint` on proto/, then the real binary on a free 127.0.0.1 port
# (the tables of examples/sandbox-tables.json, with --allow-sandbox) played by the Python
# client (examples/python) twice at the default table and once at the sandbox table through
# every hand class, then `reddog audit-log` over the engine's audit trail must find nothing
# (round ids never repeat, no round forks); plus a reflection call with `buf curl` and a
# scrape of /metrics. Installs its own tools under .tools/ (git-ignored). Exits non-zero on
# any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOOLS="$PWD/.tools"
mkdir -p "$TOOLS"

# A fresh machine may lack npm or the venv module; install them from Debian if so.
need_apt=()
command -v npm >/dev/null || need_apt+=(npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
if ((${#need_apt[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

echo "-- buf lint"
if [ ! -x "$TOOLS/buf/node_modules/.bin/buf" ]; then
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/buf" @bufbuild/buf >/dev/null
fi
BUF="$TOOLS/buf/node_modules/.bin/buf"
"$BUF" lint

echo "-- python client deps"
if [ ! -x "$TOOLS/venv/bin/python" ]; then
  python3 -m venv "$TOOLS/venv"
fi
"$TOOLS/venv/bin/python" -c "import grpc, grpc_tools, grpc_status" 2>/dev/null \
  || "$TOOLS/venv/bin/pip" install --quiet grpcio grpcio-tools grpcio-status

echo "-- build"
cargo build --locked --bin reddog
BIN="$PWD/target/debug/reddog"

echo "-- start the server on a free port"
OUT="$(mktemp)"
# The engine's audit trail goes to its own file (`--audit-log`), which `reddog audit-log` reads.
AUDIT_SERVE_ARGS=(--log-format json --audit-log "$OUT.audit")
"$BIN" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --allow-sandbox \
  --table-config examples/sandbox-tables.json "${AUDIT_SERVE_ARGS[@]}" >"$OUT" 2>"$OUT.err" &
PID=$!
cleanup() { kill -TERM "$PID" 2>/dev/null || true; rm -f "$OUT" "$OUT.err" "$OUT.audit"; }
trap cleanup EXIT
ADDR=""; METRICS=""
for _ in $(seq 1 100); do
  ADDR="$(sed -n 's/^listening on //p' "$OUT")"
  METRICS="$(sed -n 's/^metrics on //p' "$OUT")"
  [ -n "$ADDR" ] && [ -n "$METRICS" ] && break
  kill -0 "$PID" 2>/dev/null || { cat "$OUT.err"; echo "server exited"; exit 1; }
  sleep 0.1
done
[ -n "$ADDR" ] || { cat "$OUT.err"; echo "no 'listening on' line"; exit 1; }
echo "server on $ADDR, metrics on $METRICS"

echo "-- buf curl (reflection)"
"$BUF" curl --protocol grpc --http2-prior-knowledge "http://$ADDR/reddog.v1.RedDog/GetRules" | head -c 400; echo
"$BUF" curl --protocol grpc --http2-prior-knowledge -d '{"service":""}' "http://$ADDR/grpc.health.v1.Health/Check"

echo "-- python client"
"$TOOLS/venv/bin/python" examples/python/reddog_client.py --target "$ADDR" --rounds 30
echo "-- python client, again (fresh round ids: the audit trail must stay clean)"
"$TOOLS/venv/bin/python" examples/python/reddog_client.py --target "$ADDR" --rounds 10
echo "-- python client at the sandbox table: every hand class"
"$TOOLS/venv/bin/python" examples/python/reddog_client.py --target "$ADDR" --rounds 14 --sandbox

echo "-- metrics"
"$TOOLS/venv/bin/python" - "$METRICS" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode()
for name in ("reddog_rpc_requests_total", "reddog_staked_minor_units_total", "reddog_returned_minor_units_total",
             "reddog_seats_settled_total", "reddog_token_rejections_total", "reddog_rpc_duration_seconds_bucket",
             "reddog_token_seals_total", "reddog_table_sandbox"):
    assert name in text, name
print("metrics ok")
PY

echo "-- graceful stop"
kill -TERM "$PID"
for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PID" 2>/dev/null; then echo "server still running 10 s after SIGTERM"; exit 1; fi
wait "$PID"
trap - EXIT
echo "-- reddog audit-log over the engine's audit trail (two client runs, a sandbox run)"
"$BIN" audit-log "$OUT.audit"
rm -f "$OUT" "$OUT.err"
echo "service checks passed"
