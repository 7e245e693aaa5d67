#!/usr/bin/env python3
"""A platform-side Red Dog client in Python, safe to copy: plays rounds against a running
`reddog serve` the way docs/INTEGRATION.md says, survives being killed at any step, and
checks every reveal with the independent verifier.

    pip install grpcio grpcio-tools grpcio-status
    python3 examples/python/reddog_client.py --target 127.0.0.1:50051 --rounds 20
    python3 examples/python/reddog_client.py --sandbox --rounds 14   # every hand class, at a sandbox table
    python3 examples/python/reddog_client.py --db platform.sqlite --ledger ledger.csv
    python3 examples/python/reddog_client.py --db platform.sqlite --sweep --audit-trail audit.jsonl
    python3 examples/python/reddog_client.py --sandbox --rounds 1 --target PROXY  # through fault_proxy.py

The platform's state is a SQLite file (`--db`; in memory by default): the wallet (one
transaction per seat per step, each under its idempotency key, `<round>:<seat>:bet`,
`:rollback`, `:raise`, `:raise-rollback`, `:credit`; a repeated key moves nothing, the same key
with another amount stops the run) and each round's state, stored request and newest token,
each step's wallet writes and state in one SQLite transaction. A round moves:

    committed -> bets_debited -> dealt [-> raises_debited -> decided] -> settled
                 (StartRound refused: bets rolled back -> void)
                                       (Decide refused: raises rolled back -> dealt, closed)

- round ids never repeat: a fresh UUID per round;
- a definite refusal (docs/INTEGRATION.md, "Errors") is INVALID_ARGUMENT, OUT_OF_RANGE,
  NOT_FOUND or FAILED_PRECONDITION carrying the engine's ErrorInfo, whose reason is read as
  the generated `ErrorReason` enum (`pb.ErrorReason.Value`, compared with `pb.DUPLICATE_SEAT`
  and the like). Every other outcome — INTERNAL, UNKNOWN, CANCELLED, UNAVAILABLE,
  DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, a status without the engine's details (a proxy's),
  no answer — is unknown: the call is retried with the SAME request (docs/API.md, "Retries")
  a bounded number of times, with exponential back-off and jitter, at least the server's
  RetryInfo delay; when the retries run out the round is left as it is and the sweeper
  finishes it later — never rolled back on a guess (the engine may have acted);
- a definite refusal of StartRound rolls the bets back, of Decide rolls the raises back
  (`:raise-rollback`) and the round is settled from the token before the Decide;
- every settled round is checked against the wallet: each seat's stake (bet + raise - raise
  rollback) and credit must equal the engine's Settle answer;
- the sweeper (run at every start, or alone with `--sweep`) finishes every round of the
  platform's own that is not settled or void — the platform's list is the one to work
  through: a dealt round is settled from its newest token (undecided seats stand), a started
  call is repeated with its stored request, a round never dealt is voided. With
  `--audit-trail FILE…` it then cross-checks with `reddog audit-log --open-rounds`: every round
  the engine's trails show open must be one the platform voided (a round the platform has
  settled is waited for, up to 10 s, until its record reaches the trail);
- `--ledger FILE` appends one line per settled seat, `round_id,seat,staked,credited`, from
  the wallet (staked: bet + raise - raise rollback; credited: the credit): the platform's side
  of `reddog report --reconcile FILE` (docs/AUDIT.md, "Reports");
- `--crash-after N` kills the process (SIGKILL) at its Nth step boundary (after a call's
  answer, before it is stored; after each wallet write): the kill test
  (`examples/python/kill_test.py`) uses it.

Every reveal is checked against what the player was shown (verify/verify.py); at a sandbox
table every payout is checked against the paytable and the sandbox reveal must be refused.
Stubs are generated at run time from proto/ (grpcio-tools) into a temporary directory. Exit
status 0 when every round settled and every check held, 1 otherwise.
"""

import argparse
import csv
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

import grpc
from grpc_tools import protoc

try:  # the google.rpc details: ErrorInfo (a definite refusal's reason), RetryInfo
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status
except ImportError:  # pragma: no cover
    raise SystemExit("pip install grpcio-status: without the google.rpc details no refusal is known to be definite")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The codes of a definite refusal, when the engine's ErrorInfo comes with them (INTEGRATION.md).
DEFINITE = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.NOT_FOUND,
            grpc.StatusCode.FAILED_PRECONDITION)
# Requested deals at a sandbox table: spreads 1-11 (third card between: a win), a
# consecutive hand, a pair without a match, three of a kind.
RANKS = "23456789TJQKA"
SANDBOX_DEALS = [["2c", RANKS[spread + 1] + "d", "3h"] for spread in range(1, 12)] + [
    ["9d", "Ts"], ["7h", "7d", "Kc"], ["7h", "7d", "7s"]]


def load_stubs(proto_dir):
    """Generates reddog/v1/reddog_pb2{,_grpc}.py into a temp dir, imports them, and removes
    the directory (the modules stay loaded)."""
    out = tempfile.mkdtemp(prefix="reddog-stubs-")
    grpc_tools_include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["protoc", "-I", proto_dir, "-I", grpc_tools_include, "--python_out=" + out,
            "--grpc_python_out=" + out, os.path.join(proto_dir, "reddog", "v1", "reddog.proto")]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed to generate the stubs")
    sys.path.insert(0, out)
    from reddog.v1 import reddog_pb2, reddog_pb2_grpc  # noqa: E402  (generated above)
    sys.path.remove(out)
    shutil.rmtree(out, ignore_errors=True)
    return reddog_pb2, reddog_pb2_grpc


def detail(err, kind):
    """The google.rpc detail of type `kind` the failed call carries, or None."""
    status = rpc_status.from_call(err)
    for any_detail in status.details if status else []:
        if any_detail.Is(kind.DESCRIPTOR):
            found = kind()
            any_detail.Unpack(found)
            return found
    return None


def retry_delay(err, attempt):
    """Seconds to wait before retry `attempt` (1-based): exponential back-off with jitter,
    and at least the RetryInfo delay the server sent, if any."""
    delay = min(2.0, 0.05 * 2 ** attempt) * random.uniform(0.5, 1.0)
    info = detail(err, error_details_pb2.RetryInfo)
    if info is not None:
        delay = max(delay, info.retry_delay.ToTimedelta().total_seconds())
    return delay


class Refused(Exception):
    """A definite refusal: the engine did nothing. `reason` is the ErrorReason value."""

    def __init__(self, err, reason):
        super().__init__("%s %s: %s" % (err.code().name, PB.ErrorReason.Name(reason), err.details()))
        self.code, self.reason = err.code(), reason


class EngineUnreachable(Exception):
    """The retries ran out on an unknown outcome: whether the engine acted is unknown, so
    the round is left as it is for the sweeper (never rolled back on a guess)."""


PB = None  # the generated module, once loaded


def refusal_reason(err):
    """The ErrorReason of a definite refusal, or None when the outcome is unknown: one of the
    four codes with the engine's ErrorInfo (domain reddog.v1) whose reason is an ErrorReason."""
    if err.code() not in DEFINITE:
        return None
    info = detail(err, error_details_pb2.ErrorInfo)
    if info is None or info.domain != "reddog.v1" or info.reason not in PB.ErrorReason.keys():
        return None
    reason = PB.ErrorReason.Value(info.reason)
    return reason if reason != PB.ERROR_REASON_UNSPECIFIED else None


def call(method, request, attempts=6, timeout=5):
    """One RedDog call, retried with the same request on every unknown outcome, `attempts`
    times at most. A definite refusal raises Refused; running out of retries raises
    EngineUnreachable."""
    for attempt in range(1, attempts + 1):
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as err:
            reason = refusal_reason(err)
            if reason is not None:
                raise Refused(err, reason) from err
            if attempt == attempts:
                raise EngineUnreachable("%s after %d attempts" % (err.code(), attempts)) from err
            time.sleep(retry_delay(err, attempt))
    raise AssertionError("unreachable")


CRASH = {"after": 0, "steps": 0}


def step_boundary(where):
    """A point between two steps (a call answered and not yet stored; a wallet write done):
    with --crash-after N the process is killed here at the Nth one, as a crash would."""
    CRASH["steps"] += 1
    if CRASH["after"] and CRASH["steps"] >= CRASH["after"]:
        print("crash: killed after %s" % where, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


class Platform:
    """The platform's state in SQLite: the wallet and each round's progress. Each step's
    wallet transactions and the round's new state are written in one SQLite transaction."""

    TERMINAL = ("settled", "void")

    def __init__(self, path):
        self.refusals = {}  # round id -> the ErrorReason of a refused Decide, this run
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL" if path != ":memory:" else "PRAGMA journal_mode=MEMORY")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS wallet (key TEXT PRIMARY KEY, round_id TEXT NOT NULL,
                seat INTEGER NOT NULL, kind TEXT NOT NULL, amount INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS rounds (round_id TEXT PRIMARY KEY, state TEXT NOT NULL,
                start_request BLOB NOT NULL, started BLOB, token BLOB, awaiting INTEGER NOT NULL DEFAULT 0,
                decide_request BLOB, settle_response BLOB, exported INTEGER NOT NULL DEFAULT 0);
        """)

    def step(self, round_id, state, moves=(), **fields):
        """One step, atomically: the wallet `moves` [(seat, kind, amount)] (amount < 0: a
        debit), each under the key `<round>:<seat>:<kind>`, and the round's new state."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for seat, kind, amount in moves:
                key = "%s:%d:%s" % (round_id, seat, kind)
                row = self.db.execute("SELECT amount FROM wallet WHERE key = ?", (key,)).fetchone()
                if row is None:
                    self.db.execute("INSERT INTO wallet VALUES (?, ?, ?, ?, ?)", (key, round_id, seat, kind, amount))
                elif row[0] != amount:
                    raise RuntimeError("idempotency key %s reused for another amount" % key)
            sets = ", ".join(["state = ?"] + ["%s = ?" % k for k in fields])
            self.db.execute("UPDATE rounds SET %s WHERE round_id = ?" % sets, [state, *fields.values(), round_id])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        step_boundary("%s stored%s" % (state, " with its wallet moves" if moves else ""))

    def new_round(self, round_id, start_request):
        self.db.execute("INSERT INTO rounds (round_id, state, start_request) VALUES (?, 'committed', ?)",
                        (round_id, start_request.SerializeToString()))
        step_boundary("the round stored, nothing debited")

    def round(self, round_id):
        return self.db.execute("SELECT state, start_request, token, awaiting, decide_request, started FROM rounds "
                               "WHERE round_id = ?", (round_id,)).fetchone()

    def unfinished(self):
        return [r[0] for r in self.db.execute(
            "SELECT round_id FROM rounds WHERE state NOT IN ('settled', 'void') ORDER BY rowid")]

    def hanging(self):
        """Stakes left hanging: rounds not finished, and void rounds whose money does not net
        to zero."""
        open_rounds = len(self.unfinished())
        unbalanced = self.db.execute(
            "SELECT COUNT(*) FROM (SELECT r.round_id FROM rounds r JOIN wallet w USING (round_id) "
            "WHERE r.state = 'void' GROUP BY r.round_id HAVING SUM(w.amount) != 0)").fetchone()[0]
        return open_rounds + unbalanced

    def ledger_rows(self):
        """One row per seat of each settled round not yet exported: staked from the wallet's
        debits (bet + raise - raise rollback), credited from its credit."""
        rows = self.db.execute(
            "SELECT w.round_id, w.seat, -SUM(CASE WHEN w.kind != 'credit' THEN w.amount ELSE 0 END), "
            "SUM(CASE WHEN w.kind = 'credit' THEN w.amount ELSE 0 END) FROM wallet w JOIN rounds r "
            "USING (round_id) WHERE r.state = 'settled' AND r.exported = 0 GROUP BY w.round_id, w.seat "
            "ORDER BY r.rowid, w.seat").fetchall()
        return rows

    def mark_exported(self, round_ids):
        self.db.executemany("UPDATE rounds SET exported = 1 WHERE round_id = ?", [(r,) for r in round_ids])

    def stake_mismatches(self, pb):
        """Settled rounds whose wallet disagrees with the engine's Settle answer: a seat whose
        stake (bet + raise - rollbacks) or credit is not the engine's. Returns lines."""
        out = []
        for round_id, blob in self.db.execute("SELECT round_id, settle_response FROM rounds WHERE state = 'settled'"):
            settled = pb.SettleResponse.FromString(blob)
            wallet = {}
            for seat, kind, amount in self.db.execute("SELECT seat, kind, amount FROM wallet WHERE round_id = ?",
                                                      (round_id,)):
                staked, credited = wallet.get(seat, (0, 0))
                wallet[seat] = (staked, credited + amount) if kind == "credit" else (staked - amount, credited)
            for r in settled.results:
                if wallet.get(r.seat, (0, 0)) != (r.stake, r.returned):
                    out.append("%s seat %d: the wallet staked %d and credited %d, the engine's Settle says %d and %d"
                               % ((round_id, r.seat) + wallet.get(r.seat, (0, 0)) + (r.stake, r.returned)))
        return out

    def totals(self):
        return self.db.execute(
            "SELECT -SUM(CASE WHEN amount < 0 THEN amount ELSE 0 END), SUM(CASE WHEN amount > 0 THEN amount ELSE 0 END), "
            "COUNT(*) FROM wallet").fetchone()


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


def advance(stub, pb, platform, round_id, decide=None):
    """Drives one stored round from its state to settled or void. `decide(view)` picks the
    action of a dealt round awaiting decisions; None (the sweeper: the player is gone) settles
    it as it stands. Returns the SettleResponse (None for a void round)."""
    while True:
        state, start_blob, token, awaiting, decide_blob, started_blob = platform.round(round_id)
        start = pb.StartRoundRequest.FromString(start_blob)
        bets = [s.bet for s in start.seats]
        if state == "committed":
            if decide is None:  # the sweeper: never debited, never dealt
                platform.step(round_id, "void")
                continue
            platform.step(round_id, "bets_debited", [(i, "bet", -b) for i, b in enumerate(bets)])
        elif state == "bets_debited":
            try:
                started = call(stub.StartRound, start)  # a repeat deals the same round
            except Refused as refused:  # the engine dealt nothing
                print("%s: StartRound refused (%s): bets rolled back" % (round_id, pb.ErrorReason.Name(refused.reason)))
                platform.step(round_id, "void", [(i, "rollback", b) for i, b in enumerate(bets)])
                continue
            step_boundary("StartRound answered, the answer not stored")
            platform.step(round_id, "dealt", token=started.round_token, awaiting=int(started.round.awaiting_decisions),
                          started=started.SerializeToString())
        elif state == "dealt" and awaiting and decide is not None:
            view = pb.StartRoundResponse.FromString(started_blob).round
            action = decide(view)
            request = pb.DecideRequest(round_token=token, round_id=round_id,
                                       decisions=[pb.SeatDecision(seat=s.seat, action=action) for s in view.seats])
            raises = [(s.seat, "raise", -s.bet) for s in view.seats] if action == pb.ACTION_RAISE else []
            platform.step(round_id, "raises_debited", raises, decide_request=request.SerializeToString())
        elif state == "raises_debited":
            request = pb.DecideRequest.FromString(decide_blob)
            raised = [(d.seat, "raise-rollback", bets[d.seat]) for d in request.decisions if d.action == pb.ACTION_RAISE]
            try:
                decided = call(stub.Decide, request)  # a repeat answers the same token
            except Refused as refused:  # the engine decided nothing: roll the raises back, settle as it stands
                platform.refusals[round_id] = refused.reason
                platform.step(round_id, "dealt", raised, awaiting=0)
                continue
            step_boundary("Decide answered, the answer not stored")
            if decided.raised_amount != sum(a for _, _, a in raised):
                raise RuntimeError("%s: raised_amount %d is not the raises debited" % (round_id, decided.raised_amount))
            platform.step(round_id, "decided", token=decided.round_token)
        elif state in ("dealt", "decided"):
            settled = call(stub.Settle, pb.SettleRequest(round_token=token, round_id=round_id))
            step_boundary("Settle answered, nothing credited")
            platform.step(round_id, "settled", [(r.seat, "credit", r.returned) for r in settled.results],
                          settle_response=settled.SerializeToString())
            return settled
        else:
            return None


def play_round(stub, pb, rules, platform, rng, sandbox_cards, verifier):
    """One round, as a platform drives it. Returns (ok, hand class name, line)."""
    table_id = rules.table_id
    lo, hi = rules.table_limits.min_bet, rules.table_limits.max_bet
    round_id = "py-" + str(uuid.uuid4())
    # Commit for this round (id and nonce): show the commitment, nonce and table to the
    # player before they pick their client seed. The commitment serves this round only.
    nonce = rng.randrange(1 << 63)
    committed = call(stub.CommitSeed, pb.CommitSeedRequest(round_id=round_id, nonce=nonce, table_id=table_id))
    step_boundary("CommitSeed answered, nothing stored")
    ok = committed.nonce == nonce and committed.table_id == table_id and committed.sandbox == rules.sandbox
    client_seed = "python player %d" % rng.randrange(1 << 30)
    bets = [rng.randrange(lo, min(hi, 10 * lo) + 1) for _ in range(rng.randint(1, 7))]
    request = pb.StartRoundRequest(
        commitment_token=committed.commitment_token, client_seed=client_seed, nonce=nonce, round_id=round_id,
        seats=[pb.SeatBet(bet=b) for b in bets], player_limits=pb.Limits(min_bet=lo, max_bet=hi),
        table_id=table_id, sandbox_cards=sandbox_cards or [])
    platform.new_round(round_id, request)

    def decide(view):  # raise on wide spreads (the optimal rule), all seats in one call
        return pb.ACTION_RAISE if view.spread >= 7 or sandbox_cards else pb.ACTION_STAND

    settled = advance(stub, pb, platform, round_id, decide)
    if settled is None:
        return False, "refused", "%s  StartRound refused (bets rolled back)" % round_id
    view = settled.round
    cls = pb.HandClass.Name(view.hand_class)
    line = "%s  %s %s  %-27s" % (round_id[:11], view.first_card.code, view.second_card.code, cls)
    if sandbox_cards:
        ok = ok and view.sandbox and [view.first_card.code, view.second_card.code] == sandbox_cards[:2]
    # A retried Settle returns the same settlement, and the repeated credit keys move nothing.
    state, _, token, _, _, _ = platform.round(round_id)
    again = call(stub.Settle, pb.SettleRequest(round_token=token))
    platform.step(round_id, state, [(r.seat, "credit", r.returned) for r in again.results])
    ok = ok and settled == again and settled.total_returned == sum(r.returned for r in settled.results)
    ok = ok and all(r.returned == expected_return(pb, rules, view, r) for r in settled.results)
    reveal = json.loads(settled.reveal_json)
    ok = ok and reveal.get("transcript") == settled.transcript and reveal.get("commitment") == committed.commitment
    # Show the reveal; check it independently against what the player was shown. A sandbox
    # round's reveal is refused by the verifier: it is never a fair round.
    if rules.sandbox:
        checked = view.sandbox and reveal.get("format") == "reddog-sandbox-reveal-v1" \
            and verifier_refuses(verifier, settled.reveal_json)
    else:
        shown = {"commitment": committed.commitment, "client_seed": client_seed, "nonce": nonce,
                 "round_id": round_id, "bets": ",".join(str(b) for b in bets)}
        checked = verifier_accepts(verifier, settled.reveal_json, shown)
    third = view.third_card.code if view.HasField("third_card") else "--"
    line += "  third %s  staked %6d returned %6d  %s" % (
        third, settled.total_staked, settled.total_returned,
        ("sandbox reveal refused by the verifier" if rules.sandbox else "verified") if checked and ok else "FAILED")
    return ok and checked, cls, line


def refused_decide_rolls_back(stub, pb, rules, platform, rng):
    """A Decide refused for good (here: one seat twice, DUPLICATE_SEAT) after its raise was
    debited: the raise is rolled back and the round settled as it stands. Returns failures."""
    for _ in range(20):  # until a deal that asks for decisions
        round_id = "py-" + str(uuid.uuid4())
        nonce = rng.randrange(1 << 63)
        committed = call(stub.CommitSeed, pb.CommitSeedRequest(round_id=round_id, nonce=nonce, table_id=rules.table_id))
        bet = rules.table_limits.min_bet
        platform.new_round(round_id, pb.StartRoundRequest(
            commitment_token=committed.commitment_token, client_seed="refused decide", nonce=nonce,
            round_id=round_id, seats=[pb.SeatBet(bet=bet)], table_id=rules.table_id,
            player_limits=pb.Limits(min_bet=bet, max_bet=rules.table_limits.max_bet),
            sandbox_cards=SANDBOX_DEALS[0] if rules.sandbox else []))
        platform.step(round_id, "bets_debited", [(0, "bet", -bet)])
        state, start, _, _, _, _ = platform.round(round_id)
        started = call(stub.StartRound, pb.StartRoundRequest.FromString(start))
        platform.step(round_id, "dealt", token=started.round_token, awaiting=int(started.round.awaiting_decisions),
                      started=started.SerializeToString())
        if not started.round.awaiting_decisions:
            advance(stub, pb, platform, round_id)
            continue
        twice = pb.DecideRequest(round_token=started.round_token, round_id=round_id,
                                 decisions=[pb.SeatDecision(seat=0, action=pb.ACTION_RAISE)] * 2)
        platform.step(round_id, "raises_debited", [(0, "raise", -bet)], decide_request=twice.SerializeToString())
        settled = advance(stub, pb, platform, round_id)
        moves = dict(platform.db.execute("SELECT kind, amount FROM wallet WHERE round_id = ?", (round_id,)))
        ok = settled is not None and settled.total_staked == bet and moves.get("raise-rollback") == bet \
            and sum(moves.values()) == settled.total_returned - bet \
            and platform.refusals.get(round_id) == pb.DUPLICATE_SEAT
        print("%s  a refused Decide: raise %d rolled back, settled staked %d returned %d  %s" % (
            round_id[:11], bet, settled.total_staked, settled.total_returned, "ok" if ok else "FAILED"))
        return 0 if ok else 1
    print("FAILED: no deal asked for decisions in 20 rounds")
    return 1


def sweep(stub, pb, platform, trails, reddog):
    """Finishes every round of the platform's own that is not settled or void (the list to
    work through); with `trails`, cross-checks that every round the engine's audit trails show
    open is one the platform voided. Returns the number of problems."""
    rounds = platform.unfinished()
    for round_id in rounds:
        settled = advance(stub, pb, platform, round_id)
        print("sweeper: %s %s" % (round_id, "settled, credited %d" % settled.total_returned if settled else "void"))
    problems = 0
    if trails:
        problems = cross_check(platform, trails, reddog)
    print("sweeper: %d round(s) finished, %d problem(s)" % (len(rounds), problems))
    return problems


def wallet_matches_engine(platform, pb):
    """1 (a failure) when a settled round's wallet differs from the engine's Settle answer."""
    mismatches = platform.stake_mismatches(pb)
    for line in mismatches:
        print("FAILED: %s" % line)
    settled = platform.db.execute("SELECT COUNT(*) FROM rounds WHERE state = 'settled'").fetchone()[0]
    print("wallet against the engine's Settle answers: %d settled round(s), %d seat(s) differ" % (settled, len(mismatches)))
    return 1 if mismatches else 0


def cross_check(platform, trails, reddog, wait=10.0):
    """Every round the engine's trails show open must be one the platform voided. A round the
    platform has settled may still be on its way to the trail (the engine writes its records
    in batches, off the call's path): the check is repeated until the trail shows it settled,
    for `wait` seconds at most; only then is it a problem. Returns the number of problems."""
    deadline = time.monotonic() + wait
    while True:
        out = subprocess.run([reddog, "audit-log", "--open-rounds", "--json", *trails], capture_output=True, text=True)
        if out.returncode not in (0, 1):
            print("sweeper: reddog audit-log failed: %s" % out.stderr.strip())
            return 1
        problems, on_the_way = [], []
        for f in json.loads(out.stdout)["findings"]:
            row = platform.round(f["round_id"]) if f.get("round_id") else None
            if f["kind"] != "open_round":
                problems.append("audit finding %s on %s: %s" % (f["kind"], f.get("round_id"), f["detail"]))
            elif row is not None and row[0] == "settled":
                on_the_way.append(f["round_id"])
            elif row is None or row[0] != "void":
                problems.append("the trail shows %s open; the platform has it %s" % (f["round_id"], row and row[0]))
        if not on_the_way or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    problems += ["the trail still shows %s open %.0f s after the platform settled it" % (r, wait) for r in on_the_way]
    for p in problems:
        print("sweeper: %s" % p)
    return len(problems)


def export_ledger(platform, path):
    rows = platform.ledger_rows()
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        ledger = csv.writer(f, lineterminator="\n")
        if new:
            ledger.writerow(["round_id", "seat", "staked", "credited"])
        ledger.writerows(rows)
        f.flush()
        os.fsync(f.fileno())
    platform.mark_exported(sorted({r[0] for r in rows}))


def play(stub, pb, args):
    rng = random.Random()
    platform = Platform(args.db)
    failures = sweep(stub, pb, platform, args.audit_trail, args.reddog)  # what a crash left
    if args.sweep:
        if args.ledger:
            export_ledger(platform, args.ledger)
        hanging = platform.hanging()
        print("hanging stakes: %d" % hanging)
        return failures + hanging + wallet_matches_engine(platform, pb)
    table = choose_table(stub, pb, args.table, args.sandbox)
    rules = call(stub.GetRules, pb.GetRulesRequest(table_id=table.table_id))
    print("table %s%s: %d deck(s), limits %d..%d %s, 3-of-a-kind %d:1, rtp %s, %s" % (
        rules.table_id, " (sandbox)" if rules.sandbox else "", rules.decks, rules.table_limits.min_bet,
        rules.table_limits.max_bet, rules.currency.code, rules.three_of_a_kind_odds, rules.rtp_decimal or "?",
        rules.fairness_algorithm))
    classes = {}
    for i in range(args.rounds):
        deal = SANDBOX_DEALS[i % len(SANDBOX_DEALS)] if args.sandbox else None
        ok, cls, line = play_round(stub, pb, rules, platform, rng, deal, args.verifier)
        classes[cls] = classes.get(cls, 0) + 1
        print(line)
        failures += 0 if ok else 1
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
    except Refused as e:
        if e.reason != pb.COMMITMENT_MISMATCH:
            print("FAILED: another nonce gave %s" % e)
            failures += 1
    failures += refused_decide_rolls_back(stub, pb, rules, platform, rng)
    # A tampered token is refused with INVALID_TOKEN.
    try:
        call(stub.Settle, pb.SettleRequest(round_token=b"\x02r\x01a" + b"\x00" * 40))
        print("FAILED: a forged token was accepted")
        failures += 1
    except Refused as e:
        if e.reason != pb.INVALID_TOKEN:
            print("FAILED: forged token gave %s" % e)
            failures += 1
    if args.sandbox and args.rounds >= len(SANDBOX_DEALS):
        wanted = {"HAND_CLASS_NON_CONSECUTIVE": 11, "HAND_CLASS_CONSECUTIVE": 1, "HAND_CLASS_PAIR": 2}
        if any(classes.get(k, 0) < n for k, n in wanted.items()):
            print("FAILED: not every hand class was reached: %s" % classes)
            failures += 1
    if args.ledger:
        export_ledger(platform, args.ledger)
    hanging = platform.hanging()
    if hanging:
        print("FAILED: %d round(s) with stakes hanging" % hanging)
        failures += 1
    failures += wallet_matches_engine(platform, pb)
    staked, returned, transactions = platform.totals()
    dealt = platform.db.execute("SELECT COUNT(*) FROM rounds WHERE started IS NOT NULL").fetchone()[0]
    print("rounds %d, dealt %d, hand classes %s, debited %d, credited %d, wallet transactions %d, hanging stakes %d, "
          "failures %d" % (args.rounds, dealt, classes, staked or 0, returned or 0, transactions, hanging, failures))
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--table", default="", help="the table id (default: the default table, or the sandbox table)")
    p.add_argument("--sandbox", action="store_true",
                   help="play at a sandbox table, cycling through a requested deal of every hand class")
    p.add_argument("--db", default=":memory:", help="the platform's SQLite file (wallet and rounds)")
    p.add_argument("--ledger", default="", help="append each settled seat to this CSV (round_id,seat,staked,credited)")
    p.add_argument("--sweep", action="store_true", help="only finish the unfinished rounds in --db, then stop")
    p.add_argument("--audit-trail", nargs="*", default=[], metavar="FILE",
                   help="the engine's audit trails: cross-check the sweep with reddog audit-log --open-rounds")
    p.add_argument("--reddog", default="reddog", help="the reddog binary (for --audit-trail)")
    p.add_argument("--crash-after", type=int, default=0, metavar="N",
                   help="kill this process (SIGKILL) at its Nth step boundary (for the kill test)")
    p.add_argument("--proto", default=os.path.join(REPO, "proto"))
    p.add_argument("--verifier", default=os.path.join(REPO, "verify", "verify.py"))
    a = p.parse_args()
    CRASH["after"] = a.crash_after
    global PB
    pb, pb_grpc = load_stubs(a.proto)
    PB = pb
    with grpc.insecure_channel(a.target) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        try:
            failures = play(pb_grpc.RedDogStub(channel), pb, a)
        except EngineUnreachable as e:
            print("engine unreachable (%s): unfinished rounds are left to the sweeper" % e)
            failures = 1
    print("python client: %d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
