#!/usr/bin/env python3
"""The exact figures the engine exports for its alerts, checked against an independent
computation (scripts/deploy/alert_constants.py, Python fractions, written from the rules):

- reddog_deal_probability{table, hand_class, spread}: P(pair), P(consecutive), P(spread s);
- reddog_third_card_probability: P(three of a kind | pair), P(between | spread s);
- reddog_rtp_bound{definition="per_total_wagered"}: the lowest and highest RTP per total
  wagered over all 2^11 raise sets;
- reddog_build_info: present, with a version, a 40-hex commit (or "unknown") and a date.

Every table in reddog_table_info is checked at its own deck count (standard paytable only;
a table with another paytable is reported and skipped for the RTP bound).

  check_exact_gauges.py --probe PROBE.json [--paytable-standard]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alert_constants import deal_classes, rtp_range  # noqa: E402

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+)$')


def samples(text: str, name: str) -> list[tuple[dict, float]]:
    out = []
    for ln in text.splitlines():
        m = LINE.match(ln)
        if m and m.group(1) == name:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            out.append((labels, float(m.group(3))))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    a = ap.parse_args()
    text = json.loads(Path(a.probe).read_text()).get("metrics_text", "")
    problems: list[str] = []
    checked = 0
    tables = {lab["table"]: int(lab["decks"]) for lab, _ in samples(text, "reddog_table_info")}
    if not tables:
        problems.append("no reddog_table_info series")
    deal = {(l["table"], l["hand_class"], l["spread"]): v for l, v in samples(text, "reddog_deal_probability")}
    third = {(l["table"], l["hand_class"], l["spread"]): v for l, v in samples(text, "reddog_third_card_probability")}
    bound = {(l["table"], l["definition"], l["bound"]): v for l, v in samples(text, "reddog_rtp_bound")}
    for table, decks in sorted(tables.items()):
        for cls, s, p, w in deal_classes(decks):
            key = (table, cls, str(s))
            for name, got, want in (("reddog_deal_probability", deal.get(key), p),
                                    ("reddog_third_card_probability", third.get(key), w)):
                if want is None:
                    if got is not None:
                        problems.append(f"{name}{key}: exported {got}, the class draws no third card")
                    continue
                checked += 1
                if got is None or abs(got - float(want)) > 1e-12:
                    problems.append(f"{name}{key}: exported {got}, exact {float(want):.15f}")
        (lo, _), (hi, _) = rtp_range(decks)
        for b, want in (("worst", lo), ("best", hi)):
            got = bound.get((table, "per_total_wagered", b))
            checked += 1
            if got is None or abs(got - float(want)) > 1e-12:
                problems.append(f"reddog_rtp_bound{{{table},per_total_wagered,{b}}}: exported {got}, "
                                f"exact {float(want):.15f} (standard paytable assumed)")
    build = samples(text, "reddog_build_info")
    checked += 1
    if len(build) != 1 or not re.fullmatch(r"[0-9a-f]{40}|unknown", build[0][0].get("git_commit", "")) \
            or not build[0][0].get("version") or not build[0][0].get("build_date"):
        problems.append(f"reddog_build_info: {build}")
    for p in problems:
        print(f"  {p}")
    print(f"exact gauges: {checked} values for {len(tables)} table(s) "
          f"({', '.join(f'{t}: {d} decks' for t, d in sorted(tables.items()))}): "
          + ("agree with the independent computation" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
