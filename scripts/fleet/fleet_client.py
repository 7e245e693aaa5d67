#!/usr/bin/env python3
"""Plays Red Dog rounds continuously against a fleet of replicas, each call on a random one,
for scripts/ci.d/47-fleet-kube.sh (the rolls of docs/OPERATIONS.md under load).

    fleet_client.py --endpoints FILE --phase FILE --stop FILE --status FILE \
        --ledger ledger.csv --summary summary.json [--workers 4] [--pause 0.05]

FILE `--endpoints` holds the gRPC addresses of the ready replicas, one a line; the step
rewrites it as pods leave and join (a Service's endpoints). Every call (CommitSeed,
StartRound, Decide, Settle and a repeated Settle) goes to a random address from it, retried on
another on UNAVAILABLE, RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED as a platform does. Each
round is counted under the phase named in `--phase` at its CommitSeed. Per round it checks:
every call answered (a refusal is recorded with its code and ErrorInfo reason), the repeated
Settle answers the same, the reveal's rules digest is the CommitSeed's, and every seat is
paid by the rules of that digest (GetRules asked of the replica that made the commitment).
`--status` is rewritten twice a second with the start time of the oldest round in flight
(the step waits on it before retiring a key). Touching `--stop` ends the run once the rounds
in flight are done; the summary (JSON) and one line per phase are then written.
Exit status 0 when the run itself worked (the step judges the figures).
"""

import argparse
import csv
import json
import os
import random
import sys
import threading
import time
import uuid

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
from reddog_client import DEFINITE, expected_return, load_stubs, retry_delay, rpc_status  # noqa: E402

if rpc_status is not None:
    from google.rpc import error_details_pb2


def reason_of(err):
    """`CODE/REASON` of a refused call (the ErrorInfo reason when the server sent one)."""
    reason = ""
    status = rpc_status.from_call(err) if rpc_status is not None else None
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
    return "%s/%s" % (err.code().name, reason or "-")


class Refused(Exception):
    def __init__(self, method, err):
        super().__init__("%s: %s %s" % (method, reason_of(err), err.details()))
        self.key = "%s %s" % (method, reason_of(err))


class Fleet:
    """The replicas' addresses (re-read when the file changes) and one channel per address."""

    def __init__(self, path, pb_grpc):
        self.path, self.pb_grpc = path, pb_grpc
        self.lock = threading.Lock()
        self.mtime, self.addrs, self.stubs = None, [], {}
        self.retries = {}  # status code -> calls retried on another replica

    def pick(self):
        with self.lock:
            mtime = os.stat(self.path).st_mtime_ns
            if mtime != self.mtime:
                with open(self.path) as f:
                    self.addrs = [a.strip() for a in f if a.strip()]
                self.mtime = mtime
                # A replica that left the endpoints is gone for good: a pod replaced on the
                # same port is another process, reached over a new connection.
                for gone in set(self.stubs) - set(self.addrs):
                    del self.stubs[gone]
            addr = random.choice(self.addrs)
            if addr not in self.stubs:
                self.stubs[addr] = self.pb_grpc.RedDogStub(grpc.insecure_channel(addr, options=[
                    ("grpc.use_local_subchannel_pool", 1), ("grpc.keepalive_time_ms", 2000),
                    ("grpc.keepalive_timeout_ms", 2000)]))
            return addr, self.stubs[addr]

    def call(self, method, request, addr=None, attempts=10):
        """One call on a random replica (or on `addr`), retried on another on every unknown
        outcome (any code but a definite refusal's, INTEGRATION.md). Returns (answer, the
        address that answered)."""
        for attempt in range(1, attempts + 1):
            with self.lock:
                stub = self.stubs.get(addr) if attempt == 1 else None
            if stub is None:
                at, stub = self.pick()
            else:
                at = addr
            try:
                return getattr(stub, method)(request, timeout=5), at
            except grpc.RpcError as err:
                if err.code() in DEFINITE or attempt == attempts:
                    raise Refused(method, err) from None
                with self.lock:
                    self.retries[err.code().name] = self.retries.get(err.code().name, 0) + 1
                time.sleep(retry_delay(err, attempt))
        raise AssertionError("unreachable")


class Run:
    def __init__(self, args, pb, pb_grpc):
        self.args, self.pb = args, pb
        self.fleet = Fleet(args.endpoints, pb_grpc)
        self.lock = threading.Lock()
        self.rules = {}  # rules digest -> GetRulesResponse
        self.phases = {}  # phase -> figures
        self.findings = []
        self.inflight = {}  # worker -> start time of its round
        self.ledger_file = open(args.ledger, "w", newline="")
        self.ledger = csv.writer(self.ledger_file, lineterminator="\n")
        self.ledger.writerow(["round_id", "seat", "staked", "credited"])

    def phase(self):
        try:
            with open(self.args.phase) as f:
                return f.read().strip() or "steady"
        except OSError:
            return "steady"

    def figures(self, phase):
        return self.phases.setdefault(phase, {"settled": 0, "refused": {}, "failed": 0, "lost": 0,
                                              "staked": 0, "returned": 0, "digests": {}})

    def finding(self, phase, text):
        with self.lock:
            self.figures(phase)["failed"] += 1
            if len(self.findings) < 50:
                self.findings.append("%s: %s" % (phase, text))

    def rules_for(self, digest, table_id, addr):
        """The rules of `digest`, asked of the replica that made the commitment."""
        with self.lock:
            if digest in self.rules:
                return self.rules[digest]
        # The replica that made the commitment, else any that serves the digest.
        for at in [addr] + list(self.fleet.addrs):
            got, _ = self.fleet.call("GetRules", self.pb.GetRulesRequest(table_id=table_id), addr=at)
            if got.rules_digest == digest:
                break
        else:
            return None
        with self.lock:
            self.rules[digest] = got
        return got

    def play(self, rng):
        pb, fleet = self.pb, self.fleet
        phase = self.phase()
        round_id = "fleet-" + str(uuid.uuid4())
        nonce = rng.randrange(1 << 63)
        started = False
        try:
            committed, addr = fleet.call("CommitSeed", pb.CommitSeedRequest(round_id=round_id, nonce=nonce))
            digest = committed.rules_digest
            rules = self.rules_for(digest, committed.table_id, addr)
            if rules is None:
                self.finding(phase, "%s: the replica that made the commitment does not serve its digest" % round_id)
                return
            lo, hi = rules.table_limits.min_bet, rules.table_limits.max_bet
            bets = [rng.randrange(lo, min(hi, 10 * lo) + 1) for _ in range(rng.randint(1, 7))]
            start = pb.StartRoundRequest(
                commitment_token=committed.commitment_token, client_seed="fleet %d" % rng.randrange(1 << 30),
                nonce=nonce, round_id=round_id, seats=[pb.SeatBet(bet=b) for b in bets],
                player_limits=pb.Limits(min_bet=lo, max_bet=hi), table_id=committed.table_id)
            begun, _ = fleet.call("StartRound", start)
            started = True
            token, view = begun.round_token, begun.round
            if view.awaiting_decisions:
                action = pb.ACTION_RAISE if view.spread >= 7 else pb.ACTION_STAND
                decided, _ = fleet.call("Decide", pb.DecideRequest(
                    round_token=token, round_id=round_id,
                    decisions=[pb.SeatDecision(seat=s.seat, action=action) for s in view.seats]))
                token = decided.round_token
            settled, _ = fleet.call("Settle", pb.SettleRequest(round_token=token, round_id=round_id))
            again, _ = fleet.call("Settle", pb.SettleRequest(round_token=token, round_id=round_id))
        except Refused as refused:
            with self.lock:
                f = self.figures(phase)
                f["refused"][refused.key] = f["refused"].get(refused.key, 0) + 1
                if started:  # a started round that cannot be settled is lost
                    f["lost"] += 1
                if len(self.findings) < 50:
                    self.findings.append("%s: %s refused: %s" % (phase, round_id, refused))
            return
        problems = []
        if settled != again:
            problems.append("a repeated Settle answered differently")
        if settled.reveal.rules_digest != digest:
            problems.append("reveal digest %s, CommitSeed's %s" % (settled.reveal.rules_digest[:12], digest[:12]))
        for r in settled.results:
            want = expected_return(pb, rules, settled.round, r)
            if r.returned != want:
                problems.append("seat %d returned %d, the CommitSeed's rules pay %d" % (r.seat, r.returned, want))
        with self.lock:
            self.ledger.writerows([round_id, r.seat, r.stake, r.returned] for r in settled.results)
            f = self.figures(phase)
            f["settled"] += 1
            f["staked"] += settled.total_staked
            f["returned"] += settled.total_returned
            f["digests"][digest[:12]] = f["digests"].get(digest[:12], 0) + 1
        for p in problems:
            self.finding(phase, "%s: %s" % (round_id, p))

    def worker(self, n, stop):
        rng = random.Random()
        while not stop.is_set():
            with self.lock:
                self.inflight[n] = time.time()
            try:
                self.play(rng)
            except Exception as e:  # noqa: BLE001 - a client bug must show, not kill the run
                self.finding(self.phase(), "client error: %r" % e)
            with self.lock:
                self.inflight.pop(n, None)
            stop.wait(self.args.pause)

    def status(self):
        with self.lock:
            oldest = min(self.inflight.values(), default=None)
            settled = sum(f["settled"] for f in self.phases.values())
        tmp = self.args.status + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"oldest_inflight": oldest, "settled": settled, "at": time.time()}, f)
        os.replace(tmp, self.args.status)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("endpoints", "phase", "stop", "status", "ledger", "summary"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--pause", type=float, default=0.05, help="seconds each player waits between rounds")
    p.add_argument("--proto", default=os.path.join(os.path.dirname(__file__), "..", "..", "proto"))
    a = p.parse_args()
    pb, pb_grpc = load_stubs(os.path.abspath(a.proto))
    run = Run(a, pb, pb_grpc)
    stop = threading.Event()
    workers = [threading.Thread(target=run.worker, args=(n, stop)) for n in range(a.workers)]
    began = time.time()
    for w in workers:
        w.start()
    while not os.path.exists(a.stop):
        run.status()
        time.sleep(0.5)
    stop.set()
    for w in workers:
        w.join()
    run.status()
    run.ledger_file.close()
    order = list(run.phases)
    summary = {"phases": {k: run.phases[k] for k in order}, "findings": run.findings,
               "retries": run.fleet.retries, "seconds": round(time.time() - began, 1)}
    with open(a.summary, "w") as f:
        json.dump(summary, f, indent=1)
    for name in order:
        f = run.phases[name]
        refused = sum(f["refused"].values())
        print("  %-13s rounds %5d settled, %d refused %s, %d lost, %d failed checks; digests %s" % (
            name, f["settled"], refused, json.dumps(f["refused"]) if refused else "", f["lost"], f["failed"],
            " ".join("%s…:%d" % kv for kv in f["digests"].items())))
    print("  client: calls retried on another replica %s, %.0f s" % (run.fleet.retries or "none", time.time() - began))
    for line in run.findings[:5]:
        print("    " + (line if len(line) < 240 else line[:240] + "…"))
    if len(run.findings) > 5:
        print("    … %d more" % (len(run.findings) - 5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
