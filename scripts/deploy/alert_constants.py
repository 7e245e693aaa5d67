#!/usr/bin/env python3
"""The constants of the alert rules in deploy/monitoring/prometheus-rule.yaml, computed, and a
check that the rules use them (docs/OPERATIONS.md, "Metrics and alerts").

The rules take every table-dependent figure from the engine's own gauges
(reddog_deal_probability, reddog_third_card_probability, reddog_rtp_bound). What is left are
the critical values of the tests:

- CHISQ: the chi-square quantile with 12 degrees of freedom (13 deal classes; 12 third-card
  binomials) at 1 - ALPHA. For even k the survival function is exact:
  Q(x; k) = exp(-x/2) * sum_{i < k/2} (x/2)^i / i!, solved by bisection.
- Z: the standard normal quantile at 1 - ALPHA/2 (two band edges share ALPHA).

Also prints, per deck count, the exact figures the engine exports (P(pair), P(consecutive),
the RTP range over every strategy), for comparison with `reddog odds --json`.

  python3 scripts/deploy/alert_constants.py                  # print
  python3 scripts/deploy/alert_constants.py --check RULES    # exit 1 unless RULES uses them
"""

import argparse
import math
import re
import sys
from fractions import Fraction as F

ALPHA = 1e-7          # false-alarm probability per evaluation, window and table
DF = 12
RANKS = range(2, 15)
SPREAD_PAYS = [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1]   # spread 1..11, "to 1"
THREE_OF_A_KIND = 11


def chisq_sf_even(x: float, k: int) -> float:
    h = x / 2
    return math.exp(-h) * sum(h ** i / math.factorial(i) for i in range(k // 2))


def bisect(f, lo: float, hi: float) -> float:
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) else (lo, mid)
    return hi


def chisq_critical(alpha: float = ALPHA, k: int = DF) -> float:
    return bisect(lambda x: chisq_sf_even(x, k) > alpha, 0.0, 1000.0)


def z_critical(alpha: float = ALPHA) -> float:
    return bisect(lambda z: 0.5 * math.erfc(z / math.sqrt(2)) > alpha / 2, 0.0, 40.0)


def deal_classes(decks: int):
    """[(hand_class, spread, P(class), P(third card wins | class) or None)], exact."""
    n, c = 52 * decks, 4 * decks
    tot = n * (n - 1)
    out = [("pair", 0, F(13 * c * (c - 1), tot), F(c - 2, n - 2)),
           ("consecutive", 0, F(2 * 12 * c * c, tot), None)]
    for s in range(1, 12):
        pairs = 12 - s   # rank pairs (a, a + s + 1) with both ranks in 2..14
        out.append(("non_consecutive", s, F(2 * pairs * c * c, tot), F(s * c, n - 2)))
    assert sum(p for _, _, p, _ in out) == 1
    return out


def rtp_per_total_wagered(decks: int, raise_set: frozenset) -> F:
    stake = ret = F(0)
    for cls, s, p, w in deal_classes(decks):
        if cls == "pair":
            stake += p
            ret += p * (w * (1 + THREE_OF_A_KIND) + (1 - w))
        elif cls == "consecutive":
            stake += p
            ret += p
        else:
            m = 2 if s in raise_set else 1
            stake += p * m
            ret += p * m * w * (1 + SPREAD_PAYS[s - 1])
    return ret / stake


def rtp_range(decks: int):
    sets = [frozenset(s for s in range(1, 12) if mask >> (s - 1) & 1) for mask in range(1 << 11)]
    vals = [(rtp_per_total_wagered(decks, r), r) for r in sets]
    return min(vals, key=lambda v: v[0]), max(vals, key=lambda v: v[0])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", type=int, nargs="+", default=[1, 2, 4, 6, 8])
    ap.add_argument("--check", metavar="RULES", help="check the rules file uses these constants")
    a = ap.parse_args()
    chi, z = chisq_critical(), z_critical()
    if a.check:
        # Only the fairness group: the service alerts' thresholds (1 %, 10 ms, …) are policy.
        text = open(a.check).read().split("- name: reddog.service")[0]
        text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
        chi_s, z_s = f"{chi:.2f}", f"{z:.2f}"
        exprs = re.findall(r"expr: \|?\n?((?:.|\n)*?)(?=\n\s*(?:for|labels|- record|- alert):)", text)
        joined = "\n".join(exprs)
        problems = []
        for name, want in (("chi-square critical value", chi_s), ("normal quantile", z_s)):
            if want not in joined:
                problems.append(f"{name} {want} is not used by any expression")
        numbers = set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", joined))
        stray = sorted(numbers - {chi_s, z_s})
        if stray:
            problems.append(f"unexplained constants in expressions: {stray}")
        for p in problems:
            print(f"  {p}")
        print(f"alert constants: chi2(12, 1-{ALPHA:g}) = {chi_s}, z(1-{ALPHA / 2:g}) = {z_s}: "
              + ("used, no others" if not problems else f"{len(problems)} problems"))
        return 1 if problems else 0
    print(f"chi-square, 12 degrees of freedom, 1 - {ALPHA:g}: {chi:.4f}")
    print(f"standard normal, 1 - {ALPHA / 2:g}: {z:.4f}")
    print()
    print("| decks | P(pair) | P(consecutive) | P(spread 11) | worst RTP per total wagered (raises on) "
          "| best RTP per total wagered (raises on) |")
    print("|---|---|---|---|---|---|")
    for d in a.decks:
        cl = deal_classes(d)
        (lo, lo_set), (hi, hi_set) = rtp_range(d)
        fmt = lambda r: ",".join(map(str, sorted(r))) or "none"   # noqa: E731
        print(f"| {d} | {float(cl[0][2]):.6f} | {float(cl[1][2]):.6f} | {float(cl[-1][2]):.6f} "
              f"| {float(lo):.6f} ({fmt(lo_set)}) | {float(hi):.6f} ({fmt(hi_set)}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
