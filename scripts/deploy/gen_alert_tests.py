#!/usr/bin/env python3
"""Writes the promtool unit tests of the alert rules (deploy/monitoring/tests/rules-test.yaml).

Input series are built from the exact one-deck odds (scripts/deploy/alert_constants.py):
- deal classes: counts at the exact frequencies (X2 = 0), a fair random sample (seeded
  multinomial: the ordinary noise of a fair deal, which must not fire), pairs at twice their
  frequency (must fire), and the same bias at too low a volume (must not fire);
- third card: exact frequencies (no alert), spread 7 winning 0.70 instead of 0.56 (fires);
- RTP: 0.95 and 0.8833 (every seat always raises, a legal strategy) must not fire; 1.10 and
  0.70 (outside every strategy) fire;
- payout: 200 rounds a minute of one seat of 100 playing the optimal strategy at one deck,
  dealt by a seeded shuffle; each round's exact expected return and variance (as the engine
  exports them) next to what it returned — paid by the paytable (must not fire), and the same
  deals with spread 3 paid 1:1 instead of 2:1 (fires);
- sandbox: a sandbox table (reddog_table_sandbox 1) playing requested deals through every
  hand class, the third card always as requested (every spread wins, one pair of two makes
  three of a kind) fires none of the four fairness and payout alerts; the same series at a
  table whose reddog_table_sandbox is 0 fires all four;
- service alerts: 2 % INTERNAL fires, 0.5 % does not; no target up fires RedDogDown;
- seal budget: a key sealing 160 000 tokens/s over two pods fires (2^40 within 90 days needs
  141 399/s), one at 120 000/s does not;
- certified rules: a digest served by a pod started without --certified-rules fires, one
  checked against them on every pod does not;
- audit trail: AUDIT_UNAVAILABLE refusals on a pod fire for that pod (and stop firing once
  they stop), refusals at shutdown do not; readiness toggling every 2 minutes fires the
  flapping alert, one dip does not.
- fleet: a table change and an upgrade that converge within 8 minutes fire nothing; the same
  left half done (one pod on the old rules and build for an hour) fires RedDogMixedRules and
  RedDogMixedBuilds; a pod not answering scrapes fires RedDogPodNotScraped.

  python3 scripts/deploy/gen_alert_tests.py OUT.yaml [--rules-file NAME]
CI writes it afresh and checks the committed copy is identical, then runs promtool on it.
"""

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alert_constants import deal_classes  # noqa: E402

STEP_MIN = 4                     # one input sample every 4 minutes: within the 5 min lookback
SAMPLES = 25 * 60 // STEP_MIN + 2  # series length: the 24 h windows are full at 25 h
EVAL = "25h"
TABLE = 'table="default"'


def series(name: str, labels: str, per_minute: float) -> dict:
    """A counter rising by `per_minute` a minute, sampled every STEP_MIN minutes."""
    return {"series": f"{name}{{{labels}}}", "values": f"0+{per_minute * STEP_MIN:.8g}x{SAMPLES}"}


def const(name: str, labels: str, value: float) -> dict:
    return {"series": f"{name}{{{labels}}}", "values": f"{value!r}x{SAMPLES}"}


def gauges(sandbox: int = 0) -> list:
    out = [const("reddog_table_sandbox", TABLE, sandbox)]
    for cls, s, p, w in deal_classes(1):
        lab = f'{TABLE},hand_class="{cls}",spread="{s}"'
        out.append(const("reddog_deal_probability", lab, float(p)))
        if w is not None:
            out.append(const("reddog_third_card_probability", lab, float(w)))
    for defn, worst, best in (("per_total_wagered", 0.826901270772239, 0.973282247765006),
                              ("per_initial_bet", 0.730015082956259, 0.968446455505279)):
        out.append(const("reddog_rtp_bound", f'{TABLE},definition="{defn}",bound="worst"', worst))
        out.append(const("reddog_rtp_bound", f'{TABLE},definition="{defn}",bound="best"', best))
    return out


def deals(per_minute: dict) -> list:
    return [series("reddog_rounds_started_total", f'{TABLE},hand_class="{c}",spread="{s}"', v)
            for (c, s), v in per_minute.items()]


def exact_rates(rounds_per_minute: float) -> dict:
    return {(c, s): rounds_per_minute * float(p) for c, s, p, _ in deal_classes(1)}


def multinomial(n: int, seed: int) -> dict:
    rng = random.Random(seed)
    cls = deal_classes(1)
    weights = [float(p) for _, _, p, _ in cls]
    counts = [0] * len(cls)
    for i in rng.choices(range(len(cls)), weights=weights, k=n):
        counts[i] += 1
    return {(c, s): counts[i] for i, (c, s, _, _) in enumerate(cls)}


def settled(rounds_per_minute: float, win_override: dict | None = None) -> list:
    out = []
    for c, s, p, w in deal_classes(1):
        n = rounds_per_minute * float(p)
        lab = f'{TABLE},hand_class="{c}",spread="{s}"'
        if c == "consecutive":
            out.append(series("reddog_rounds_settled_total", lab + ',rule="consecutive"', n))
            continue
        w = (win_override or {}).get(s if c != "pair" else "pair", float(w))
        win_rule, lose_rule = ("three_of_a_kind", "pair_no_match") if c == "pair" \
            else ("third_card_between", "third_card_outside")
        out.append(series("reddog_rounds_settled_total", lab + f',rule="{win_rule}"', n * w))
        out.append(series("reddog_rounds_settled_total", lab + f',rule="{lose_rule}"', n * (1 - w)))
    return out


def money(rtp: float) -> list:
    """Each minute 10 rounds staking 100: five return 200*rtp, five return 0."""
    r_hi = 200 * rtp
    return [
        series("reddog_staked_minor_units_total", TABLE, 1000),
        series("reddog_returned_minor_units_total", TABLE, 1000 * rtp),
        series("reddog_settled_round_moments_total", TABLE + ',moment="rr"', 5 * r_hi * r_hi),
        series("reddog_settled_round_moments_total", TABLE + ',moment="rs"', 100 * 5 * r_hi),
        series("reddog_settled_round_moments_total", TABLE + ',moment="ss"', 10 * 100 * 100),
    ]


PAYS = [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1]   # the standard paytable: spread 1..11, "to 1"
THREE_OF_A_KIND = 11


def payout(rounds_per_minute: int, pays: list, seed: int) -> list:
    """Cumulative series of one table's returned, exact expected return and variance, and
    rounds settled: one seat betting 100, raising on spreads 7-11 (the optimal strategy at
    one deck), one 52-card deck shuffled per round by random.Random(seed). The expectation
    and variance are the engine's (core/src/odds/expected.rs) for the standard paytable; the
    round is paid with `pays` (spread 1..11)."""
    rng = random.Random(seed)
    returned = expected = variance = rounds = 0.0
    values = {"returned": [0.0], "expected": [0.0], "variance": [0.0], "rounds": [0.0]}
    for _ in range(SAMPLES - 1):
        for _ in range(rounds_per_minute * STEP_MIN):
            a, b, c = (x // 4 + 2 for x in rng.sample(range(52), 3))
            lo, hi = min(a, b), max(a, b)
            if lo == hi:                                  # pair: push, or three of a kind
                stake, swing, p, win = 100, 100 * THREE_OF_A_KIND, 2 / 50, c == lo
                base, paid = 100, 100 * THREE_OF_A_KIND
            elif hi - lo == 1:                            # consecutive: push
                stake, swing, p, win, base, paid = 100, 0, 0.0, False, 100, 0
            else:
                s = hi - lo - 1
                stake = 200 if s >= 7 else 100
                swing, p, win = stake * (PAYS[s - 1] + 1), 4 * s / 50, lo < c < hi
                base, paid = 0, stake * (pays[s - 1] + 1)
            returned += base + (paid if win else 0)
            expected += base + swing * p
            variance += swing * swing * p * (1 - p)
            rounds += 1
        for k, v in (("returned", returned), ("expected", expected), ("variance", variance), ("rounds", rounds)):
            values[k].append(v)

    def explicit(name: str, labels: str, vs: list) -> dict:
        return {"series": f"{name}{{{labels}}}", "values": " ".join(f"{v:.10g}" for v in vs)}
    return [
        explicit("reddog_returned_minor_units_total", TABLE, values["returned"]),
        explicit("reddog_expected_returned_minor_units_total", TABLE, values["expected"]),
        explicit("reddog_returned_variance_minor_units_squared_total", TABLE, values["variance"]),
        explicit("reddog_rounds_settled_total", TABLE + ',hand_class="any",spread="0",rule="any"', values["rounds"]),
    ]


# The requested deals of examples/python/reddog_client.py --sandbox, as (class, spread, third
# card wins): spreads 1-11 with the third card between, a consecutive hand, a pair without a
# match, three of a kind.
SANDBOX_DEALS = [("spread", s, True) for s in range(1, 12)] + [
    ("consecutive", 0, False), ("pair", 0, False), ("pair", 0, True)]


def sandbox_play(cycles_per_minute: int) -> list:
    """Every series of a sandbox table whose rounds cycle through SANDBOX_DEALS: one seat of
    100 raising on every spread, paid by the paytable, the exact expected return and variance
    as the engine exports them for the first two cards dealt."""
    started, settled_by, money_ = {}, {}, dict.fromkeys(("s", "r", "e", "v", "rr", "rs", "ss"), 0.0)
    for cls, s, win in SANDBOX_DEALS:
        started[(cls, s)] = started.get((cls, s), 0) + 1
        if cls == "spread":
            stake, base, swing, p = 200, 0, 200 * (PAYS[s - 1] + 1), 4 * s / 50
            rule = "third_card_between" if win else "third_card_outside"
        elif cls == "pair":
            stake, base, swing, p = 100, 100, 100 * THREE_OF_A_KIND, 2 / 50
            rule = "three_of_a_kind" if win else "pair_no_match"
        else:
            stake, base, swing, p, rule = 100, 100, 0, 0.0, "consecutive"
        settled_by[(cls, s, rule)] = settled_by.get((cls, s, rule), 0) + 1
        r = base + (swing if win else 0)
        for k, v in (("s", stake), ("r", r), ("e", base + swing * p), ("v", swing * swing * p * (1 - p)),
                     ("rr", r * r), ("rs", r * stake), ("ss", stake * stake)):
            money_[k] += v
    n = cycles_per_minute
    out = [series("reddog_rounds_started_total", f'{TABLE},hand_class="{c}",spread="{s}"', n * k)
           for (c, s), k in started.items()]
    out += [series("reddog_rounds_settled_total", f'{TABLE},hand_class="{c}",spread="{s}",rule="{r}"', n * k)
            for (c, s, r), k in settled_by.items()]
    out += [series("reddog_staked_minor_units_total", TABLE, n * money_["s"]),
            series("reddog_returned_minor_units_total", TABLE, n * money_["r"]),
            series("reddog_expected_returned_minor_units_total", TABLE, n * money_["e"]),
            series("reddog_returned_variance_minor_units_squared_total", TABLE, n * money_["v"])]
    out += [series("reddog_settled_round_moments_total", TABLE + f',moment="{m}"', n * money_[m])
            for m in ("rr", "rs", "ss")]
    return out


def at_table(items: list, table: str) -> list:
    """The same input series under another table label."""
    return [{**i, "series": i["series"].replace(TABLE, f'table="{table}"')} for i in items]


FAIRNESS_ALERTS = ("RedDogPayoutOffExpected", "RedDogDealFrequencyDrift", "RedDogThirdCardDrift",
                   "RedDogRtpOutsideStrategyRange")


def alert(name: str, fires: bool, table: str = "default") -> dict:
    exp = []
    if fires:
        exp = [{"exp_labels": {"severity": "critical", "table": table},
                "exp_annotations": annotations(name, table)}]
    return {"eval_time": EVAL, "alertname": name, "exp_alerts": exp}


RULES = Path(__file__).resolve().parents[2] / "deploy" / "monitoring" / "prometheus-rule.yaml"


def annotations(alertname: str, table: str = "default") -> dict:
    """The alert's annotations from the rules file, templated for `table`."""
    import yaml
    for g in yaml.safe_load(RULES.read_text())["spec"]["groups"]:
        for r in g["rules"]:
            if r.get("alert") == alertname:
                return {k: " ".join(v.replace("{{ $labels.table }}", table).split())
                        for k, v in r.get("annotations", {}).items()}
    raise KeyError(alertname)


def fleet() -> list:
    """Three pods rolled from rules A and build v1 to rules B and build v2, one pod a minute
    from minute 5 (converged at 8 min), or with pod 2 left on A / v1 (never converged)."""
    old, new = "a1" * 32, "b2" * 32

    def pods(stalled: bool) -> list:
        out = []
        for p in range(3):
            at = 5 + p                                 # minute pod p is replaced
            left = stalled and p == 2
            before = "1x60" if left else f"1x{at} stale"
            after = "" if left else f"_x{at} 1x{60 - at}"
            for digest, version, values in ((old, "v1", before), (new, "v2", after)):
                if not values:
                    continue
                out.append({"series": f'reddog_table_info{{table="default",rules_digest="{digest}",'
                                      f'pod="reddog-{p}{digest[0]}"}}', "values": values})
                out.append({"series": f'reddog_build_info{{version="{version}",git_commit="c{version}",'
                                      f'pod="reddog-{p}{digest[0]}"}}', "values": values})
            out.append({"series": f'up{{job="reddog",pod="reddog-{p}"}}', "values": "1x60"})
        return out

    rules = annotations("RedDogMixedRules")
    builds = annotations("RedDogMixedBuilds")
    converged = {
        "name": "fleet: a table change and an upgrade rolled in 8 minutes fire nothing", "interval": "1m",
        "input_series": pods(False),
        "alert_rule_test": [{"eval_time": "50m", "alertname": a, "exp_alerts": []}
                            for a in ("RedDogMixedRules", "RedDogMixedBuilds", "RedDogPodNotScraped")],
    }
    stalled = {
        "name": "fleet: one pod left on the old rules and build for 50 minutes fires both", "interval": "1m",
        "input_series": pods(True) + [{"series": 'up{job="reddog",pod="reddog-9"}', "values": "0x60"}],
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "RedDogMixedRules", "exp_alerts": []},
            {"eval_time": "50m", "alertname": "RedDogMixedRules",
             "exp_alerts": [{"exp_labels": {"severity": "warning", "table": "default"}, "exp_annotations": rules}]},
            {"eval_time": "50m", "alertname": "RedDogMixedBuilds",
             "exp_alerts": [{"exp_labels": {"severity": "warning"}, "exp_annotations": builds}]},
            {"eval_time": "50m", "alertname": "RedDogPodNotScraped",
             "exp_alerts": [{"exp_labels": {"severity": "warning", "job": "reddog", "pod": "reddog-9"},
                             "exp_annotations": {k: v.replace("{{ $labels.pod }}", "reddog-9")
                                                 for k, v in annotations("RedDogPodNotScraped").items()}}]},
        ],
    }
    return [converged, stalled]


def case(name: str, input_series: list, alerts: list, promql: list | None = None) -> dict:
    t = {"name": name, "interval": f"{STEP_MIN}m", "input_series": gauges() + input_series,
         "alert_rule_test": alerts}
    if promql:
        t["promql_expr_test"] = promql
    return t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rules-file", default="reddog-rules.yml")
    a = ap.parse_args()
    import yaml

    fair = multinomial(1440 * 20, seed=11)                 # 20 deals a minute for 24 h
    biased = exact_rates(663)
    biased[("pair", 0)] *= 2
    low_volume = {k: v * 5 / 663 for k, v in biased.items()}   # 7 200 deals a day: too few
    tests = [
        case("deal classes at their exact frequencies: X2 = 0, no alert",
             deals(exact_rates(663)),
             [alert("RedDogDealFrequencyDrift", False)],
             [{"expr": "round(reddog:deals_chisq:1h, 0.001)", "eval_time": EVAL,
               "exp_samples": [{"labels": "{table=\"default\"}", "value": 0}]}]),
        case("a fair random sample (seeded multinomial, 28 800 deals a day): no alert",
             deals({k: v / 1440 for k, v in fair.items()}),
             [alert("RedDogDealFrequencyDrift", False)]),
        case("pairs twice as frequent as the exact 1/17: fires",
             deals(biased),
             [alert("RedDogDealFrequencyDrift", True)]),
        case("the same bias with 7 200 deals a day: below the 10 000 minimum, no alert",
             deals(low_volume),
             [alert("RedDogDealFrequencyDrift", False)]),
        case("third card at its exact frequencies: no alert",
             settled(663),
             [alert("RedDogThirdCardDrift", False)]),
        case("spread 7 wins 0.70 of the time instead of 14/25: fires",
             settled(663, {7: 0.70}),
             [alert("RedDogThirdCardDrift", True)]),
        case("observed RTP 0.95: inside the strategy range, no alert",
             settled(10) + money(0.95),
             [alert("RedDogRtpOutsideStrategyRange", False)]),
        case("observed RTP 0.8833 (every seat always raises): a legal strategy, no alert",
             settled(10) + money(0.8833),
             [alert("RedDogRtpOutsideStrategyRange", False)]),
        case("observed RTP 1.10: above the best strategy's 0.9733, fires",
             settled(10) + money(1.10),
             [alert("RedDogRtpOutsideStrategyRange", True)]),
        case("observed RTP 0.70: below the worst strategy's 0.8269, fires",
             settled(10) + money(0.70),
             [alert("RedDogRtpOutsideStrategyRange", True)]),
        case("payout: 288 000 rounds a day paid by the paytable: no alert",
             payout(200, PAYS, seed=5),
             [alert("RedDogPayoutOffExpected", False)]),
        case("payout: the same deals with spread 3 paid 1:1 instead of 2:1: fires",
             payout(200, PAYS[:2] + [1] + PAYS[3:], seed=5),
             [alert("RedDogPayoutOffExpected", True)]),
        case("sandbox table lab: requested deals of every class, the third card as requested, "
             "201 600 rounds a day: none of the four alerts fires",
             at_table(gauges(sandbox=1) + sandbox_play(10), "lab"),
             [alert(a, False, "lab") for a in FAIRNESS_ALERTS]),
        case("the same series at table lab with reddog_table_sandbox 0: all four fire",
             at_table(gauges(sandbox=0) + sandbox_play(10), "lab"),
             [alert(a, True, "lab") for a in FAIRNESS_ALERTS]),
    ]
    service = {
        "name": "service alerts", "interval": "1m",
        "input_series": [
            {"series": 'reddog_rpc_requests_total{method="Settle",code="OK"}', "values": "0+980x60"},
            {"series": 'reddog_rpc_requests_total{method="Settle",code="INTERNAL"}', "values": "0+20x60"},
            {"series": 'reddog_rpc_requests_total{method="Decide",code="OK"}', "values": "0+995x60"},
            {"series": 'reddog_rpc_requests_total{method="Decide",code="UNAVAILABLE"}', "values": "0+5x60"},
            {"series": 'up{job="reddog",pod="reddog-0"}', "values": "0x60"},
        ],
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "RedDogRpcErrors",
             "exp_alerts": [{"exp_labels": {"severity": "critical"},
                             "exp_annotations": {"summary": "More than 1% of gRPC calls fail with server-side errors"}}]},
            {"eval_time": "20m", "alertname": "RedDogDown",
             "exp_alerts": [{"exp_labels": {"severity": "critical"},
                             "exp_annotations": {"summary": "No engine pod is being scraped"}}]},
            {"eval_time": "20m", "alertname": "RedDogCallerErrors", "exp_alerts": []},
        ],
    }
    caller_annotations = annotations("RedDogCallerErrors")
    caller = {
        "name": "caller errors: 2 % of StartRound refused RULES_CHANGED fires; server errors do not",
        "interval": "1m",
        "input_series": [
            {"series": 'reddog_rpc_requests_total{method="StartRound",code="OK"}', "values": "0+980x60"},
            {"series": 'reddog_rpc_requests_total{method="StartRound",code="FAILED_PRECONDITION"}',
             "values": "0+20x60"},
        ],
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "RedDogCallerErrors",
             "exp_alerts": [{"exp_labels": {"severity": "warning"}, "exp_annotations": caller_annotations}]},
            {"eval_time": "20m", "alertname": "RedDogRpcErrors", "exp_alerts": []},
        ],
    }
    quiet = {
        "name": "service alerts: 0.5 % errors and a target up do not fire", "interval": "1m",
        "input_series": [
            {"series": 'reddog_rpc_requests_total{method="Settle",code="OK"}', "values": "0+995x60"},
            {"series": 'reddog_rpc_requests_total{method="Settle",code="INTERNAL"}', "values": "0+5x60"},
            {"series": 'reddog_rpc_requests_total{method="Decide",code="INVALID_ARGUMENT"}', "values": "0+5x60"},
            {"series": 'up{job="reddog",pod="reddog-0"}', "values": "1x60"},
        ],
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "RedDogRpcErrors", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "RedDogCallerErrors", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "RedDogDown", "exp_alerts": []},
        ],
    }
    seal_annotations = annotations("RedDogTokenKeySealBudget")
    step = 600                                   # one sample every 10 minutes, for 26 h
    seals = {
        "name": "seal budget: 160 000 seals/s under k1 fires, 120 000/s under k2 does not",
        "interval": "10m",
        "input_series": [
            {"series": f'reddog_token_seals_total{{key_id="{k}",pod="reddog-{p}"}}',
             "values": f"0+{rate * step}x160"}
            for k, rate in (("k1", 80_000), ("k2", 60_000)) for p in (0, 1)
        ],
        "alert_rule_test": [
            {"eval_time": "26h", "alertname": "RedDogTokenKeySealBudget",
             "exp_alerts": [{"exp_labels": {"severity": "warning", "key_id": "k1"},
                             "exp_annotations": {k: v.replace("{{ $labels.key_id }}", "k1")
                                                 for k, v in seal_annotations.items()}}]},
        ],
    }
    certified_annotations = annotations("RedDogRulesNotCertified", "unchecked")
    digest = {"checked": "32e514cf" * 8, "unchecked": "4d99c651" * 8}
    certified = {
        "name": "certified rules: a digest not checked on one pod fires, one checked on both does not",
        "interval": "1m",
        "input_series": [
            {"series": f'reddog_rules_certified{{table="{t}",rules_digest="{digest[t]}",pod="reddog-{p}"}}',
             "values": f"{v}x30"}
            for t, p, v in (("checked", 0, 1), ("checked", 1, 1), ("unchecked", 0, 1), ("unchecked", 1, 0))
        ],
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "RedDogRulesNotCertified",
             "exp_alerts": [{"exp_labels": {"severity": "critical", "table": "unchecked",
                                            "rules_digest": digest["unchecked"]},
                             "exp_annotations": {k: v.replace("{{ $labels.rules_digest }}", digest["unchecked"])
                                                 for k, v in certified_annotations.items()}}]},
        ],
    }
    def pod_annotations(alertname: str, pod: str) -> dict:
        return {k: v.replace("{{ $labels.pod }}", pod) for k, v in annotations(alertname).items()}
    audit = {
        "name": "audit trail: refusals on one pod fire RedDogAuditRefused for it; shutdown refusals do not; "
                "readiness 0/1 every 2 minutes fires RedDogReadinessFlapping, one dip does not",
        "interval": "1m",
        "input_series": [
            {"series": 'reddog_audit_refused_total{reason="output_failed",pod="reddog-0"}',
             "values": "0x10 0+7x5 35x15"},
            {"series": 'reddog_audit_refused_total{reason="stopped",pod="reddog-1"}', "values": "0x10 0+3x20"},
            {"series": 'reddog_audit_refused_total{reason="output_failed",pod="reddog-1"}', "values": "0x30"},
            {"series": 'reddog_serving{pod="reddog-0"}', "values": "1 1 0 0 1 1 0 0 1 1 0 0 1 1 0 0 1 1 1 1 1 1 1 1 1 1"},
            {"series": 'reddog_serving{pod="reddog-1"}', "values": "1x10 0 0 1x15"},
        ],
        "alert_rule_test": [
            {"eval_time": "13m", "alertname": "RedDogAuditRefused",
             "exp_alerts": [{"exp_labels": {"severity": "critical", "pod": "reddog-0"},
                             "exp_annotations": pod_annotations("RedDogAuditRefused", "reddog-0")}]},
            {"eval_time": "28m", "alertname": "RedDogAuditRefused", "exp_alerts": []},
            {"eval_time": "16m", "alertname": "RedDogReadinessFlapping",
             "exp_alerts": [{"exp_labels": {"severity": "warning", "pod": "reddog-0"},
                             "exp_annotations": pod_annotations("RedDogReadinessFlapping", "reddog-0")}]},
            {"eval_time": "25m", "alertname": "RedDogReadinessFlapping", "exp_alerts": []},
        ],
    }
    doc = {"rule_files": [a.rules_file], "evaluation_interval": "1m",
           "tests": tests + [service, quiet, caller, seals, certified, audit] + fleet()}
    header = ("# Generated by scripts/deploy/gen_alert_tests.py (do not edit; CI regenerates and compares).\n"
              "# Run: promtool test rules rules-test.yaml, next to the PrometheusRule's .spec as "
              f"{a.rules_file}.\n")
    Path(a.out).write_text(header + yaml.safe_dump(doc, sort_keys=False, width=120))
    return 0


if __name__ == "__main__":
    sys.exit(main())
