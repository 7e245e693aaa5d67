#!/usr/bin/env bash
# The audit checks twice: `reddog audit-log --json` and docs/audit/checks.sql in DuckDB (the
# `duckdb` wheel, installed into .tools/) must report the same findings, finding by finding
# (kind, table, round, commitment, replica, run, seq), on generated audit trails: a clean
# three-replica log with retries; every misuse pattern (also equal to what the generator
# planted); a clean log with one replica's clock shifted by +50 ms and by -50 ms (no findings);
# a truncated file, a file without its first 100 records, an edited record, two records
# swapped, the same file given twice.
# Closes with "audit-sql: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS="$ROOT/.tools"

command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }
source scripts/ci.d/tools/pip.sh && pip_tools "$TOOLS/duckdb-venv" duckdb
PY="$TOOLS/duckdb-venv/bin/python"

cargo build --locked --quiet --bin reddog --bin audit-gen
BIN="$ROOT/target/debug/reddog"
GEN="$ROOT/target/debug/audit-gen"   # the generator (tools/), not in the shipped binary
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
result() { # name, status
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1"; fi
}

# compare NAME EXPECT FILES... : both implementations on FILES, with --open-rounds. EXPECT is
# "clean" (no finding, exit 0), "findings" (at least one, exit 1), or a generator's expected
# findings file (the findings must be exactly those).
compare() {
  local name=$1 expect=$2; shift 2
  local rc=0
  "$BIN" audit-log --json --open-rounds "$@" > "$tmp/rust.json" || rc=$?
  "$PY" docs/audit/duckdb_checks.py --json --open-rounds "$@" > "$tmp/sql.json" || true
  "$PY" - "$tmp/rust.json" "$tmp/sql.json" "$expect" "$rc" <<'PY'
import collections, json, sys
rust, sql, expect, rc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4])
KEYS = ("kind", "table_id", "round_id", "commitment", "replica", "run", "seq")
key = lambda f: tuple(f.get(k) for k in KEYS)
r = collections.Counter(key(f) for f in rust["findings"])
s = collections.Counter(key(f) for f in sql["findings"])
ok = True
if r != s:
    ok = False
    for k in (r - s): print("  only audit-log:", k)
    for k in (s - r): print("  only SQL:      ", k)
if rust["records"] != sql["records"]:
    ok = False
    print("  records read: audit-log", rust["records"], "SQL", sql["records"])
if expect == "clean":
    ok = ok and rc == 0 and not r
elif expect == "findings":
    ok = ok and rc == 1 and bool(r)
else:
    planted = collections.Counter(
        (e["kind"], e["table_id"], e["round_id"], e["commitment"]) for e in json.load(open(expect))["expected"])
    found = collections.Counter(k[:4] for k in r.elements())
    if planted != found:
        ok = False
        for k in (planted - found): print("  planted, not found:", k)
        for k in (found - planted): print("  found, not planted:", k)
    ok = ok and rc == 1
print(f"  {sum(r.values())} finding(s) from audit-log, {sum(s.values())} from SQL, exit {rc}")
sys.exit(0 if ok else 1)
PY
}

gen() { # DIR ARGS... : a generated trail, one file per replica
  local dir=$1; shift
  "$GEN" --out "$dir" "$@" 2>/dev/null
}

gen "$tmp/clean" --rounds 1000 --replicas 3 --seed 11
st=0; compare "clean three-replica log with retries: no finding" clean "$tmp"/clean/*.jsonl || st=$?
result "clean three-replica log with retries: no finding" $st

gen "$tmp/misuse" --rounds 1000 --replicas 3 --misuse 2 --seed 12 --expected "$tmp/misuse/expected.json"
st=0; compare "every misuse pattern, exactly as planted" "$tmp/misuse/expected.json" "$tmp"/misuse/*.jsonl || st=$?
result "every misuse pattern, exactly as planted" $st

for skew in 50 -50; do
  gen "$tmp/skew$skew" --rounds 1000 --replicas 2 --seed 13 --skew "1=$skew"
  st=0; compare "replica 1's clock shifted by $skew ms: no finding" clean "$tmp"/skew$skew/*.jsonl || st=$?
  result "replica 1's clock shifted by $skew ms: no finding" $st
done

# Tampering with a clean trail: each must be reported, the same way by both.
gen "$tmp/t" --rounds 500 --replicas 2 --seed 14
f="$tmp/t/replica-0.jsonl"
sed '200,230d' "$f" > "$tmp/truncated.jsonl"
st=0; compare "a truncated file (middle lines removed)" findings "$tmp/truncated.jsonl" "$tmp/t/replica-1.jsonl" || st=$?
result "a truncated file (middle lines removed)" $st
sed '1,100d' "$f" > "$tmp/headless.jsonl"
st=0; compare "a file without its first 100 records" findings "$tmp/headless.jsonl" "$tmp/t/replica-1.jsonl" || st=$?
result "a file without its first 100 records" $st
sed '300s/"at":"2026/"at":"2027/' "$f" > "$tmp/edited.jsonl"
if cmp -s "$f" "$tmp/edited.jsonl"; then result "an edited record (the edit applied)" 1; fi
st=0; compare "an edited record" findings "$tmp/edited.jsonl" "$tmp/t/replica-1.jsonl" || st=$?
result "an edited record" $st
awk 'NR==100{held=$0; next} NR==103{print; print held; next} {print}' "$f" > "$tmp/swapped.jsonl"
st=0; compare "a record moved down the file" findings "$tmp/swapped.jsonl" "$tmp/t/replica-1.jsonl" || st=$?
result "a record moved down the file" $st
st=0; compare "the same file given twice: no finding" clean "$f" "$f" "$tmp/t/replica-1.jsonl" || st=$?
result "the same file given twice: no finding" $st

echo "audit-sql: $passed passed, $failed failed"
[ "$failed" = 0 ]
