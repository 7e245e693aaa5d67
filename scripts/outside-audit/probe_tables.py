"""Probe 5 (issue 11): named tables and currencies. GetRules/ListTables per table, the RTP
figures recomputed exactly here from the rules (not from the engine's code), the money metrics
per table compared with the platform's own ledger (exact integers beyond 2^64), and a
configuration without a `default` table."""

import json
import sys
import os
import random
import re
import tempfile
import urllib.request
from fractions import Fraction as Fr
from itertools import product

import grpc

import rd
from rd import pb

BIN = os.environ.get("REDDOG", os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "reddog"))
U64 = 2**64 - 1
problems = []


def check(c, what):
    if not c:
        problems.append(what)
        print("PROBLEM:", what, flush=True)


def exact_rtp(decks, spread_odds, trips):
    n, N = 4 * decks, 52 * decks
    # P(first two cards have ranks a, b), ranks 2..14
    p_pair = Fr(13 * n * (n - 1), N * (N - 1))
    p_trips = Fr(n - 2, N - 2)
    p_spread = {}
    for a in range(2, 15):
        for b in range(2, 15):
            if abs(a - b) >= 2:
                s = abs(a - b) - 1
                p_spread[s] = p_spread.get(s, 0) + Fr(n * n, N * (N - 1))
    net_pair = p_pair * p_trips * trips
    per = {}
    for s in range(1, 12):
        win = Fr(s * n, N - 2)
        per[s] = p_spread[s] * (win * (spread_odds[s - 1] + 1) - 1)  # net per unit staked, weighted
    out = {}
    sets = [frozenset(s for s, bit in zip(range(1, 12), bits) if bit) for bits in product((0, 1), repeat=11)]
    vals_i, vals_t = [], []
    for R in sets:
        ev = net_pair + sum(per[s] * (2 if s in R else 1) for s in range(1, 12))
        wag = 1 + sum(p_spread[s] for s in R)
        vals_i.append((1 + ev, R))
        vals_t.append(((wag + ev) / wag, R))
    out["per_initial_bet"] = (min(v for v, _ in vals_i), max(v for v, _ in vals_i))
    out["per_total_wagered"] = (min(v for v, _ in vals_t), max(v for v, _ in vals_t))
    return out


def metrics(addr):
    text = urllib.request.urlopen(f"http://{addr}/metrics", timeout=10).read().decode()
    vals = {}
    for line in text.splitlines():
        m = re.match(r'^(reddog_(?:staked|returned)_minor_units_total)\{table="([^"]+)"\} (\S+)$', line)
        if m:
            vals[(m.group(1), m.group(2))] = m.group(3)
    return vals, text


m = U64 // (7 * 2 * (10000 + 1))
tables = {"tables": {
    "max8": {"decks": 8, "min_bet": 1, "max_bet": m, "paytable": {"spread": [10000] * 11, "three_of_a_kind": 10000},
             "currency": "BHD", "minor_unit_exponent": 3},
    "jpy": {"decks": 6, "min_bet": 100, "max_bet": 10**9, "currency": "JPY", "minor_unit_exponent": 0},
    "odd": {"decks": 3, "paytable": {"spread": [1, 9, 3, 7, 2, 1, 1, 5, 1, 1, 2], "three_of_a_kind": 30}},
}}
work = tempfile.mkdtemp()
cfg = os.path.join(work, "t.json")
json.dump(tables, open(cfg, "w"))
srv = rd.Server(BIN, "--table-config", cfg)
s = srv.stub
lt = s.ListTables(pb.ListTablesRequest())
check(lt.default_table_id == "", f"no default table, default_table_id {lt.default_table_id!r}")
for r in lt.tables:
    t = tables["tables"][r.table_id]
    pay = t.get("paytable", {"spread": [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], "three_of_a_kind": 11})
    ex = exact_rtp(t["decks"], pay["spread"], pay["three_of_a_kind"])
    for f in r.rtp_figures:
        lo, hi = ex[f.definition]
        want = hi if f.strategy == "best" else lo
        got = Fr(f.exact)
        check(got == want, f"{r.table_id} {f.strategy} {f.definition}: engine {f.exact}, recomputed {want}")
        check(f.decimal == f"{float(want):.10f}" or abs(Fr(f.decimal) - want) <= Fr(1, 2 * 10**10),
              f"{r.table_id} decimal {f.decimal} vs {want}")
    check(Fr(r.rtp_exact) == ex["per_initial_bet"][1], f"{r.table_id} rtp_exact {r.rtp_exact}")
    cur = t.get("currency", "XXX")
    check(r.currency.code == cur, f"{r.table_id} currency {r.currency}")
    check(s.GetRules(pb.GetRulesRequest(table_id=r.table_id)) == r, f"{r.table_id}: GetRules != ListTables entry")
try:
    s.CommitSeed(pb.CommitSeedRequest(round_id="x"))
    check(False, "CommitSeed without a table and no default table accepted")
except grpc.RpcError as e:
    c, msg, info, _ = rd.details(e)
    check(c == "NOT_FOUND" and info.get("field") == "table_id", f"no default: {c} {msg} {info}")
    print("no default table:", c, msg)
try:
    s.GetRules(pb.GetRulesRequest())
    check(False, "GetRules without a table and no default table accepted")
except grpc.RpcError as e:
    c, msg, info, _ = rd.details(e)
    check(c == "NOT_FOUND", f"GetRules no default {c}")

# Ledger vs metrics.
rng = random.Random(3)
ledger = {t: [0, 0] for t in tables["tables"]}
for k in range(90):
    tid = ["max8", "jpy", "odd"][k % 3]
    t = tables["tables"][tid]
    lo, hi = t.get("min_bet", 500), t.get("max_bet", 30000)
    bets = [hi if tid == "max8" else rng.randint(lo, hi) for _ in range(rng.randint(1, 7))]
    c = s.CommitSeed(pb.CommitSeedRequest(round_id=f"{tid}-{k}", nonce=k, table_id=tid))
    st = s.StartRound(pb.StartRoundRequest(commitment_token=c.commitment_token, client_seed="ledger", nonce=k,
                                           round_id=f"{tid}-{k}", seats=[pb.SeatBet(bet=b) for b in bets],
                                           player_limits=pb.Limits(min_bet=1, max_bet=hi)))
    check(st.currency.code == t.get("currency", "XXX"), "start currency")
    tok = st.round_token
    if st.round.awaiting_decisions:
        d = s.Decide(pb.DecideRequest(round_token=tok, decisions=[
            pb.SeatDecision(seat=i, action=rng.choice([1, 2])) for i in range(len(bets))]))
        tok = d.round_token
    se = s.Settle(pb.SettleRequest(round_token=tok))
    ledger[tid][0] += sum(r.stake for r in se.results)
    ledger[tid][1] += sum(r.returned for r in se.results)
vals, text = metrics(srv.metrics)
for tid, (staked, returned) in ledger.items():
    got_s = vals.get(("reddog_staked_minor_units_total", tid))
    got_r = vals.get(("reddog_returned_minor_units_total", tid))
    check(got_s == str(staked), f"{tid} staked metric {got_s} vs ledger {staked}")
    check(got_r == str(returned), f"{tid} returned metric {got_r} vs ledger {returned}")
print("ledger", ledger)
print("metrics", {k: v for k, v in vals.items()})
srv.stop()
print("PROBLEMS", len(problems))
for p in problems:
    print(" ", p)
sys.exit(1 if problems else 0)
