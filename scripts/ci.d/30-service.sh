#!/usr/bin/env bash
# gRPC service checks: `buf lint` on proto/, then the real binary on a free 127.0.0.1 port
# (the tables of examples/sandbox-tables.json, with --allow-sandbox) played by the Python
# client (examples/python) twice at the default table and once at the sandbox table through
# every hand class, then `reddog audit-log` over the engine's audit trail must find nothing
# (round ids never repeat, no round forks), and `reddog report --json` totals must equal the
# Settle answers the clients wrote to their ledger, whose reconciliation is clean, and finds a
# planted difference; plus a reflection call with `buf curl` and a scrape of /metrics. Installs its own tools under .tools/ (git-ignored). Exits non-zero on
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
source scripts/ci.d/tools/npm.sh && npm_tools   # pinned: scripts/ci.d/tools/package-lock.json
BUF="$NPM_TOOLS/node_modules/.bin/buf"
"$BUF" lint

echo "-- python client deps"
source scripts/ci.d/tools/pip.sh && pip_tools "$TOOLS/venv" grpcio grpcio-tools grpcio-status

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
cleanup() { kill -TERM "$PID" 2>/dev/null || true; rm -f "$OUT" "$OUT".*; }
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

# Each run appends every settled seat (its Settle answer) to one ledger CSV, for `reddog report`.
echo "-- python client"
"$TOOLS/venv/bin/python" examples/python/reddog_client.py --target "$ADDR" --rounds 30 --ledger "$OUT.ledger.csv"
echo "-- python client, again (fresh round ids: the audit trail must stay clean)"
"$TOOLS/venv/bin/python" examples/python/reddog_client.py --target "$ADDR" --rounds 10 --ledger "$OUT.ledger.csv"
echo "-- python client at the sandbox table: every hand class"
"$TOOLS/venv/bin/python" examples/python/reddog_client.py --target "$ADDR" --rounds 14 --sandbox \
  --ledger "$OUT.ledger.csv"

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

echo "-- reddog report: totals equal the Settle answers; reconciliation with the clients' ledger"
REPORT_ARGS=(--tables examples/sandbox-tables.json "$OUT.audit")
"$BIN" report "${REPORT_ARGS[@]}"
"$BIN" report --json "${REPORT_ARGS[@]}" > "$OUT.report.json"
python3 - "$OUT.report.json" "$OUT.ledger.csv" <<'PY'
import csv, json, sys
rows = json.load(open(sys.argv[1]))["rows"]
ledger = list(csv.DictReader(open(sys.argv[2])))
want = (len({r["round_id"] for r in ledger}), len(ledger),
        sum(int(r["staked"]) for r in ledger), sum(int(r["credited"]) for r in ledger))
got = tuple(sum(r[k] for r in rows) for k in ("rounds", "seats", "staked", "returned"))
assert got == want, "report rounds, seats, staked, returned %s != the Settle answers %s" % (got, want)
assert all(r["ggr"] == r["staked"] - r["returned"] for r in rows)
sandbox = {r["table_id"]: r["rounds"] for r in rows if r["sandbox"]}
# 14 sandbox rounds and the client's refused-Decide check (one round at a sandbox table).
assert sandbox == {"lab": 15}, "sandbox rows %s: the 15 sandbox rounds, apart" % sandbox
print("report totals = Settle answers: %d rounds, %d seats, staked %d, returned %d" % want)
PY
"$BIN" report --reconcile "$OUT.ledger.csv" "${REPORT_ARGS[@]}"
# One planted difference: the first seat's credit, one minor unit more.
awk -F, 'NR == 2 { $4 = $4 + 1; planted = $1 } { print } END { print planted > "/dev/stderr" }' OFS=, \
  "$OUT.ledger.csv" > "$OUT.planted.csv" 2> "$OUT.planted-round"
rc=0; "$BIN" report --reconcile "$OUT.planted.csv" "${REPORT_ARGS[@]}" > "$OUT.recon.txt" || rc=$?
cat "$OUT.recon.txt"
[ "$rc" = 1 ] || { echo "reconciliation with a planted difference exited $rc, not 1"; exit 1; }
grep -q "^credited_differs .*round \"$(cat "$OUT.planted-round")\" seat 0" "$OUT.recon.txt" \
  && grep -q "^differences: 1 " "$OUT.recon.txt" \
  || { echo "the planted difference is not the one difference reported"; exit 1; }
rm -f "$OUT" "$OUT".*
echo "service checks passed"
