#!/usr/bin/env bash
# Criterion SMOKE run, not a measurement: every benchmark (benches/round.rs, handlers.rs,
# audit.rs) is built and run at a tiny sample size so the benches cannot rot. It uses the
# `dev` profile, whose dependencies `cargo test` has already built, so it adds well under
# two minutes; the figures it prints mean nothing (unoptimised code, tiny samples). Real
# measurements: docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
cargo bench --locked --profile dev --bench round --bench handlers --bench audit -- \
  --sample-size 10 --warm-up-time 0.1 --measurement-time 0.2 --nresamples 1000 --noplot
echo "bench smoke run: $((SECONDS - start)) s"
