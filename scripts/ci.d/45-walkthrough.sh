#!/usr/bin/env bash
# docs/API.md's walkthrough, executed: every fenced block opened with "```sh walkthrough" is
# extracted in order and run as one bash script (set -euo pipefail) against the release
# binary, from the repository root as a reader runs it, with `reddog` and `buf` on PATH and
# REDDOG_LISTEN set to a free 127.0.0.1 port. It runs TWICE in a row (fresh round ids and a
# scratch directory per run, so the second run must pass as well), then `git status
# --porcelain` must be as before (empty on a fresh clone): the walkthrough leaves nothing. The blocks
# check their own answers (`jq -e`, exit statuses), play a fair round of any hand class and
# sandbox rounds of a spread, a consecutive hand, a pair and three of a kind, and end with
# `reddog audit-log` over the engine's audit trail (no fork, no peek-then-play, no re-deal).
# Any drift between the doc and the binary fails a block. Installs `buf` the way
# 30-service.sh does. Closes with "walkthrough: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS="$ROOT/.tools"
mkdir -p "$TOOLS"
DOC=${REDDOG_WALKTHROUGH_DOC:-docs/API.md}   # another file: to see a drifted doc fail

need_apt=()
command -v npm >/dev/null || need_apt+=(npm)
command -v jq >/dev/null || need_apt+=(jq)
command -v python3 >/dev/null || need_apt+=(python3)
if ((${#need_apt[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
source scripts/ci.d/tools/npm.sh && npm_tools   # buf, pinned: scripts/ci.d/tools/package-lock.json

BIN_DIR=${REDDOG_WALKTHROUGH_BIN_DIR:-}
if [ -z "$BIN_DIR" ]; then
  cargo build --release --locked --quiet --bin reddog
  BIN_DIR="$ROOT/target/release"
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/tmp"   # the walkthrough's own scratch directories (mktemp -d) go here

# Extract the blocks, each announced by a marker line naming its line in the doc. The engine
# the walkthrough starts (its PID in ENGINE) is stopped when the script ends, however it ends.
echo 'trap '"'"'if [ -n "${ENGINE:-}" ]; then kill "$ENGINE" 2>/dev/null || true; fi'"'"' EXIT' > "$WORK/walkthrough.sh"
awk -v doc="$DOC" '
  /^```sh walkthrough[[:space:]]*$/ { inside = 1; n++; printf "echo \"@@ block %d (%s:%d)\"\n", n, doc, NR; next }
  /^```/ && inside { inside = 0; next }
  inside { print }
' "$DOC" >> "$WORK/walkthrough.sh"
BLOCKS=$(grep -c '^echo "@@ block' "$WORK/walkthrough.sh" || true)
if [ "$BLOCKS" -eq 0 ]; then
  echo "no \`\`\`sh walkthrough blocks in $DOC"
  echo "walkthrough: 0 passed, 1 failed"
  exit 1
fi

PASS=0; FAIL=0
BEFORE=$(git status --porcelain 2>/dev/null || true)
for run in 1 2; do
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  echo "-- run $run: $BLOCKS blocks of $DOC against $BIN_DIR/reddog on 127.0.0.1:$PORT"
  set +e
  (
    export PATH="$BIN_DIR:$NPM_TOOLS/node_modules/.bin:$PATH" TMPDIR="$WORK/tmp"
    export REDDOG_LISTEN="127.0.0.1:$PORT" REDDOG_METRICS_LISTEN="127.0.0.1:0"
    unset REDDOG_KEY_RING REDDOG_KEY_RING_FILE REDDOG_TABLE_CONFIG
    bash -euo pipefail "$WORK/walkthrough.sh"
  ) > "$WORK/walkthrough.log" 2>&1
  STATUS=$?
  set -e
  REACHED=$(grep -c '^@@ block' "$WORK/walkthrough.log" || true)
  if [ "$STATUS" -eq 0 ] && [ "$REACHED" -eq "$BLOCKS" ]; then
    sed 's/^/  /' "$WORK/walkthrough.log" | tail -n 12
    echo "  ok    run $run: $BLOCKS blocks"
    PASS=$((PASS + BLOCKS))
  else
    sed 's/^/  /' "$WORK/walkthrough.log" | tail -n 60
    for log in "$WORK"/tmp/*/engine.log; do
      [ -f "$log" ] && { echo "  -- engine.log (last lines)"; tail -n 5 "$log" | cut -c1-300; }
    done
    echo "  FAIL  run $run: $(grep '^@@ block' "$WORK/walkthrough.log" | tail -n 1) exited with status $STATUS"
    PASS=$((PASS + (REACHED > 0 ? REACHED - 1 : 0))); FAIL=$((FAIL + BLOCKS - REACHED + 1))
  fi
  rm -rf "${WORK:?}"/tmp/*
done
AFTER=$(git status --porcelain 2>/dev/null || true)
if [ "$AFTER" = "$BEFORE" ]; then
  PASS=$((PASS + 1)); echo "  ok    git status --porcelain unchanged after two runs${AFTER:+ (the tree had local changes before)}"
else
  FAIL=$((FAIL + 1)); echo "  FAIL  the walkthrough left files in the repository:"
  diff <(echo "$BEFORE") <(echo "$AFTER") | sed -n 's/^> /    /p'
fi
echo "walkthrough: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
