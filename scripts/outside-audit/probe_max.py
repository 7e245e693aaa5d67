"""Probe 1: every maximum at once, against the real release binary.

Each round: 128-byte round id of 4-byte UTF-8 characters, 64-byte table id, nonce 2^64-1,
8 decks, a 1024-byte client seed of 4-byte characters, 7 seats at the largest max_bet the
engine accepts for the largest paytable (all odds 10000), the longest key id. Every Decide
decides one seat (7 steps: the largest token). Every token issued is reopened (Decide/Settle
on it), every round settles, every reveal verified by `reddog verify`, verify.py and the
re-derivation in rd.py; payouts re-paid here; totals exact.
"""

import json
import os
import random
import subprocess
import sys
import tempfile

import rd
from rd import pb

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("REDDOG", os.path.join(ROOT, "target", "release", "reddog"))
U64 = 2**64 - 1
MAX_ODDS = 10000
MAX_BET = U64 // (7 * 2 * (MAX_ODDS + 1))
BIG = "T" * 64
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 60

ring = {"primary": "k" * 32, "keys": {"k" * 32: os.urandom(32).hex()}}
tables = {"tables": {
    "default": {},
    BIG: {"decks": 8, "min_bet": 1, "max_bet": MAX_BET,
          "paytable": {"spread": [MAX_ODDS] * 11, "three_of_a_kind": MAX_ODDS},
          "currency": "BHD", "minor_unit_exponent": 3},
}}
work = tempfile.mkdtemp(prefix="probe-max-")
cfg = os.path.join(work, "tables.json")
json.dump(tables, open(cfg, "w"))
log = os.path.join(work, "engine.log")
srv = rd.Server(BIN, "--table-config", cfg, "--key-ring", json.dumps(ring), log_path=log)
s = srv.stub
problems = []
stats = {"rounds": 0, "classes": {}, "wins": 0, "max_token": 0, "max_total_returned": 0, "steps": 0}


def check(cond, what):
    if not cond:
        problems.append(what)
        print("PROBLEM:", what, flush=True)


rules = s.GetRules(pb.GetRulesRequest(table_id=BIG))
check(rules.table_limits.max_bet == MAX_BET, f"max_bet {rules.table_limits.max_bet} != {MAX_BET}")
check(rules.currency.code == "BHD" and rules.currency.minor_unit_exponent == 3, f"currency {rules.currency}")
check(rules.table_id == BIG, "rules table id")
lt = s.ListTables(pb.ListTablesRequest())
check([t.table_id for t in lt.tables] == sorted(tables["tables"]), f"ListTables ids {[t.table_id for t in lt.tables]}")
check(lt.default_table_id == "default", "default_table_id")
max_token = rules.max_token_bytes

# Refused at start-up: one minor unit more than the largest max_bet.
over = dict(tables["tables"][BIG]); over["max_bet"] = MAX_BET + 1
cfg2 = os.path.join(work, "over.json")
json.dump({"tables": {"x": over}}, open(cfg2, "w"))
r = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                    "--table-config", cfg2], capture_output=True, text=True, timeout=60,
                   env={**os.environ, "RUST_BACKTRACE": "0"})
check(r.returncode != 0 and "tables.x" in r.stderr and str(MAX_BET) in r.stderr,
      f"over-large table not refused precisely: rc={r.returncode} {r.stderr.strip()[-300:]}")
print("start-up refusal:", next((x.strip() for x in r.stderr.splitlines() if "max_bet" in x), r.returncode))

rng = random.Random(7)
chars4 = [chr(c) for c in range(0x1F300, 0x1F5FF)] + [chr(0x10FFFF), chr(0x1D11E)]
reveals = []
for n in range(ROUNDS):
    rid = "".join(rng.choice(chars4) for _ in range(32))  # 128 bytes
    assert len(rid.encode()) == 128
    cseed = "".join(rng.choice(chars4) for _ in range(256))  # 1024 bytes
    assert len(cseed.encode()) == 1024
    nonce = U64 - (n % 2)  # 2^64-1 and 2^64-2
    c = s.CommitSeed(pb.CommitSeedRequest(round_id=rid, nonce=nonce, table_id=BIG))
    check(c.nonce == nonce and c.table_id == BIG and c.decks == 8 and c.round_id == rid, "commit echo")
    check(c.currency.code == "BHD", "commit currency")
    check(len(c.commitment_token) <= max_token, "commitment token over max")
    bets = [MAX_BET] * 7
    st = s.StartRound(pb.StartRoundRequest(commitment_token=c.commitment_token, client_seed=cseed, nonce=nonce,
                                           round_id=rid, seats=[pb.SeatBet(bet=b) for b in bets],
                                           player_limits=pb.Limits(min_bet=1, max_bet=MAX_BET)))
    check(st.currency.code == "BHD" and st.table_id == BIG, "start currency/table")
    # StartRound retried: identical token.
    st2 = s.StartRound(pb.StartRoundRequest(commitment_token=c.commitment_token, client_seed=cseed, nonce=nonce,
                                            round_id=rid, seats=[pb.SeatBet(bet=b) for b in bets],
                                            player_limits=pb.Limits(min_bet=1, max_bet=MAX_BET), table_id=BIG))
    check(st2.round_token == st.round_token, "StartRound retry not identical")
    t = rd.t0(c.commitment, BIG, rid, nonce, 8, cseed, [MAX_ODDS] * 11, MAX_ODDS, bets)
    check(st.transcript == t.hex(), f"t_0 mismatch {st.transcript} {t.hex()}")
    tokens = [st.round_token]
    decisions = []
    token = st.round_token
    if st.round.awaiting_decisions:
        order = list(range(7)); rng.shuffle(order)
        for k, seat in enumerate(order):
            act = rng.choice(["raise", "stand"]) if n % 3 else "raise"
            d = s.Decide(pb.DecideRequest(round_token=token, round_id=rid, decisions=[
                pb.SeatDecision(seat=seat, action=pb.ACTION_RAISE if act == "raise" else pb.ACTION_STAND)]))
            check(d.step == k + 1, "step")
            check(d.raised_amount == (MAX_BET if act == "raise" else 0), "raised_amount")
            t = rd.tk(t, [(seat, act)])
            check(d.transcript == t.hex(), "t_k mismatch")
            check(d.currency.code == "BHD" and d.table_id == BIG, "decide currency/table")
            token = d.round_token
            tokens.append(token)
            decisions.append([(seat, act)])
        stats["steps"] = max(stats["steps"], len(decisions))
    for tok in tokens:
        stats["max_token"] = max(stats["max_token"], len(tok))
        check(len(tok) <= max_token, f"token {len(tok)} > {max_token}")
    se = s.Settle(pb.SettleRequest(round_token=token, round_id=rid))
    se2 = s.Settle(pb.SettleRequest(round_token=token))
    check(se2.reveal_json == se.reveal_json, "Settle retry differs")
    check(se.currency.code == "BHD" and se.table_id == BIG, "settle currency/table")
    rv = json.loads(se.reveal_json)
    cards = rd.deal(bytes.fromhex(rv["server_seed"]), cseed.encode(), nonce, 8, 3)
    cls, spread = rd.classify(cards[0], cards[1])
    ncards = 2 if cls == "consecutive" else 3
    check(rv["cards"] == cards[:ncards], f"cards {rv['cards']} vs {cards[:ncards]}")
    check(st.round.first_card.code == cards[0] and st.round.second_card.code == cards[1], "face-up cards")
    import hashlib
    check(hashlib.sha256(bytes.fromhex(rv["server_seed"])).hexdigest() == c.commitment, "commitment")
    raised = {seat: a == "raise" for step in decisions for seat, a in step}
    total_staked = total_returned = 0
    for i, res in enumerate(se.results):
        r_ = raised.get(i, False)
        want = rd.pay(cards, [MAX_ODDS] * 11, MAX_ODDS, bets[i], r_)
        check(res.returned == want, f"seat {i} returned {res.returned} want {want}")
        check(res.stake == bets[i] * (2 if r_ else 1), "stake")
        check(rv["seats"][i] == {"bet": bets[i], "raised": r_, "stake": res.stake, "returned": want}, "reveal seat")
        total_staked += res.stake
        total_returned += want
    check(se.total_staked == total_staked and se.total_returned == total_returned,
          f"totals {se.total_staked},{se.total_returned} want {total_staked},{total_returned}")
    check(total_returned <= U64, "total beyond u64")
    check(se.transcript == t.hex() and rv["transcript"] == t.hex(), "settled transcript")
    check(rv["decisions"] == [[{"seat": a, "action": b} for a, b in st_] for st_ in decisions], "reveal decisions")
    stats["rounds"] += 1
    stats["classes"][cls] = stats["classes"].get(cls, 0) + 1
    stats["wins"] += any(x.outcome == pb.OUTCOME_WIN for x in se.results)
    stats["max_total_returned"] = max(stats["max_total_returned"], total_returned)
    # Both verifiers, with every expectation.
    path = os.path.join(work, f"reveal-{n}.json")
    open(path, "w").write(se.reveal_json)
    exp = {"commitment": c.commitment, "client_seed": cseed, "nonce": nonce, "round_id": rid, "table_id": BIG, "decks": 8}
    ep = os.path.join(work, f"expect-{n}.json")
    json.dump(exp, open(ep, "w"), ensure_ascii=False)
    a = subprocess.run([BIN, "verify", path, "--expect", ep], capture_output=True, text=True)
    b = subprocess.run([sys.executable, os.path.join(ROOT, "verify", "verify.py"), path, "--expect", ep],
                       capture_output=True, text=True)
    a2 = subprocess.run([BIN, "verify", path, "--expect-commitment", c.commitment, "--expect-client-seed", cseed,
                         "--expect-nonce", str(nonce), "--expect-round-id", rid, "--expect-table-id", BIG,
                         "--expect-decks", "8"], capture_output=True, text=True)
    b2 = subprocess.run([sys.executable, os.path.join(ROOT, "verify", "verify.py"), path, "--expect-commitment",
                         c.commitment, "--expect-client-seed", cseed, "--expect-nonce", str(nonce),
                         "--expect-round-id", rid, "--expect-table-id", BIG, "--expect-decks", "8"],
                        capture_output=True, text=True)
    for name, x in (("reddog verify --expect", a), ("verify.py --expect", b), ("reddog verify flags", a2),
                    ("verify.py flags", b2)):
        check(x.returncode == 0, f"{name} rc {x.returncode}: {(x.stdout + x.stderr)[-400:]}")
    if n % 10 == 0:
        print(n, stats, flush=True)

srv.stop()
audit = subprocess.run([BIN, "audit-log", log], capture_output=True, text=True)
check(audit.returncode == 0, f"audit-log on a clean run: rc {audit.returncode} {audit.stdout[-800:]}")
print("audit-log:", audit.stdout.strip().splitlines()[:3])
print("STATS", stats)
print("PROBLEMS", len(problems))
for p in problems[:40]:
    print(" ", p)
print("work dir", work)
sys.exit(1 if problems else 0)
