#!/usr/bin/env bash
# The outside audit's probes of the release binary (README.md beside this file): bad requests,
# a dishonest platform and `reddog audit-log`, named tables and currencies, version-1 tokens,
# every maximum at once re-derived and re-paid independently, and the two verifiers compared on
# mutated reveals. Not part of .ci/run (about 10-20 minutes on 2 busy cores); exit 1 on any
# problem. ROUNDS (default 200) sets the every-maximum rounds.
set -euo pipefail
cd "$(dirname "$0")/../.."
V="$PWD/.tools/outside-audit/venv"
[ -x "$V/bin/python" ] || python3 -m venv "$V"
"$V/bin/python" -c 'import grpc, grpc_tools, grpc_status, cryptography' 2>/dev/null \
  || "$V/bin/pip" install --quiet grpcio grpcio-tools grpcio-status cryptography
cargo build --release --locked --bin reddog
export REDDOG="$PWD/target/release/reddog"
P="$V/bin/python"; D=scripts/outside-audit
"$P" "$D/probe_bad.py"
"$P" "$D/probe_platform.py"
"$P" "$D/probe_tables.py"
"$P" "$D/probe_currency.py"
"$P" "$D/probe_v1round.py"
OUT="$(mktemp)"
"$P" "$D/probe_max.py" "${ROUNDS:-200}" | tee "$OUT"
"$P" "$D/probe_verifiers.py" "$(sed -n 's/^work dir //p' "$OUT")" 1500
rm -f "$OUT"
echo "outside audit: every probe passed"
