#!/usr/bin/env python3
"""A platform-side Red Dog client in Python, safe to copy: plays rounds against a running
`reddog serve` and checks every reveal with the independent verifier.

    pip install grpcio grpcio-tools grpcio-status
    python3 examples/python/reddog_client.py --target 127.0.0.1:50051 --rounds 20
    python3 examples/python/reddog_client.py --sandbox --rounds 14   # every hand class, at a sandbox table
    python3 examples/python/reddog_client.py --ledger ledger.csv     # also append each settled seat

`--ledger FILE` appends one line per settled seat, `round_id,seat,staked,credited` (a header
first when the file is new): the platform's side of `reddog report --reconcile FILE`
(docs/AUDIT.md, "Reports").

What it does the way a platform must (docs/INTEGRATION.md):
- round ids never repeat: a fresh UUID per round, never a counter or a seed that restarts;
- the table is chosen from ListTables (`--table`, else the default table; `--sandbox`: a
  table marked sandbox);
- every call is retried with back-off on UNAVAILABLE, RESOURCE_EXHAUSTED and
  DEADLINE_EXCEEDED, waiting at least the server's RetryInfo delay when it sends one (every
  RedDog call is safe to repeat with the same request: docs/API.md, "Retries");
- one wallet transaction per seat per step, each with its own idempotency key
  (`<round id>:<seat>:bet`, `:raise`, `:credit`; `:rollback` when StartRound is refused), so
  a retried step never debits or credits twice;
- every reveal is checked against what the player was shown; at a sandbox table, every
  payout is checked against the paytable and the sandbox reveal must be refused by the
  verifier (it is never a fair round).

Stubs are generated at run time from proto/ (grpcio-tools) into a temporary directory, so
nothing generated is committed. Reveals are checked with verify/verify.py (the independent
Python verifier). Exit status 0 when every round settled and every check held, 1 otherwise.
"""

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid

import grpc
from grpc_tools import protoc

try:  # RetryInfo is read from the google.rpc details when grpcio-status is installed.
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status
except ImportError:  # pragma: no cover - the back-off still works, without the server's hint
    rpc_status = None

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED)
# Requested deals at a sandbox table: spreads 1-11 (third card between: a win), a
# consecutive hand, a pair without a match, three of a kind.
RANKS = "23456789TJQKA"
SANDBOX_DEALS = [["2c", RANKS[spread + 1] + "d", "3h"] for spread in range(1, 12)] + [
    ["9d", "Ts"], ["7h", "7d", "Kc"], ["7h", "7d", "7s"]]


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


def retry_delay(err, attempt):
    """Seconds to wait before retry `attempt` (1-based): exponential back-off with jitter,
    and at least the RetryInfo delay the server sent, if any."""
    delay = min(2.0, 0.05 * 2 ** attempt) * random.uniform(0.5, 1.0)
    if rpc_status is not None:
        status = rpc_status.from_call(err)
        for detail in status.details if status else []:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                delay = max(delay, info.retry_delay.ToTimedelta().total_seconds())
    return delay


def call(method, request, attempts=6, timeout=5):
    """One RedDog call, retried with the same request on a transient failure."""
    for attempt in range(1, attempts + 1):
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as err:
            if err.code() not in RETRYABLE or attempt == attempts:
                raise
            time.sleep(retry_delay(err, attempt))
    raise AssertionError("unreachable")


class Wallet:
    """The platform's ledger, reduced to what the flow needs: each transaction has an
    idempotency key; a repeated key returns the first transaction instead of moving money
    again, and the same key with another amount is a bug caught at once."""

    def __init__(self):
        self.transactions = {}
        self.balance = 0

    def _apply(self, key, amount):
        if key in self.transactions:
            if self.transactions[key] != amount:
                raise RuntimeError("idempotency key %s reused for another amount" % key)
            return False
        self.transactions[key] = amount
        self.balance += amount
        return True

    def debit(self, key, amount):
        return self._apply(key, -amount)

    def credit(self, key, amount):
        return self._apply(key, amount)


def choose_table(stub, pb, wanted, sandbox):
    listed = call(stub.ListTables, pb.ListTablesRequest())
    tables = listed.tables
    if wanted:
        chosen = [t for t in tables if t.table_id == wanted]
    elif sandbox:
        chosen = [t for t in tables if t.sandbox]
    else:
        chosen = [t for t in tables if t.table_id == listed.default_table_id and not t.sandbox] \
            or [t for t in tables if not t.sandbox]
    if not chosen:
        raise SystemExit("no %s table among %s" % ("sandbox" if sandbox else "suitable",
                                                     [t.table_id for t in tables]))
    if chosen[0].sandbox != sandbox:
        raise SystemExit("table %s is %sa sandbox table" % (chosen[0].table_id, "" if chosen[0].sandbox else "not "))
    return chosen[0]


def expected_return(pb, rules, view, result):
    """What the paytable pays one seat (docs/RULES.md), from GetRules' odds."""
    if result.outcome == pb.OUTCOME_PUSH:
        return result.stake
    if result.outcome == pb.OUTCOME_LOSE:
        return 0
    odds = rules.three_of_a_kind_odds if view.hand_class == pb.HAND_CLASS_PAIR \
        else rules.spread_odds[view.spread - 1].odds
    return result.stake * (odds + 1)


def verifier_refuses(verifier, reveal_json):
    """A sandbox reveal must be refused as malformed (exit 2), never verified."""
    r = subprocess.run([sys.executable, verifier, "-"], input=reveal_json.encode(), capture_output=True)
    return r.returncode == 2 and b"sandbox round" in r.stdout + r.stderr


def verifier_accepts(verifier, reveal_json, shown):
    args = [sys.executable, verifier, "-"]
    for key, value in sorted(shown.items()):
        args += ["--expect-" + key.replace("_", "-"), str(value)]
    return subprocess.run(args, input=reveal_json.encode(), capture_output=True).returncode == 0


def play_round(stub, pb, rules, wallet, rng, i, sandbox_cards, verifier, ledger=None):
    """One round, as a platform drives it. Returns (ok, hand class name, line). `ledger`, a
    csv.writer, gets one row per settled seat: round_id, seat, staked, credited."""
    table_id = rules.table_id
    lo, hi = rules.table_limits.min_bet, rules.table_limits.max_bet
    round_id = "py-" + str(uuid.uuid4())
    # 1. Commit for this round (id and nonce): show the commitment, nonce and table to the
    #    player before they pick their client seed. The commitment serves this round only.
    nonce = rng.randrange(1 << 63)
    committed = call(stub.CommitSeed, pb.CommitSeedRequest(round_id=round_id, nonce=nonce, table_id=table_id))
    ok = committed.nonce == nonce and committed.table_id == table_id and committed.sandbox == rules.sandbox
    client_seed = "python player %d" % rng.randrange(1 << 30)
    bets = [rng.randrange(lo, min(hi, 10 * lo) + 1) for _ in range(rng.randint(1, 7))]
    # 2. Debit each seat's bet (one transaction per seat), then start. Refused for good:
    #    roll the debits back (their own keys) and report the round void.
    for seat, bet in enumerate(bets):
        wallet.debit("%s:%d:bet" % (round_id, seat), bet)
    request = pb.StartRoundRequest(
        commitment_token=committed.commitment_token, client_seed=client_seed, nonce=nonce, round_id=round_id,
        seats=[pb.SeatBet(bet=b) for b in bets], player_limits=pb.Limits(min_bet=lo, max_bet=hi),
        table_id=table_id, sandbox_cards=sandbox_cards or [])
    try:
        started = call(stub.StartRound, request)
        # A retry after a lost answer: the same request deals the same round, same token.
        ok = ok and call(stub.StartRound, request).round_token == started.round_token
    except grpc.RpcError as err:
        for seat, bet in enumerate(bets):
            wallet.credit("%s:%d:rollback" % (round_id, seat), bet)
        return False, "refused", "%s  StartRound refused: %s %s (bets rolled back)" % (round_id, err.code(), err.details())
    view = started.round
    token = started.round_token
    cls = pb.HandClass.Name(view.hand_class)
    line = "%s  %s %s  %-27s" % (round_id[:11], view.first_card.code, view.second_card.code, cls)
    if sandbox_cards:
        ok = ok and view.sandbox and [view.first_card.code, view.second_card.code] == sandbox_cards[:2]
    # 3. Decide (non-consecutive only): raise on wide spreads, all seats in one call; debit
    #    each raise first (one transaction per raising seat).
    if view.awaiting_decisions:
        action = pb.ACTION_RAISE if view.spread >= 7 or sandbox_cards else pb.ACTION_STAND
        if action == pb.ACTION_RAISE:
            for s in view.seats:
                wallet.debit("%s:%d:raise" % (round_id, s.seat), s.bet)
        decided = call(stub.Decide, pb.DecideRequest(
            round_token=token, round_id=round_id,
            decisions=[pb.SeatDecision(seat=s.seat, action=action) for s in view.seats]))
        token = decided.round_token  # the newest token is the round's state
        ok = ok and decided.raised_amount == (sum(bets) if action == pb.ACTION_RAISE else 0)
        line += " spread %2d %s (raised %d)" % (view.spread, pb.Action.Name(action), decided.raised_amount)
    # 4. Settle, then credit each seat's `returned` once (its own key). A retried Settle
    #    returns the same settlement, and the repeated credit keys move nothing.
    settled = call(stub.Settle, pb.SettleRequest(round_token=token, round_id=round_id))
    again = call(stub.Settle, pb.SettleRequest(round_token=token))
    for r in list(settled.results) + list(again.results):
        wallet.credit("%s:%d:credit" % (round_id, r.seat), r.returned)
    if ledger is not None:
        ledger.writerows([round_id, r.seat, r.stake, r.returned] for r in settled.results)
    ok = ok and settled == again and settled.total_returned == sum(r.returned for r in settled.results)
    ok = ok and all(r.returned == expected_return(pb, rules, settled.round, r) for r in settled.results)
    reveal = json.loads(settled.reveal_json)
    ok = ok and reveal.get("transcript") == settled.transcript and reveal.get("commitment") == committed.commitment
    # 5. Show the reveal; check it independently against what the player was shown. A
    #    sandbox round's reveal is refused by the verifier: it is never a fair round.
    if rules.sandbox:
        checked = settled.round.sandbox and reveal.get("format") == "reddog-sandbox-reveal-v1" \
            and verifier_refuses(verifier, settled.reveal_json)
    else:
        shown = {"commitment": committed.commitment, "client_seed": client_seed, "nonce": nonce,
                 "round_id": round_id}
        checked = verifier_accepts(verifier, settled.reveal_json, shown)
    third = settled.round.third_card.code if settled.round.HasField("third_card") else "--"
    line += "  third %s  staked %6d returned %6d  %s" % (
        third, settled.total_staked, settled.total_returned,
        ("sandbox reveal refused by the verifier" if rules.sandbox else "verified") if checked and ok else "FAILED")
    return ok and checked, cls, line


def play(stub, pb, args):
    rng = random.Random()
    wallet = Wallet()
    table = choose_table(stub, pb, args.table, args.sandbox)
    rules = call(stub.GetRules, pb.GetRulesRequest(table_id=table.table_id))
    print("table %s%s: %d deck(s), limits %d..%d %s, 3-of-a-kind %d:1, rtp %s, %s" % (
        rules.table_id, " (sandbox)" if rules.sandbox else "", rules.decks, rules.table_limits.min_bet,
        rules.table_limits.max_bet, rules.currency.code, rules.three_of_a_kind_odds, rules.rtp_decimal or "?",
        rules.fairness_algorithm))
    if rpc_status is None:
        print("NOTE: grpcio-status is not installed: retries back off without reading RetryInfo")
    classes, failures = {}, 0
    ledger_file = None
    if args.ledger:
        new = not os.path.exists(args.ledger) or os.path.getsize(args.ledger) == 0
        ledger_file = open(args.ledger, "a", newline="")
        ledger = csv.writer(ledger_file, lineterminator="\n")
        if new:
            ledger.writerow(["round_id", "seat", "staked", "credited"])
    try:
        for i in range(args.rounds):
            deal = SANDBOX_DEALS[i % len(SANDBOX_DEALS)] if args.sandbox else None
            ok, cls, line = play_round(stub, pb, rules, wallet, rng, i, deal, args.verifier,
                                       ledger if ledger_file else None)
            classes[cls] = classes.get(cls, 0) + 1
            print(line)
            failures += 0 if ok else 1
    finally:
        if ledger_file:
            ledger_file.close()
    # The wallet moved exactly what the answers said, once each.
    staked = -sum(v for k, v in wallet.transactions.items() if k.endswith((":bet", ":raise")))
    returned = sum(v for k, v in wallet.transactions.items() if k.endswith((":credit", ":rollback")))
    if wallet.balance != returned - staked:
        print("FAILED: the wallet's balance is not its transactions' sum")
        failures += 1
    # A commitment serves only the round it was made for.
    round_id = "py-" + str(uuid.uuid4())
    committed = call(stub.CommitSeed, pb.CommitSeedRequest(round_id=round_id, nonce=1, table_id=rules.table_id))
    try:
        call(stub.StartRound, pb.StartRoundRequest(
            commitment_token=committed.commitment_token, client_seed="x", nonce=2, round_id=round_id,
            seats=[pb.SeatBet(bet=rules.table_limits.min_bet)],
            player_limits=pb.Limits(min_bet=rules.table_limits.min_bet, max_bet=rules.table_limits.max_bet)))
        print("FAILED: a commitment dealt a round with another nonce")
        failures += 1
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.FAILED_PRECONDITION:
            print("FAILED: another nonce gave %s" % e.code())
            failures += 1
    # A tampered token is refused with INVALID_ARGUMENT.
    try:
        call(stub.Settle, pb.SettleRequest(round_token=b"\x01r\x01a" + b"\x00" * 40))
        print("FAILED: a forged token was accepted")
        failures += 1
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.INVALID_ARGUMENT:
            print("FAILED: forged token gave %s" % e.code())
            failures += 1
    if args.sandbox and args.rounds >= len(SANDBOX_DEALS):
        wanted = {"HAND_CLASS_NON_CONSECUTIVE": 11, "HAND_CLASS_CONSECUTIVE": 1, "HAND_CLASS_PAIR": 2}
        if any(classes.get(k, 0) < n for k, n in wanted.items()):
            print("FAILED: not every hand class was reached: %s" % classes)
            failures += 1
    print("rounds %d, hand classes %s, staked %d, returned %d, wallet transactions %d, failures %d" % (
        args.rounds, classes, staked, returned, len(wallet.transactions), failures))
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--table", default="", help="the table id (default: the default table, or the sandbox table)")
    p.add_argument("--sandbox", action="store_true",
                   help="play at a sandbox table, cycling through a requested deal of every hand class")
    p.add_argument("--ledger", default="", help="append each settled seat to this CSV (round_id,seat,staked,credited)")
    p.add_argument("--proto", default=os.path.join(REPO, "proto"))
    p.add_argument("--verifier", default=os.path.join(REPO, "verify", "verify.py"))
    a = p.parse_args()
    pb, pb_grpc = load_stubs(a.proto)
    with grpc.insecure_channel(a.target) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        failures = play(pb_grpc.RedDogStub(channel), pb, a)
    print("python client: %d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
