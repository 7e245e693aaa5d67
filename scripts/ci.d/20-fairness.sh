#!/usr/bin/env bash
# Fairness: the independent Python verifier (standard library only, plus the `cryptography`
# package for signed receipts, installed into .tools/venv if absent) checks every test vector
# file — the Ed25519 edge vectors of C2SP/CCTV and ed25519-speccheck under the strict rule
# included — runs its own unit tests, checks that the negative vectors are what their
# generator writes, and cross-checks the binary's `reddog verify` against it on the shared
# reveal vectors, the signed-receipt vectors (v1 and v2: trusted keys, key ids, leaked cards,
# sandbox rounds, small-order keys) and a fresh reveal; then names the refusals of issue 42
# one by one in both verifiers. (The browser's verifier runs the same vectors in node and in
# Chromium: scripts/ci.d/50-demo.sh.) Exits non-zero on any failure.
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

# Verifiers that cannot be talked into yes: each case below, from tests/vectors/receipt-v2.json,
# through both verifiers; each must exit 1 (not verified).
"$PY" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
doc = json.load(open("tests/vectors/receipt-v2.json", encoding="utf-8"))
cases = {c["name"]: c for c in doc["cases"]}
for name in ("settle/forged-identity-key-r-identity-s-zero", "settle/forged-order-2-key-r-identity-s-zero",
             "settle/forged-signed-by-the-platforms-key-not-in-trusted-keys",
             "settle/forged-signed-by-the-platforms-key-no-trusted-keys",
             "step/start-receipt-naming-the-face-down-card", "commit/sandbox-commit-receipt-with-a-fair-reveal"):
    c, base = cases[name], os.path.join(tmp, name.replace("/", "_"))
    open(base + ".reveal", "w", encoding="utf-8").write(c["reveal"])
    args = ["--public-key", c["public_key"]] + (["--key-id", c["key_id"]] if c["key_id"] else []) \
        + (["--signature", c["signature"]] if c["signature"] else [])
    for i, r in enumerate(c["receipts"]):
        open("%s.receipt%d" % (base, i), "w", encoding="utf-8").write(r)
        args += ["--receipt", "%s.receipt%d" % (base, i)]
    if c["trusted_keys"] is not None:
        json.dump(c["trusted_keys"], open(base + ".trusted", "w"))
        args += ["--trusted-keys", base + ".trusted"]
    args += ["--allow-untrusted"] if c["allow_untrusted"] else []
    open(base + ".args", "w").write("\n".join([base + ".reveal"] + args) + "\n")
PY
for args in "$tmp"/*.args; do
  name=$(basename "$args" .args)
  mapfile -t a < "$args"
  step "reddog verify refuses $name (exit 1)" sh -c '"$@" >/dev/null 2>&1; [ $? -eq 1 ]' _ "$bin" verify "${a[@]}"
  step "verify.py refuses $name (exit 1)" sh -c '"$@" >/dev/null 2>&1; [ $? -eq 1 ]' _ "$PY" verify/verify.py "${a[@]}"
done

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
