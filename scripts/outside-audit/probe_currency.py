"""Probe (issue 11): a round started at a EUR table and a commitment made there, then the
operator re-configures that table id in yen (same key ring). The round's answers must keep
naming EUR (its bets were EUR); the old commitment must be refused at StartRound."""

import json
import os
import sys
import tempfile

import grpc

import rd
from rd import pb

BIN = os.environ.get("REDDOG", os.path.join(rd.ROOT, "target", "release", "reddog"))
RING = json.dumps({"primary": "k1", "keys": {"k1": "77" * 32}})
problems = []


def check(c, what):
    if not c:
        problems.append(what)
        print("PROBLEM:", what, flush=True)


w = tempfile.mkdtemp()
a, b = os.path.join(w, "a.json"), os.path.join(w, "b.json")
json.dump({"tables": {"vip": {"decks": 1, "currency": "EUR", "minor_unit_exponent": 2}}}, open(a, "w"))
json.dump({"tables": {"vip": {"decks": 1, "currency": "JPY", "minor_unit_exponent": 0}}}, open(b, "w"))
lim = pb.Limits(min_bet=500, max_bet=30000)
s1 = rd.Server(BIN, "--table-config", a, "--key-ring", RING)
try:
    for k in range(200):
        c = s1.stub.CommitSeed(pb.CommitSeedRequest(round_id=f"r{k}", table_id="vip"))
        st = s1.stub.StartRound(pb.StartRoundRequest(commitment_token=c.commitment_token, client_seed="x",
                                                     round_id=f"r{k}", seats=[pb.SeatBet(bet=1000)], player_limits=lim))
        if st.round.awaiting_decisions:
            break
    later = s1.stub.CommitSeed(pb.CommitSeedRequest(round_id="later", table_id="vip"))
    check(st.currency.code == "EUR" and later.currency.code == "EUR", "EUR before")
finally:
    s1.stop()
s2 = rd.Server(BIN, "--table-config", b, "--key-ring", RING)
try:
    d = s2.stub.Decide(pb.DecideRequest(round_token=st.round_token, decisions=[pb.SeatDecision(seat=0, action=1)]))
    se = s2.stub.Settle(pb.SettleRequest(round_token=d.round_token))
    print("after re-configuration: Decide names", d.currency.code, "Settle names", se.currency.code,
          "for staked", se.total_staked)
    check(d.currency.code == "EUR" and se.currency.code == "EUR", "the round's answers name the new currency")
    try:
        s2.stub.StartRound(pb.StartRoundRequest(commitment_token=later.commitment_token, client_seed="x",
                                                round_id="later", seats=[pb.SeatBet(bet=1000)], player_limits=lim))
        check(False, "a commitment made at EUR dealt at the JPY table")
    except grpc.RpcError as e:
        code, msg, info, _ = rd.details(e)
        print("old commitment:", code, msg)
        check(code == "FAILED_PRECONDITION" and info.get("field") == "commitment_token", f"{code} {info}")
finally:
    s2.stop()
print("PROBLEMS", len(problems))
sys.exit(1 if problems else 0)
