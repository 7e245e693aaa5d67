#!/usr/bin/env python3
"""Validates the Grafana dashboard deploy/monitoring/reddog-dashboard.json:

1. structure: uid, title, schemaVersion, a `datasource` variable, panels with unique ids,
   a known type, a gridPos inside the 24-column grid, and at least one target each; every
   target has a unique refId and an expr;
2. every expr parses as PromQL (Prometheus' lezer grammar, scripts/deploy/promql_parse.cjs)
   after Grafana's variables are replaced ($__rate_interval -> 5m, $table -> .*);
3. every reddog_* metric an expr names is exported by the real binary (probe_binary.py's
   scrape, or a registry's counter/gauge/histogram call in src/), and every reddog:* series is
   recorded by a rule in the PrometheusRule;
4. the topics the issues ask for are there: calls, errors, latency, rounds, observed RTP,
   deal class frequencies; per pod, the rules digest and certified state, and the build;
   seals per key, audit refusals, readiness.

  check_dashboard.py --dashboard FILE --rules RULES [--probe PROBE.json]
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
PANEL_TYPES = {"timeseries", "table", "stat", "gauge", "bargauge", "heatmap", "text"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dashboard", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--probe", help="JSON written by probe_binary.py")
    a = ap.parse_args()
    problems: list[str] = []
    d = json.loads(Path(a.dashboard).read_text())
    for key in ("uid", "title", "schemaVersion", "panels"):
        if not d.get(key):
            problems.append(f"dashboard: missing {key}")
    variables = {v.get("name") for v in d.get("templating", {}).get("list", [])}
    if "datasource" not in variables:
        problems.append("dashboard: no `datasource` variable")
    ids: set = set()
    exprs: list[tuple[str, str]] = []
    for p in d.get("panels", []):
        t = p.get("title", "?")
        if p.get("id") in ids or not isinstance(p.get("id"), int):
            problems.append(f"panel {t!r}: id {p.get('id')!r} missing or repeated")
        ids.add(p.get("id"))
        if p.get("type") not in PANEL_TYPES:
            problems.append(f"panel {t!r}: unknown type {p.get('type')!r}")
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g.get("x", 0) + g.get("w", 0) > 24:
            problems.append(f"panel {t!r}: bad gridPos {g}")
        targets = p.get("targets", [])
        if not targets:
            problems.append(f"panel {t!r}: no targets")
        refs = [x.get("refId") for x in targets]
        if len(set(refs)) != len(refs) or None in refs:
            problems.append(f"panel {t!r}: refIds {refs}")
        for x in targets:
            if not x.get("expr"):
                problems.append(f"panel {t!r}: target {x.get('refId')} has no expr")
            else:
                exprs.append((t, x["expr"]))
    # 2. PromQL
    def grafana_free(e: str) -> str:
        return e.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$table", ".*")
    r = subprocess.run(["node", str(HERE / "promql_parse.cjs")], input=json.dumps([grafana_free(e) for _, e in exprs]),
                       capture_output=True, text=True,
                       env={**os.environ, "PROMQL_DIR": os.environ.get("PROMQL_DIR", "")})
    results = r.stdout.splitlines()
    if len(results) != len(exprs):
        problems.append(f"PromQL parser did not run: {r.stderr.strip()[-300:]}")
    else:
        for (t, e), res in zip(exprs, results):
            if res != "ok":
                problems.append(f"panel {t!r}: PromQL {res}")
    # 3. metric names
    recorded_rules = set()
    for doc in yaml.safe_load_all(Path(a.rules).read_text()):
        for g in (doc or {}).get("spec", {}).get("groups", []):
            recorded_rules |= {x["record"] for x in g["rules"] if "record" in x}
    exported = set()
    if a.probe:
        exported |= set(json.loads(Path(a.probe).read_text())["metric_names"])
    for src in (HERE.parents[1] / "src").rglob("*.rs"):
        exported |= set(re.findall(r'\b(?:counter|gauge|histogram|from_static_name)\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"',
                                   src.read_text()))
    used = set()
    for t, e in exprs:
        e2 = re.sub(r'"[^"]*"', '""', e)
        for m in set(re.findall(r"\breddog[_:][a-zA-Z0-9_:]*", e2)):
            used.add(m)
            if ":" in m:
                if m not in recorded_rules:
                    problems.append(f"panel {t!r}: {m} is not recorded by any rule")
            elif not ({m, re.sub(r"_(bucket|sum|count)$", "", m)} & exported):
                problems.append(f"panel {t!r}: metric {m} is not exported by the binary")
    # 4. topics
    text = json.dumps([e for _, e in exprs])
    for topic, needle in (("calls", "reddog_rpc_requests_total"), ("errors", 'code!='),
                          ("latency", "reddog_rpc_duration_seconds_bucket"), ("rounds", "reddog_rounds_started_total"),
                          ("observed RTP", "reddog:rtp_observed"), ("deal class frequencies", "reddog:deals"),
                          ("rules digest and certified state per pod", "max by (pod, table, rules_digest) (reddog_rules_certified"),
                          ("builds per pod", "max by (pod, version"), ("seals per key", "reddog_token_seals_total"),
                          ("audit refusals", "reddog_audit_refused_total"), ("readiness", "reddog_serving")):
        if needle not in text:
            problems.append(f"no panel shows {topic} ({needle})")
    for p in problems:
        print(f"  {p}")
    print(f"dashboard: {len(d.get('panels', []))} panels, {len(exprs)} queries, {len(used)} series names: "
          + ("valid" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
