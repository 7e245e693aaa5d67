#!/usr/bin/env bash
# `reddog certify --quick` on the default table and on deploy/examples/tables.json, with the
# debug binary `cargo test` builds: each run must exit 0; its report.html must open in
# headless Chromium (Debian's chromium + npm playwright-core, installed as 50-demo.sh does)
# and dieharder (apt; the quick plan runs its birthdays test on the deal's raw stream)
# with no console errors, no network request and at least one chart; report.json's exact RTP
# fractions must equal `reddog odds --json`'s for the same table (run with the commands the
# report itself names), its simulated RTP must equal `reddog simulate --json`'s for the
# default table, and its binary digest must equal `sha256sum` of the binary;
# `serve --certified-rules` with its certified-rules.json starts on those tables and refuses
# a copy with one paytable entry changed, naming the table and both digests. Issue 45's
# must-shows: `--against deploy/base/certified-rules.json` on a config whose three of a kind
# pays 1 prints the entry and both RTPs and exits non-zero without `--approve` (and with it
# certifies, recording the change and the note); an RTP-above-1 config without the promotion
# flag exits non-zero and writes no certified-rules.json; examples/sandbox-tables.json
# certifies, its sandbox table marked sandbox in the file; `serve --certified-rules` on the
# shipped file (certified by another build) exits non-zero naming both binary digests. The
# reports are left in target/certify/ (CI keeps them as artefacts). Prints "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS="$ROOT/.tools/e2e"
OUT="$ROOT/target/certify"
T0=$(date +%s)

passed=0
failed=0
step() { # name, command...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}

need_apt=()
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
command -v dieharder >/dev/null || need_apt+=(dieharder)
if ((${#need_apt[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if [ ! -f "$TOOLS/node_modules/playwright-core/package.json" ] \
   || ! cmp -s demo/e2e/package-lock.json "$TOOLS/package-lock.json"; then
  mkdir -p "$TOOLS"
  cp demo/e2e/package.json demo/e2e/package-lock.json "$TOOLS/"
  (cd "$TOOLS" && npm ci --silent --no-audit --no-fund >/dev/null)
fi

# The binary exactly as `cargo test` builds it (a no-op after scripts/test-all's test step).
cargo build --locked --quiet --bin reddog
bin="$ROOT/target/debug/reddog"
rm -rf "$OUT"
mkdir -p "$OUT"

certify() { # name, extra args...
  local name=$1; shift
  local a; a=$(date +%s)
  nice -n 10 "$bin" certify --quick --no-progress --out "$OUT/$name" "$@"
  echo "   certify $name took $(( $(date +%s) - a )) s"
}
step "certify --quick, default table: exit 0" certify default
step "certify --quick, deploy/examples/tables.json: exit 0" certify tables --table-config deploy/examples/tables.json
step "certify --quick, examples/sandbox-tables.json: exit 0" certify sandbox --table-config examples/sandbox-tables.json

sandbox_marked() {
  python3 - "$OUT/sandbox/certified-rules.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
marks = {t["table_id"]: t["sandbox"] for t in f["tables"]}
print(f"   verdict {f['verdict']}, sandbox flags {marks}")
sys.exit(0 if f["verdict"] == "pass" and marks == {"default": False, "jpy": False, "lab": True} else 1)
PY
}
step "sandbox-tables: the file marks table lab sandbox and only lab" sandbox_marked

# Issue 45: a typo against the certified rules in force is shown, and refused without approval.
typo_refused() {
  local cfg="$OUT/typo.json" log="$OUT/typo.log" rc=0
  python3 -c 'import json,sys; t=json.load(open("deploy/base/table.json")); t["paytable"]["three_of_a_kind"]=1; json.dump(t, open(sys.argv[1],"w"))' "$cfg"
  "$bin" certify --quick --no-progress --table-config "$cfg" --against deploy/base/certified-rules.json \
    --out "$OUT/typo" > "$log" 2>&1 || rc=$?
  sed 's/^/   /' "$log"
  before=$(python3 -c 'import json; print(json.load(open("deploy/base/certified-rules.json"))["tables"][0]["rtp_exact"])')
  after=$("$bin" odds --json --decks 1 --paytable <(python3 -c 'import json; print(json.dumps(json.load(open("'"$cfg"'"))["paytable"]))') \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["rtp_range"]["per_initial_bet"]["best"]["fraction"])')
  echo "   exit $rc; RTP before $before, after $after"
  [ "$rc" -ne 0 ] && grep -q "paytable.three_of_a_kind: 11 -> 1" "$log" && grep -qF "rtp: $before (" "$log" \
    && grep -qF -- "-> $after (" "$log" && [ ! -e "$OUT/typo/certified-rules.json" ]
}
step "certify --against deploy/base/certified-rules.json, three of a kind pays 1: entry and both RTPs shown, exit non-zero, nothing written" typo_refused
typo_approved() {
  "$bin" certify --quick --no-progress --table-config "$OUT/typo.json" --against deploy/base/certified-rules.json \
    --approve "CI: the typo, approved to show the record" --out "$OUT/typo" > "$OUT/typo-approved.log" 2>&1 || return 1
  python3 - "$OUT/typo/certified-rules.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["change"]
t = c["tables"][0]
print(f"   recorded: {t['fields']}, rtp {t['rtp_before']} -> {t['rtp_after']}; approval {c['approval']!r}")
sys.exit(0 if c["approval"] and len(c["needs_approval"]) == 2 and t["fields"][0]["field"] == "paytable.three_of_a_kind" else 1)
PY
}
step "the same with --approve: certified, the file records the change and the note" typo_approved
step "typo (approved): report.html with its change section in Chromium" sh -c \
  "node scripts/certify/check-html.mjs '$OUT/typo/report.html' && grep -q 'Change against the certified rules in force' '$OUT/typo/report.html'"

rtp_over_1_refused() {
  local cfg="$OUT/rtp282.json" rc=0
  echo '{"decks":1,"paytable":{"spread":[5,5,5,5,5,5,5,5,5,5,5],"three_of_a_kind":11}}' > "$cfg"
  mkdir -p "$OUT/rtp282" && echo stale > "$OUT/rtp282/certified-rules.json"
  "$bin" certify --quick --no-progress --table-config "$cfg" --out "$OUT/rtp282" > "$OUT/rtp282.log" 2>&1 || rc=$?
  grep -m1 'tables.default.paytable' "$OUT/rtp282.log" | sed 's/^/   /'
  [ "$rc" -ne 0 ] && [ ! -e "$OUT/rtp282/certified-rules.json" ]
}
step "certify on an RTP-2.82 table without allow_rtp_over_1: exit non-zero, no certified-rules.json" rtp_over_1_refused

for name in default tables; do
  step "$name: report.html in Chromium: no console errors, a chart, prints" node scripts/certify/check-html.mjs "$OUT/$name/report.html"
done

# Every table's exact figures against `reddog odds --json`, run with the command the report
# names, in the report's directory (which holds the paytable files): the whole odds object
# must be identical, and so must every RTP fraction of it.
odds_agree() { # report dir
  python3 - "$1" "$bin" <<'PY'
import json, shlex, subprocess, sys
out, binary = sys.argv[1], sys.argv[2]
report = json.load(open(f"{out}/report.json", encoding="utf-8"))
bad = 0
for t in report["tables"]:
    args = shlex.split(t["reproduce"]["odds"])
    assert args[0] == "reddog", args
    odds = json.loads(subprocess.run([binary] + args[1:], cwd=out, check=True, capture_output=True, text=True).stdout)
    mine = t["game"]["odds"]
    fractions = [(d, side, mine["rtp_range"][d][side]["fraction"], odds["rtp_range"][d][side]["fraction"])
                 for d in ("per_initial_bet", "per_total_wagered") for side in ("worst", "best")]
    fractions += [(p, "ev", mine["policies"][p]["ev"], odds["policies"][p]["ev"]) for p in odds["policies"]]
    # The report's own RTP fractions (optimal rule) against the odds' best per-initial-bet RTP.
    fractions.append(("optimal", "rtp", t["game"]["rules"][0]["rtp"]["fraction"], odds["rtp_range"]["per_initial_bet"]["best"]["fraction"]))
    differ = [f for f in fractions if f[2] != f[3]]
    same = mine == odds
    print(f"   {t['id']}: {len(fractions)} RTP/EV fractions compared, {len(differ)} differ; whole odds object identical: {same}")
    bad += bool(differ) or not same
sys.exit(1 if bad else 0)
PY
}
for name in default tables; do
  step "$name: report.json's RTP fractions equal reddog odds --json's" odds_agree "$OUT/$name"
done

digest_agrees() { # report dir
  local want got
  want=$(sha256sum "$bin" | cut -d' ' -f1)
  got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["identity"]["binary_sha256"])' "$1/report.json")
  echo "   sha256sum $want, report $got"
  [ "$want" = "$got" ]
}
for name in default tables; do
  step "$name: report.json's binary digest equals sha256sum of the binary" digest_agrees "$OUT/$name"
done

lock_agrees() {
  local want got
  want=$(sha256sum Cargo.lock | cut -d' ' -f1)
  got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["identity"]["cargo_lock_sha256"])' "$OUT/default/report.json")
  [ "$want" = "$got" ]
}
step "report.json's Cargo.lock digest equals sha256sum Cargo.lock" lock_agrees

# The simulated figures against `reddog simulate --json`, run with the command the report names.
simulate_agrees() {
  python3 - "$OUT/default" "$bin" <<'PY'
import json, shlex, subprocess, sys
out, binary = sys.argv[1], sys.argv[2]
t = json.load(open(f"{out}/report.json", encoding="utf-8"))["tables"][0]
args = shlex.split(t["reproduce"]["simulate"])
sim = json.loads(subprocess.run([binary] + args[1:] + ["--no-progress"], cwd=out, check=True, capture_output=True, text=True).stdout)
c = {x["figure"]: x for x in t["agreement"]["comparisons"]}
pairs = [(c["rtp (per initial bet)"]["simulated"], sim["rtp"]), (c["rtp (per initial bet)"]["ci_low"], sim["ci_low"]),
         (c["rtp (per initial bet)"]["ci_high"], sim["ci_high"]),
         (c["rtp per total wagered"]["simulated"], sim["rtp_per_total_wagered"]["value"]),
         (t["agreement"]["sums"]["returned"], sim["totals"]["returned"])]
print(f"   {len(pairs)} figures: " + ", ".join(f"{a} vs {b}" for a, b in pairs))
sys.exit(0 if all(a == b for a, b in pairs) else 1)
PY
}
step "default: simulated figures equal reddog simulate --json's to the last digit" simulate_agrees

dieharder_ran() {
  python3 - "$OUT/default/report.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["randomness"]["dieharder"]
print(f"   {d['status']}: {d['passed']} passed, {d['weak']} weak, {d['failed']} failed")
sys.exit(0 if d["status"] == "ran" and d["rows"] and d["failed"] == 0 else 1)
PY
}
step "default: dieharder ran on the raw deal stream with no FAILED" dieharder_ran

sbom_ok() {
  python3 - "$OUT/default/sbom.cdx.json" "$OUT/default/report.json" <<'PY'
import json, sys
bom, report = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert bom["bomFormat"] == "CycloneDX" and bom["specVersion"] == "1.5"
assert bom["metadata"]["component"]["hashes"][0]["content"] == report["identity"]["binary_sha256"]
names = {c["name"] for c in bom["components"]}
assert {"tonic", "sha2", "rand_chacha"} <= names, names
print(f"   {len(bom['components'])} components")
PY
}
step "sbom.cdx.json is CycloneDX 1.5 naming the binary's digest and its dependencies" sbom_ok

# certified-rules.json pins the served tables: the certified configuration starts, one
# changed paytable entry is refused at start-up naming the table and both digests.
serves_certified() { # table config, certified-rules.json; exit 0 once "listening on" is printed
  local log="$OUT/serve-certified.log" ring="$OUT/ring.json" pid n
  (umask 077; "$bin" keygen > "$ring")
  REDDOG_KEY_RING_FILE="$ring" "$bin" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --audit-log /dev/null --table-config "$1" --certified-rules "$2" > "$log" 2>&1 &
  pid=$!
  for n in $(seq 100); do
    if grep -q "^listening on" "$log"; then kill -TERM "$pid"; wait "$pid" || true; return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  cat "$log"; return 1
}
refuses_changed() {
  local changed="$OUT/tables-changed.json" log="$OUT/serve-refused.log" ring="$OUT/ring.json"
  python3 - deploy/examples/tables.json "$changed" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
first = sorted(t["tables"])[0]
p = t["tables"][first].setdefault("paytable", {"spread": [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], "three_of_a_kind": 11})
p["spread"][2] = 1 if p["spread"][2] != 1 else 2
json.dump(t, open(sys.argv[2], "w"))
print(f"   changed spread 3 of table {first!r}")
PY
  if REDDOG_KEY_RING_FILE="$ring" timeout 30 "$bin" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
       --audit-log /dev/null --table-config "$changed" --certified-rules "$OUT/tables/certified-rules.json" \
       > "$log" 2>&1; then
    echo "   started"; return 1
  fi
  grep -o 'table "[^"]*": rules digest [0-9a-f]* is not certified (certified: [0-9a-f]*' "$log" | head -1 | sed 's/^/   /'
  grep -q 'is not certified (certified: [0-9a-f]\{64\}' "$log"
}
step "serve --certified-rules tables/certified-rules.json on deploy/examples/tables.json: starts" \
  serves_certified deploy/examples/tables.json "$OUT/tables/certified-rules.json"
step "serve --certified-rules: one paytable entry changed: refused, naming the table and both digests" refuses_changed
refuses_other_binary() {
  local log="$OUT/serve-other-binary.log" ring="$OUT/ring.json" own theirs
  own=$(sha256sum "$bin" | cut -d' ' -f1)
  theirs=$(python3 -c 'import json; print(json.load(open("deploy/base/certified-rules.json"))["binary_sha256"])')
  if REDDOG_KEY_RING_FILE="$ring" timeout 30 "$bin" serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
       --audit-log /dev/null --table-config deploy/base/table.json --certified-rules deploy/base/certified-rules.json \
       > "$log" 2>&1; then
    echo "   started"; return 1
  fi
  echo "   this binary $own, the file's $theirs"
  [ "$own" != "$theirs" ] && grep -q "$own" "$log" && grep -q "$theirs" "$log"
}
step "serve --certified-rules deploy/base/certified-rules.json (another build's): refused, naming both binary digests" refuses_other_binary

# The SBOM is the binary's real dependency graph: as many packages as `cargo tree` gives for
# the engine on this target — at least its normal dependencies, at most with its build ones —
# each with a licence; no dev-dependency, no other platform's crate.
deps_are_the_graph() {
  local target normal all
  target=$(rustc -vV | sed -n 's/^host: //p')
  count() { cargo tree -p reddog -e "$1" --target "$target" --prefix none --locked -f '{p}' | sed 's/ (\*)$//' | sort -u | wc -l; }
  normal=$(count normal)
  all=$(count normal,build)
  python3 - "$OUT/default/report.json" "$normal" "$all" <<'PY'
import json, sys
deps = json.load(open(sys.argv[1]))["identity"]["dependencies"]
normal, everything = int(sys.argv[2]), int(sys.argv[3])
names = {d["name"] for d in deps}
print(f"   report.json: {len(deps)} dependencies ({sum(d['kind'] == 'normal' for d in deps)} normal); "
      f"cargo tree -e normal: {normal} lines, -e normal,build: {everything} (each with the root)")
assert normal <= len(deps) <= everything, "not the binary's graph"
assert sum(d["kind"] == "normal" for d in deps) == normal - 1, "normal dependencies != cargo tree -e normal"
assert all(d["licence"] for d in deps if d["source"] == "registry"), "a package without a licence"
assert not names & {"proptest", "criterion", "rcgen", "windows-sys", "reddog-demo"}, names
PY
}
step "report.json lists the binary's dependency graph (cargo tree), each with a licence" deps_are_the_graph

vectors_run() {
  python3 - "$OUT/default/report.json" <<'PY'
import json, sys
v = {x["file"]: x for x in json.load(open(sys.argv[1]))["protocol"]["vectors"]}
for f in ("deal-v1", "reveal-v2", "reveal-v3", "reveal-negative", "receipt-v1"):
    x = v[f"tests/vectors/{f}.json"]
    print(f"   {f}: {x['passed']} of {x['cases']}")
    assert x["cases"] > 0 and x["passed"] == x["cases"]
PY
}
step "certify ran every vector file: deal, reveal v2 and v3, negative, receipts" vectors_run

echo "certify: $passed passed, $failed failed ($(( $(date +%s) - T0 )) s)"
[ "$failed" -eq 0 ]
