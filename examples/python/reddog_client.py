#!/usr/bin/env python3
"""A platform-side Red Dog client in Python: plays rounds against a running `reddog serve`
and checks every reveal with the independent verifier.

    pip install grpcio grpcio-tools
    python3 examples/python/reddog_client.py --target 127.0.0.1:50051 --rounds 20

Stubs are generated at run time from proto/ (grpcio-tools) into a temporary directory, so
nothing generated is committed. Reveals are checked with verify/verify.py (the independent
Python verifier; --verifier names another copy). Exit status 0 when every round settled and every
reveal verified, 1 otherwise.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import grpc
from grpc_tools import protoc

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_stubs(proto_dir):
    """Generates reddog/v1/reddog_pb2{,_grpc}.py into a temp dir and imports them."""
    out = tempfile.mkdtemp(prefix="reddog-stubs-")
    grpc_tools_include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["protoc", "-I", proto_dir, "-I", grpc_tools_include, "--python_out=" + out,
            "--grpc_python_out=" + out, os.path.join(proto_dir, "reddog", "v1", "reddog.proto")]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed to generate the stubs")
    sys.path.insert(0, out)
    from reddog.v1 import reddog_pb2, reddog_pb2_grpc  # noqa: E402  (generated above)
    return reddog_pb2, reddog_pb2_grpc


def make_verifier(verifier_path):
    """Returns verify(reveal_json, expect) -> bool: the independent Python verifier, run on the
    reveal with `--expect-*` set to what the player was shown before the round (commitment,
    client seed, nonce, round id)."""
    if not os.path.exists(verifier_path):
        raise SystemExit("no verifier at %s (pass --verifier PATH to verify/verify.py)" % verifier_path)
    print("verifying reveals with the independent verifier %s (with --expect-*)" % verifier_path)

    def verify(reveal_json, expect):
        args = [sys.executable, verifier_path, "-"]
        for key, value in sorted(expect.items()):
            args += ["--expect-" + key.replace("_", "-"), str(value)]
        r = subprocess.run(args, input=reveal_json.encode(), capture_output=True)
        return r.returncode == 0
    return verify


def play(stub, pb, verify, rounds, seed):
    rng = random.Random(seed)
    rules = stub.GetRules(pb.GetRulesRequest(), timeout=5)
    lo, hi = rules.table_limits.min_bet, rules.table_limits.max_bet
    print("table: %d deck(s), limits %d..%d, 3-of-a-kind %d:1, rtp %s, %s" % (
        rules.decks, lo, hi, rules.three_of_a_kind_odds, rules.rtp_decimal or "?", rules.fairness_algorithm))
    staked = returned = 0
    classes = {}
    failures = 0
    for i in range(rounds):
        round_id = "py-%d-%d" % (seed, i)
        # 1. Commit for this round (id and nonce): show the commitment, nonce and table to the
        #    player before they pick their client seed. The commitment serves this round only.
        committed = stub.CommitSeed(pb.CommitSeedRequest(round_id=round_id, nonce=i), timeout=5)
        bound = committed.nonce == i and committed.table_id == "default" and committed.decks == rules.decks
        client_seed = "python player %d" % rng.randrange(1 << 30)
        seats = [pb.SeatBet(bet=rng.randrange(lo, min(hi, 10 * lo) + 1)) for _ in range(rng.randint(1, 7))]
        # 2. Start: the platform has debited the bets.
        started = stub.StartRound(pb.StartRoundRequest(
            commitment_token=committed.commitment_token, client_seed=client_seed, nonce=i,
            round_id=round_id, seats=seats, player_limits=pb.Limits(min_bet=lo, max_bet=hi)), timeout=5)
        view = started.round
        token = started.round_token
        cls = pb.HandClass.Name(view.hand_class)
        classes[cls] = classes.get(cls, 0) + 1
        line = "%s  %s %s  %-27s" % (round_id, view.first_card.code, view.second_card.code, cls)
        # 3. Decide (non-consecutive only): raise on wide spreads, all seats in one call.
        if view.awaiting_decisions:
            action = pb.ACTION_RAISE if view.spread >= 7 else pb.ACTION_STAND
            decided = stub.Decide(pb.DecideRequest(
                round_token=token, round_id=round_id,
                decisions=[pb.SeatDecision(seat=s.seat, action=action) for s in view.seats]), timeout=5)
            token = decided.round_token
            line += " spread %2d %s (raised %d)" % (view.spread, pb.Action.Name(action), decided.raised_amount)
        # 4. Settle and credit what it says. A retry returns the same settlement.
        settled = stub.Settle(pb.SettleRequest(round_token=token, round_id=round_id), timeout=5)
        again = stub.Settle(pb.SettleRequest(round_token=token), timeout=5)
        ok = bound and settled == again and settled.total_returned == sum(r.returned for r in settled.results)
        reveal = json.loads(settled.reveal_json)
        ok = ok and reveal.get("transcript") == settled.transcript and reveal.get("commitment") == committed.commitment
        # 5. Show the reveal; check it independently against what the player was shown.
        shown = {"commitment": committed.commitment, "client_seed": client_seed, "nonce": i, "round_id": round_id}
        verified = verify(settled.reveal_json, shown)
        staked += settled.total_staked
        returned += settled.total_returned
        third = settled.round.third_card.code if settled.round.HasField("third_card") else "--"
        print("%s  third %s  staked %6d returned %6d  %s" % (
            line, third, settled.total_staked, settled.total_returned,
            "verified" if verified and ok else "FAILED"))
        if not (verified and ok):
            failures += 1
    # A commitment serves only the round it was made for.
    committed = stub.CommitSeed(pb.CommitSeedRequest(round_id="py-bound", nonce=1), timeout=5)
    try:
        stub.StartRound(pb.StartRoundRequest(
            commitment_token=committed.commitment_token, client_seed="x", nonce=2, round_id="py-bound",
            seats=[pb.SeatBet(bet=lo)], player_limits=pb.Limits(min_bet=lo, max_bet=hi)), timeout=5)
        print("FAILED: a commitment dealt a round with another nonce")
        failures += 1
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.FAILED_PRECONDITION:
            print("FAILED: another nonce gave %s" % e.code())
            failures += 1
    # A tampered token is refused with INVALID_ARGUMENT.
    try:
        stub.Settle(pb.SettleRequest(round_token=b"\x01r\x01a" + b"\x00" * 40), timeout=5)
        print("FAILED: a forged token was accepted")
        failures += 1
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.INVALID_ARGUMENT:
            print("FAILED: forged token gave %s" % e.code())
            failures += 1
    print("rounds %d, hand classes %s, staked %d, returned %d, observed RTP %.4f, failures %d" % (
        rounds, classes, staked, returned, returned / staked if staked else 0.0, failures))
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--seed", type=int, default=1, help="seed for the client's own choices")
    p.add_argument("--proto", default=os.path.join(REPO, "proto"))
    p.add_argument("--verifier", default=os.path.join(REPO, "verify", "verify.py"))
    a = p.parse_args()
    pb, pb_grpc = load_stubs(a.proto)
    verify = make_verifier(a.verifier)
    with grpc.insecure_channel(a.target) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        failures = play(pb_grpc.RedDogStub(channel), pb, verify, a.rounds, a.seed)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
