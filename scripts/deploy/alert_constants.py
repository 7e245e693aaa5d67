#!/usr/bin/env python3
"""Exact constants for the alert rules in deploy/monitoring/prometheus-rule.yaml, computed
from the rules (docs/OPERATIONS.md, "Metrics and alerts"):

- P(pair) and P(win | non-consecutive) per deck count: independent of player decisions;
- the stake-weighted RTP (returned / staked, what the metrics measure) for "never raise" and
  "raise at spread >= 7", and the standard deviation of one seat's
  (returned - RTP * staked) / mean stake, for the default paytable.

  python3 scripts/deploy/alert_constants.py [--decks 1 2 4 6 8]
"""

import argparse
import math
from fractions import Fraction as F

RANKS = range(2, 15)
SPREAD_PAYS = [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1]   # spread 1..11, "to 1"
THREE_OF_A_KIND = 11


def outcomes(decks: int, raise_min: int):
    """(probability, stake, returned) for a bet of 1, raising at spread >= raise_min."""
    n, c = 52 * decks, 4 * decks
    tot = n * (n - 1)
    for a in RANKS:
        for b in RANKS:
            p = F(c * (c - (a == b)), tot)
            if a == b:
                p3 = F(c - 2, n - 2)
                yield p * p3, 1, 1 + THREE_OF_A_KIND
                yield p * (1 - p3), 1, 1
            elif abs(a - b) == 1:
                yield p, 1, 1
            else:
                s = abs(a - b) - 1
                stake = 2 if s >= raise_min else 1
                pw = F(s * c, n - 2)
                yield p * pw, stake, stake * (1 + SPREAD_PAYS[s - 1])
                yield p * (1 - pw), stake, 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", type=int, nargs="+", default=[1, 2, 4, 6, 8])
    a = ap.parse_args()
    print("| decks | P(pair) | P(win \\| non-consecutive) | RTP never raise | RTP raise at >= 7 | sd (never / raise) |")
    print("|---|---|---|---|---|---|")
    for d in a.decks:
        n, c = 52 * d, 4 * d
        tot = n * (n - 1)
        p_pair = F(13 * c * (c - 1), tot)
        p_cons = F(2 * 12 * c * c, tot)
        win = sum(F(c * c, tot) * F((abs(x - y) - 1) * c, n - 2)
                  for x in RANKS for y in RANKS if abs(x - y) > 1)
        p_win = win / (1 - p_pair - p_cons)
        row = []
        sds = []
        for raise_min in (99, 7):
            o = list(outcomes(d, raise_min))
            es = sum(p * s for p, s, _ in o)
            rtp = sum(p * r for p, _, r in o) / es
            var = sum(p * (float(r) - float(rtp) * s) ** 2 for p, s, r in o)
            row.append(f"{float(rtp):.4f}")
            sds.append(f"{math.sqrt(var) / float(es):.2f}")
        print(f"| {d} | {float(p_pair):.6f} | {float(p_win):.6f} | {row[0]} | {row[1]} | {' / '.join(sds)} |")


if __name__ == "__main__":
    main()
