#!/usr/bin/env bash
# Layers: no import loop between modules of the engine's crates, at the top level or inside one
# (scripts/check-layers.py), and the check itself fails on a loop planted in a copy; no
# non-test function of src/service/ longer than 40 lines (scripts/fn-lengths.py), and that
# check fails on a 41-line function planted in a copy.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 scripts/check-layers.py --strict

# The 40-line rule: no function of src/service/ is over 40 lines; test code (`#[cfg(test)]`
# modules, `#[test]` functions) is exempt.
service_files() { (cd "$1" && find src/service -name '*.rs' | sort); }
python3 scripts/fn-lengths.py --skip-tests --max 40 $(service_files .)
echo "ok   no non-test function of src/service/ is over 40 lines ($(service_files . | wc -l) files)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The 40-line check passes a planted 40-line function and fails on a 41-line one, in a copy.
plant() { # NAME BODY_LINES: a signature, BODY_LINES lines, a brace
  echo "fn $1() {"
  for i in $(seq 1 "$2"); do echo "    let _ = $i;"; done
  echo '}'
}
mkdir -p "$tmp/fn/src"
cp -r src/service "$tmp/fn/src/"
plant planted_40_line_function 38 >>"$tmp/fn/src/service/round/api.rs"
if ! (cd "$tmp/fn" && python3 "$OLDPWD/scripts/fn-lengths.py" --skip-tests --max 40 $(service_files .)) >"$tmp/out" 2>&1; then
  cat "$tmp/out"
  echo "FAIL: a planted 40-line function was refused" >&2
  exit 1
fi
plant planted_long_function 39 >>"$tmp/fn/src/service/round/api.rs"
if (cd "$tmp/fn" && python3 "$OLDPWD/scripts/fn-lengths.py" --skip-tests --max 40 $(service_files .)) >"$tmp/out" 2>&1; then
  cat "$tmp/out"
  echo "FAIL: a planted 41-line function in src/service/round/api.rs was not found" >&2
  exit 1
fi
grep -q "FAIL:   41 planted_long_function src/service/round/api.rs:" "$tmp/out"
echo "ok   the 40-line check passes a planted 40-line function and fails on a 41-line one"
rm -rf "$tmp/fn"
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
