#!/usr/bin/env bash
# Fairness: the independent Python verifier (standard library only, plus the `cryptography`
# package for signed receipts, installed into .tools/venv if absent) checks every test vector
# file, runs its own unit tests, checks that the negative vectors are what their generator
# writes, and cross-checks the binary's `reddog verify` against it on the shared reveal
# vectors, the signed-receipt vectors and a fresh reveal. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }
TOOLS="$PWD/.tools"
mkdir -p "$TOOLS"
source scripts/ci.d/tools/pip.sh && pip_tools "$TOOLS/venv" cryptography
PY="$TOOLS/venv/bin/python"

passed=0
failed=0
step() { # name, command...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}

step "python verifier: every vector file in tests/vectors/" "$PY" verify/verify.py --vectors tests/vectors/
step "python verifier: unit tests" "$PY" -m unittest discover -s verify -q
step "negative vectors are what verify/make_negative_vectors.py writes" python3 verify/make_negative_vectors.py --check

cargo build --locked --quiet --bin reddog
bin=target/debug/reddog
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Both verifiers on every shared reveal vector: each must give the vector's verdict (exit status).
step "reddog verify and verify.py agree with every reveal vector" \
  "$PY" verify/cross_check.py tests/vectors/ "$bin verify" "$PY verify/verify.py"
step "reddog verify and verify.py agree on 2000 random variations of genuine reveals" \
  python3 verify/differential.py "$bin verify" 2000 1

# A fresh version-1 reveal (`reddog commit --reveal` lists the cards the hand dealt: 2 or 3).
"$bin" commit --reveal --client-seed "ci grüße $RANDOM" --nonce "$RANDOM" --decks 6 > "$tmp/reveal.json"
step "reddog verify accepts a fresh reveal" "$bin" verify "$tmp/reveal.json"
step "python verifier accepts the same reveal" python3 verify/verify.py "$tmp/reveal.json"
step "both read stdin" sh -c "'$bin' verify < '$tmp/reveal.json' && python3 verify/verify.py < '$tmp/reveal.json'"

python3 - "$tmp/reveal.json" > "$tmp/bad.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
r["cards"][0], r["cards"][1] = r["cards"][1], r["cards"][0]
if r["cards"][0] == r["cards"][1]:
    r["nonce"] = (r["nonce"] + 1) % 2**64
json.dump(r, sys.stdout)
PY
step "reddog verify rejects a tampered reveal" sh -c "! '$bin' verify '$tmp/bad.json' >/dev/null 2>&1"
step "python verifier rejects a tampered reveal" sh -c "! python3 verify/verify.py '$tmp/bad.json' >/dev/null"

echo "fairness: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
