#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) with cargo-fuzz (libFuzzer, nightly toolchain)
# for a fixed time each, then prints one line per target: executions, time, corpus size.
#
#   scripts/fuzz.sh [seconds per target, default 60] [target...]
#
# Installs cargo-fuzz under .tools/cargo-fuzz if missing (a few minutes, once). New corpus
# entries go to fuzz/corpus-work/<target>/ (git-ignored); the committed seed corpus
# fuzz/corpus/<target>/ is read, never written. A crash leaves its input in
# fuzz/artifacts/<target>/ and fails the script: copy it to fuzz/regressions/<target>/ so
# `cargo test --test it fuzz_corpus::` replays it, then fix the engine.
# To refresh the committed corpus after a long run:
#   cargo +nightly fuzz cmin --fuzz-dir fuzz <target> fuzz/corpus-work/<target>
# and copy a small selection into fuzz/corpus/<target>/.
# Heavy on CPU: run it with `nice -n 19` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECS=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(tokens requests round)

export PATH="$ROOT/.tools/cargo-fuzz/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "-- installing cargo-fuzz into .tools/cargo-fuzz"
  cargo install cargo-fuzz --locked --root "$ROOT/.tools/cargo-fuzz"
fi
rustup run nightly rustc --version >/dev/null 2>&1 || { echo "the nightly toolchain is required (rustup toolchain list)"; exit 1; }

echo "-- build (nightly, sanitizer=address, debug assertions on)"
for t in "${TARGETS[@]}"; do  # `cargo fuzz build` takes one target at a time
  cargo +nightly fuzz build --fuzz-dir fuzz "$t" 2>&1 | tail -n 3
done

status=0
summary=()
for t in "${TARGETS[@]}"; do
  mkdir -p "fuzz/corpus-work/$t" "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log=$(mktemp)
  echo "-- $t: ${SECS} s"
  verdict=ok
  if ! cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus-work/$t" "fuzz/corpus/$t" -- \
      -max_total_time="$SECS" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1; then
    status=1
    verdict=FAILED
    grep -E -A2 "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -n 20 || tail -n 30 "$log"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\2/p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  files=$(find "fuzz/corpus-work/$t" "fuzz/corpus/$t" -type f | wc -l)
  bytes=$(cat "fuzz/corpus-work/$t"/* "fuzz/corpus/$t"/* 2>/dev/null | wc -c)
  # No "Done … runs in N second(s)" line when the run stopped at a crash: the time is unknown.
  summary+=("$(printf '%-9s %-6s %12s execs in %4s s, coverage %6s edges, corpus %5d inputs (%d bytes)' \
    "$t" "$verdict" "${execs:-?}" "${secs:-?}" "${cov:-?}" "$files" "$bytes")")
  rm -f "$log"
done
echo "-- summary (${SECS} s per target)"
printf '%s\n' "${summary[@]}"
exit $status
