#!/usr/bin/env python3
"""Checks the Prometheus alert rules in deploy/monitoring/.

--syntax-only: every `expr` parses as PromQL (Prometheus' lezer grammar, via node).
Otherwise also: every reddog_* metric an expression names is exported by the real binary:
scraped from its /metrics by probe_binary.py, or (for a series registered only at its first
use) recorded in src/ by a registry's counter/gauge/histogram("name", ..) call. The
_bucket/_sum/_count suffixes of histograms and summaries are allowed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


def exprs_of(path: str) -> list[tuple[str, str]]:
    out = []
    for d in yaml.safe_load_all(open(path)):
        if not d:
            continue
        for g in d["spec"]["groups"]:
            for r in g["rules"]:
                out.append((r.get("alert") or r.get("record"), r["expr"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", required=True)
    ap.add_argument("--probe", help="JSON written by probe_binary.py")
    ap.add_argument("--syntax-only", action="store_true")
    a = ap.parse_args()
    rules = exprs_of(a.rules)
    failed = 0
    r = subprocess.run(["node", str(HERE / "promql_parse.cjs")],
                       input=json.dumps([e for _, e in rules]), capture_output=True, text=True,
                       env={**os.environ, "PROMQL_DIR": os.environ.get("PROMQL_DIR", "")})
    results = r.stdout.splitlines()
    if len(results) != len(rules):
        print(f"PromQL parser did not run: {r.stderr.strip()[-400:]}")
        return 1
    for (name, _), res in zip(rules, results):
        if res != "ok":
            failed += 1
            print(f"  {name}: PromQL {res}")
    print(f"PromQL: {len(rules) - failed} of {len(rules)} expressions parse")
    if a.syntax_only:
        return 1 if failed else 0
    scraped = set(json.loads(Path(a.probe).read_text())["metric_names"])
    recorded = set()
    for src in (HERE.parents[1] / "src").rglob("*.rs"):
        recorded |= set(re.findall(r'\b(?:counter|gauge|histogram|from_static_name)\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"',
                                   src.read_text()))
    exported = scraped | recorded
    bases = set()
    for n in exported:
        bases.add(n)
        bases.add(re.sub(r"_total$", "", n))
    for name, expr in rules:
        no_strings = re.sub(r'"[^"]*"', '""', expr)
        for m in sorted(set(re.findall(r"\breddog_[a-zA-Z0-9_:]*", no_strings))):
            base = re.sub(r"_(bucket|sum|count)$", "", m)
            if m in bases or base in bases or re.sub(r"_total$", "", m) in bases:
                continue
            failed += 1
            print(f"  {name}: metric {m} is not exported by the binary")
    print(f"metric names: {'all exported' if not failed else f'{failed} problems'}"
          f" ({len(scraped)} families scraped, {len(recorded)} recorded in src/)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
