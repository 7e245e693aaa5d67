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
audit-log` no finding, and the platform no hanging stake. Prints "kill test: N passed,
M failed"; exit 1 on any failure.
"""

import argparse
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
    def __init__(self, reddog, work, port):
        self.reddog, self.work, self.port, self.proc, self.starts = reddog, work, port, None, 0

    def start(self):
        self.starts += 1
        trail = os.path.join(self.work, "trail-%02d.jsonl" % self.starts)
        self.proc = subprocess.Popen(
            [self.reddog, "serve", "--listen", "127.0.0.1:%d" % self.port, "--metrics-listen", "127.0.0.1:0",
             "--key-ring-file", os.path.join(self.work, "ring.json"), "--audit-log", trail],
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
        return sorted(os.path.join(self.work, f) for f in os.listdir(self.work) if f.startswith("trail-"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reddog", required=True, help="the reddog binary")
    p.add_argument("--python", default=sys.executable, help="a Python with grpcio, grpcio-tools")
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--rounds", type=int, default=4, help="rounds per run")
    p.add_argument("--seed", type=int, default=None)
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
    print("kill test: runs %s" % kinds)
    print("kill test: the example killed itself after: %s" % "; ".join("%s (%d)" % kv for kv in sorted(hit.items())))
    print("kill test: %d passed, %d failed" % (passed, failed))
    if not failed:
        shutil.rmtree(work)  # kept on a failure, to look at
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
