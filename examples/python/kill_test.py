#!/usr/bin/env python3
"""The kill test of the Python example (docs/INTEGRATION.md, "Crashes"): a real engine and
examples/python/reddog_client.py with one SQLite platform file, killed at random steps, then
re-run; afterwards no stake may hang and the ledger must equal the engine's audit trails.

    python3 examples/python/kill_test.py --reddog target/debug/reddog --kills 20

Each of the `--kills` runs plays a few rounds and is cut short at random, one of:
  client  the example kills itself (SIGKILL) at a random step boundary (--crash-after N: after
          a call's answer before it is stored, after a wallet write);
  engine  the engine is SIGKILLed at a random moment while the example plays, and restarted
          on the same port (the example retries with back-off, or gives up and leaves the
          round to the sweeper);
  both    the two at once.
Every run starts with the example's sweeper finishing what the last one left. At the end the
sweeper runs alone with the audit trails (`reddog audit-log --open-rounds` cross-check) and
writes the ledger; then `reddog report --reconcile` must find no difference, `reddog
audit-log` no finding, and the platform no hanging stake.

Then the unknown outcomes (docs/INTEGRATION.md, "Errors"): on a second engine with a sandbox
table, the example plays through examples/python/fault_proxy.py, which forwards the first
StartRound, Decide or Settle to the engine and then answers INTERNAL, UNKNOWN or CANCELLED
instead of the engine's answer — each of the 9 pairs once (`--faults` repeats them). The
example must retry, never roll back: the ledger must equal that engine's trail (`reddog report
--reconcile`), each fault must have fired, and the round whose Decide was answered INTERNAL
must be credited exactly what the engine's Settle answered for it. Prints "kill test: N
passed, M failed"; exit 1 on any failure.
"""

import argparse
import csv
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    def __init__(self, reddog, work, port, extra=(), name="trail"):
        self.reddog, self.work, self.port, self.proc, self.starts = reddog, work, port, None, 0
        self.extra, self.name = list(extra), name

    def start(self):
        self.starts += 1
        trail = os.path.join(self.work, "%s-%02d.jsonl" % (self.name, self.starts))
        self.proc = subprocess.Popen(
            [self.reddog, "serve", "--listen", "127.0.0.1:%d" % self.port, "--metrics-listen", "127.0.0.1:0",
             "--key-ring-file", os.path.join(self.work, "ring.json"), "--audit-log", trail] + self.extra,
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "engine.log"), "a"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise SystemExit("the engine exited at start: see %s/engine.log" % self.work)
                time.sleep(0.05)
        raise SystemExit("the engine did not listen within 30 s")

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        self.proc.wait()

    def trails(self):
        return sorted(os.path.join(self.work, f) for f in os.listdir(self.work)
                      if f.startswith(self.name + "-") and f.endswith(".jsonl"))


class FaultProxy:
    """examples/python/fault_proxy.py in front of `target`, with one fault planned."""

    def __init__(self, python, target, fault):
        self.proc = subprocess.Popen([python, os.path.join(HERE, "fault_proxy.py"), "--target", target,
                                      "--fault", fault], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = self.proc.stdout.readline()  # blocks until the proxy listens (or exits)
        if not first.startswith("proxy listening on "):
            raise SystemExit("fault_proxy.py did not start: %s%s" % (first, self.proc.stdout.read()))
        self.address = first.split()[-1]

    def stop(self):
        """Stops the proxy; returns what it printed after it started listening."""
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=30)
        return out


def round_in_trails(trails, round_id):
    """What the engine recorded of `round_id`: the steps of its Decides, and (step,
    total_staked, total_returned) of each of its Settle answers."""
    decided, settled = [], []
    for trail in trails:
        with open(trail) as f:
            for line in f:
                if round_id not in line:
                    continue
                record = json.loads(line)
                if record.get("round_id") != round_id:
                    continue
                if record.get("event") == "seats_decided":
                    decided.append(record["step"])
                elif record.get("event") == "round_settled":
                    settled.append((record["step"], record["total_staked"], record["total_returned"]))
    return decided, settled


def unknown_outcomes(a, work, client_python, check):
    """The example through the fault proxy: every fault code after every forwarded call."""
    engine = Engine(a.reddog, work, free_port(), ["--allow-sandbox", "--table-config",
                                                  os.path.join(HERE, "..", "sandbox-tables.json")], "proxied")
    engine.start()
    db, ledger = os.path.join(work, "platform-proxied.sqlite"), os.path.join(work, "ledger-proxied.csv")
    fired, decide_internal = 0, None
    cases = [(m, c) for m in ("StartRound", "Decide", "Settle") for c in ("INTERNAL", "UNKNOWN", "CANCELLED")]
    for method, code in cases * a.faults:
        proxy = FaultProxy(client_python, "127.0.0.1:%d" % engine.port, "%s:%s:1" % (method, code))
        run = subprocess.run([client_python, os.path.join(HERE, "reddog_client.py"), "--target", proxy.address,
                              "--db", db, "--ledger", ledger, "--sandbox", "--rounds", "1"],
                             capture_output=True, text=True, timeout=300)
        said = proxy.stop()
        hit = "fault: %s call 1 forwarded (engine answered OK), answered %s" % (method, code) in said
        fired += hit
        rounds = [line.split()[0] for line in run.stdout.splitlines() if line.startswith("py-")]
        ok = run.returncode == 0 and hit and "failures 0" in run.stdout and "rolled back" not in \
            "\n".join(line for line in run.stdout.splitlines() if line.startswith(rounds[0] if rounds else "-"))
        check("%s answered %s after the engine answered it: retried, nothing rolled back" % (method, code), ok,
              run.stdout + run.stderr + said)
        if (method, code) == ("Decide", "INTERNAL") and rounds and decide_internal is None:
            decide_internal = rounds[0]
    engine.kill(signal.SIGTERM)
    check("every planned fault fired (%d of %d)" % (fired, len(cases) * a.faults), fired == len(cases) * a.faults)
    rec = subprocess.run([a.reddog, "report", "--reconcile", ledger, *engine.trails()], capture_output=True, text=True)
    check("through the fault proxy, reddog report --reconcile: the ledger equals the trail",
          rec.returncode == 0 and "differences: 0" in rec.stdout, rec.stdout + rec.stderr)
    print("  " + "\n  ".join(line for line in rec.stdout.splitlines() if line.startswith(("reconcile", "differences"))))
    log = subprocess.run([a.reddog, "audit-log", *engine.trails()], capture_output=True, text=True)
    check("through the fault proxy, reddog audit-log: no finding (no round settled from a token older than "
          "its Decide)", log.returncode == 0, log.stdout + log.stderr)
    # The must-show: the round whose first Decide was forwarded and answered INTERNAL is settled
    # from the token of that Decide, and credited exactly what that Settle answered.
    staked = credited = round_id = None
    with open(ledger) as f:
        rows = [r for r in csv.DictReader(f) if decide_internal and r["round_id"].startswith(decide_internal)]
    if rows:
        round_id = rows[0]["round_id"]
        staked, credited = (sum(int(r[k]) for r in rows) for k in ("staked", "credited"))
    decided, settled = round_in_trails(engine.trails(), round_id) if round_id else ([], [])
    newest = max(decided, default=0)
    check("Decide answered INTERNAL after forwarding: round %s staked %s credited %s; the engine decided it "
          "(step %d) and its Settle answered %s" % (round_id, staked, credited, newest, settled[:1]),
          newest >= 1 and settled and all(s == (newest, staked, credited) for s in settled))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reddog", required=True, help="the reddog binary")
    p.add_argument("--python", default=sys.executable, help="a Python with grpcio, grpcio-tools")
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--rounds", type=int, default=4, help="rounds per run")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--faults", type=int, default=1,
                   help="how often to play each of the 9 (call, fault code) pairs through the fault proxy")
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    passed = failed = 0

    def check(what, ok, detail=""):
        nonlocal passed, failed
        passed, failed = passed + bool(ok), failed + (not ok)
        print("  %s  %s%s" % ("ok  " if ok else "FAIL", what, "" if ok or not detail else ": " + detail[-1500:]))

    work = tempfile.mkdtemp(prefix="reddog-kill-")
    with open(os.path.join(work, "ring.json"), "w", opener=lambda path, flags: os.open(path, flags, 0o600)) as f:
        f.write(subprocess.run([a.reddog, "keygen"], check=True, capture_output=True, text=True).stdout)
    engine = Engine(a.reddog, work, free_port())
    engine.start()
    db = os.path.join(work, "platform.sqlite")
    client = [a.python, os.path.join(HERE, "reddog_client.py"), "--target", "127.0.0.1:%d" % engine.port, "--db", db]
    print("-- kill test: %d runs, seed %d, in %s" % (a.kills, seed, work))
    kinds, swept, hit = {}, 0, {}
    for run in range(1, a.kills + 1):
        kind = rng.choice(["client", "engine", "both"])
        kinds[kind] = kinds.get(kind, 0) + 1
        args = client + ["--rounds", str(a.rounds)]
        if kind != "engine":
            args += ["--crash-after", str(rng.randint(1, 12 * a.rounds))]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if kind != "client":
            time.sleep(rng.uniform(0.3, 1.5))
            engine.kill()
            time.sleep(rng.uniform(0.0, 0.5))
            engine.start()
        out, _ = proc.communicate(timeout=300)
        # Killed, refused for want of an engine, or finished: any of those; never a bug.
        if "Traceback" in out or "FAILED" in out:
            check("run %d (%s): the example failed otherwise than by the kill" % (run, kind), False, out)
        for line in out.splitlines():
            if line.startswith("crash: killed after "):
                where = line[len("crash: killed after "):]
                hit[where] = hit.get(where, 0) + 1
        finished = sum(int(line.split()[1]) for line in out.splitlines() if line.endswith("problem(s)"))
        swept += finished
        print("  run %2d %-6s exit %4s: %d round(s) left by the last run finished by the sweeper, %d played" % (
            run, kind, proc.returncode, finished, sum(1 for line in out.splitlines() if line.startswith("py-"))))
    check("the sweeper finished %d round(s) the kills left unfinished" % swept, swept > 0)
    ledger = os.path.join(work, "ledger.csv")
    sweep = subprocess.run(client + ["--sweep", "--ledger", ledger, "--reddog", a.reddog, "--audit-trail",
                                     *engine.trails()], capture_output=True, text=True)
    check("the sweeper finishes every round, the trails show no round open that the platform did not void",
          sweep.returncode == 0 and "hanging stakes: 0" in sweep.stdout, sweep.stdout + sweep.stderr)
    print("  " + "\n  ".join(line for line in sweep.stdout.splitlines() if not line.startswith("sweeper: py-")))
    engine.kill(signal.SIGTERM)
    rows = sum(1 for _ in open(ledger)) - 1 if os.path.exists(ledger) else 0
    check("the ledger has rows (%d)" % rows, rows > 0)
    rec = subprocess.run([a.reddog, "report", "--reconcile", ledger, *engine.trails()], capture_output=True, text=True)
    check("reddog report --reconcile: the ledger equals the trails", rec.returncode == 0 and "differences: 0" in rec.stdout,
          rec.stdout + rec.stderr)
    print("  " + "\n  ".join(line for line in rec.stdout.splitlines() if line.startswith(("reconcile", "differences"))))
    log = subprocess.run([a.reddog, "audit-log", *engine.trails()], capture_output=True, text=True)
    check("reddog audit-log: no finding over %d engine runs" % engine.starts, log.returncode == 0, log.stdout + log.stderr)
    print("-- unknown outcomes: the example through fault_proxy.py")
    unknown_outcomes(a, work, a.python, check)
    print("kill test: runs %s" % kinds)
    print("kill test: the example killed itself after: %s" % "; ".join("%s (%d)" % kv for kv in sorted(hit.items())))
    print("kill test: %d passed, %d failed" % (passed, failed))
    if not failed:
        shutil.rmtree(work)  # kept on a failure, to look at
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
