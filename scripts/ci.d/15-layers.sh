#!/usr/bin/env bash
# Layers: no import loop between modules of the engine's crates, at the top level or inside one
# (scripts/check-layers.py), and the check itself fails on a loop planted in a copy; no
# function of src/service/round/api.rs (the RPC handlers) longer than 40 lines (scripts/fn-lengths.py).
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 scripts/check-layers.py --strict
# RPC handlers stay short: a function of src/service/round/api.rs over 40 lines is printed and fails.
python3 scripts/fn-lengths.py src/service/round/api.rs --max 40 | awk '$1 > 40 { print "FAIL: " $0 }'
echo "ok   no function of src/service/round/api.rs is over 40 lines"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core"
cp -r src "$tmp/src"
cp -r core/src "$tmp/core/src"
# `service` imports `error`; make `error` import `service` back.
echo 'use crate::service::error::ERROR_DOMAIN;' >>"$tmp/src/error.rs"
if python3 scripts/check-layers.py --root "$tmp" >"$tmp/out" 2>&1; then
  cat "$tmp/out"
  echo "FAIL: a planted loop error <-> service was not found" >&2
  exit 1
fi
grep -q "import loop in src (crate root): error <-> service" "$tmp/out"
echo "ok   the layer check fails on a planted loop"

# Rooms: `round` imports `rules`; make `rules` import `round` back, in a fresh copy.
rm -rf "$tmp/src" && cp -r src "$tmp/src"
echo 'use crate::service::round::api::RedDogService;' >>"$tmp/src/service/rules/tables.rs"
if python3 scripts/check-layers.py --strict --root "$tmp" >"$tmp/out" 2>&1; then
  cat "$tmp/out"
  echo "FAIL: a planted loop between service's rooms was not found" >&2
  exit 1
fi
grep -q "import loop in src (service): .*service::round.*service::rules" "$tmp/out"
echo "ok   the layer check fails on a planted loop between service's rooms"
