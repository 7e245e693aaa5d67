#!/usr/bin/env bash
# Memory and time of `reddog audit-log` (release build) by log size: generated trails of N
# rounds over 4 replicas with 10 instances of every misuse pattern, checked partitioned (the
# default) and, for comparison, in memory; the findings of both must be identical. Prints a
# Markdown table. Usage: scripts/bench-audit-log.sh DIR N...   (DIR needs ~3.6 GB per 10^6 rounds, and a third as much again of temporary space)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1; shift
BIN=${BIN:-target/release/reddog}
GEN=${GEN:-target/release/audit-gen}   # cargo build --release --bin reddog --bin audit-gen
mkdir -p "$dir"
measure() { # OUT ARGS... : runs audit-log, prints "wall_s rss_mb"
  local out=$1; shift
  /usr/bin/time -v "$BIN" audit-log --json --open-rounds "$@" > "$out" 2> "$out.time" || [ $? = 1 ]
  awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=t[n]+(n>1?t[n-1]*60:0)+(n>2?t[n-2]*3600:0)}
              /Maximum resident set size/ {r=$2/1024}
              END {printf "%.1f %.0f", s, r}' "$out.time"
}
echo "| rounds | records | input | partitions | wall (partitioned) | peak RSS (partitioned) | wall (in memory) | peak RSS (in memory) | findings | identical |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for n in "$@"; do
  d="$dir/$n"
  [ -f "$d/replica-3.jsonl" ] || "$GEN" --rounds "$n" --replicas 4 --misuse 10 --seed 7 --out "$d" 2>/dev/null
  size=$(du -cb "$d"/replica-*.jsonl | tail -1 | cut -f1)
  read -r pw pr <<< "$(measure "$d/part.json" "$d"/replica-*.jsonl)"
  read -r mw mr <<< "$(measure "$d/mem.json" --in-memory "$d"/replica-*.jsonl)"
  same=$(python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); print("yes" if a["findings"]==b["findings"] else "NO")' "$d/part.json" "$d/mem.json")
  read -r records parts findings <<< "$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(a["records"], a["partitions"], a["summary"]["findings"])' "$d/part.json")"
  echo "| $n | $records | $((size / 1000000)) MB | $parts | $pw s | $pr MB | $mw s | $mr MB | $findings | $same |"
done
