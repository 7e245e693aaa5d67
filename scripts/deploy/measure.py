#!/usr/bin/env python3
"""Measures the idle and loaded RSS and CPU of a `reddog serve` process (for the resource
requests and limits in deploy/; results recorded in docs/OPERATIONS.md, "Sizing").

  python scripts/deploy/measure.py --binary target/release/reddog \
      [--idle-secs 10] [--load-secs 30] [--concurrency 8]

Starts the binary on 127.0.0.1 (port 0) with deploy/base/table.json and a key ring from
`reddog keygen`, samples /proc/PID/status (VmRSS, VmHWM) and /proc/PID/stat (utime+stime)
while idle, then drives full rounds (CommitSeed -> StartRound -> Decide (raise) when the
hand awaits decisions -> Settle) from a loopback Python grpcio client with N threads, and
checks every call's gRPC status. Needs grpcio and grpcio-tools (stubs are generated from
proto/ into a temporary directory). Loopback only; bounded in time.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def stubs(tmp: str):
    from grpc_tools import protoc
    import grpc_tools
    inc = str(Path(grpc_tools.__file__).parent / "_proto")
    rc = protoc.main(["protoc", f"-I{ROOT / 'proto'}", f"-I{inc}", f"--python_out={tmp}",
                      f"--grpc_python_out={tmp}", "reddog/v1/reddog.proto"])
    assert rc == 0, "protoc failed"
    sys.path.insert(0, tmp)
    return (importlib.import_module("reddog.v1.reddog_pb2"),
            importlib.import_module("reddog.v1.reddog_pb2_grpc"))


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def proc_mem(pid: int) -> dict[str, int]:
    out = {}
    for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = ln.partition(":")
        if k in ("VmRSS", "VmHWM", "Threads"):
            out[k] = int(v.split()[0])
    return out


def ok_count(maddr: str, method: str) -> int:
    import urllib.request
    body = urllib.request.urlopen(f"http://{maddr}/metrics", timeout=5).read().decode()
    total = 0
    for ln in body.splitlines():
        if ln.startswith("reddog_rpc_requests_total{") and f'method="{method}"' in ln \
                and 'code="OK"' in ln:
            total += int(float(ln.rsplit(" ", 1)[1]))
    return total


def h2load(a, addr: str, maddr: str, pid: int) -> int:
    """CommitSeed calls at high concurrency with h2load. h2load only sees HTTP status (gRPC
    errors are HTTP 200 with a grpc-status trailer), so the gRPC outcome is checked on the
    server's own counter: reddog_rpc_requests_total{method="CommitSeed",code="OK"} must grow
    by exactly the number of requests. Returns the number of calls not answered OK."""
    import shutil
    if not shutil.which("h2load"):
        print("h2load: not installed (apt-get install nghttp2-client); skipped")
        return 0
    msg = b"\x0a\x06h2load"                       # CommitSeedRequest{round_id: "h2load"}
    frame = b"\x00" + len(msg).to_bytes(4, "big") + msg
    body = Path(tempfile.mkdtemp()) / "commit.bin"
    body.write_bytes(frame)
    before = ok_count(maddr, "CommitSeed")
    c0, t0 = proc_cpu(pid), time.monotonic()
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], proc_mem(pid)["VmRSS"])
            time.sleep(0.1)

    threading.Thread(target=sample, daemon=True).start()
    r = subprocess.run(["h2load", "-n", str(a.h2load_requests), "-c", str(a.h2load_clients),
                        "-m", str(a.h2load_streams), "-d", str(body),
                        "-H", "content-type: application/grpc", "-H", "te: trailers",
                        f"http://{addr}/reddog.v1.RedDog/CommitSeed"],
                       capture_output=True, text=True, timeout=300)
    done.set()
    dt, cpu = time.monotonic() - t0, proc_cpu(pid) - c0
    m = proc_mem(pid)
    ok = ok_count(maddr, "CommitSeed") - before
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("requests:")), r.stdout[-300:])
    print(f"h2load CommitSeed: {a.h2load_requests} requests, {a.h2load_clients} connections x "
          f"{a.h2load_streams} streams, {dt:.1f} s ({a.h2load_requests / dt:.0f}/s); {line.strip()}")
    print(f"h2load: gRPC OK by the server's counter: {ok}; server CPU {cpu / dt * 1000:.0f} "
          f"millicores average, {cpu / max(ok, 1) * 1e6:.1f} CPU-us per call; VmRSS peak "
          f"{max(peak[0], m['VmRSS']) / 1024:.1f} MiB, VmHWM {m['VmHWM'] / 1024:.1f} MiB")
    return a.h2load_requests - ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(ROOT / "target/release/reddog"))
    ap.add_argument("--idle-secs", type=float, default=10)
    ap.add_argument("--load-secs", type=float, default=30)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--h2load-requests", type=int, default=0,
                    help="then also N CommitSeed calls with h2load (apt nghttp2-client)")
    ap.add_argument("--h2load-clients", type=int, default=16)
    ap.add_argument("--h2load-streams", type=int, default=16)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    pb, pbg = stubs(tmp)
    ring = Path(tmp) / "ring.json"
    # `--out`: created 0600 (the engine refuses a ring others may read).
    subprocess.run([a.binary, "keygen", "--id", "m", "--out", str(ring)], check=True)
    proc = subprocess.Popen([a.binary, "serve", "--listen", "127.0.0.1:0", "--metrics-listen",
                             "127.0.0.1:0", "--key-ring-file", str(ring), "--table-config",
                             str(ROOT / "deploy/base/table.json"), "--log-format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={"RUST_LOG": "warn", "PATH": "/usr/bin:/bin"})
    addr = maddr = None
    assert proc.stdout is not None
    for ln in proc.stdout:
        m = re.search(r"listening on (127\.0\.0\.1:\d+)", ln)
        if m:
            addr = m.group(1)
        m = re.search(r"metrics on (127\.0\.0\.1:\d+)", ln)
        if m:
            maddr = m.group(1)
        if addr and maddr:
            break
    assert addr, "no listening line"
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    pid = proc.pid
    try:
        time.sleep(1)
        m0, c0 = proc_mem(pid), proc_cpu(pid)
        time.sleep(a.idle_secs)
        m1, c1 = proc_mem(pid), proc_cpu(pid)
        idle_cpu = (c1 - c0) / a.idle_secs
        print(f"idle ({a.idle_secs:.0f} s): VmRSS {m1['VmRSS'] / 1024:.1f} MiB, "
              f"VmHWM {m1['VmHWM'] / 1024:.1f} MiB, threads {m1['Threads']}, "
              f"CPU {idle_cpu * 1000:.2f} millicores")

        counts = {"calls": 0, "rounds": 0, "errors": 0}
        lock = threading.Lock()
        stop = time.monotonic() + a.load_secs
        codes: dict[str, int] = {}

        def worker(n: int) -> None:
            ch = grpc.insecure_channel(addr)
            stub = pbg.RedDogStub(ch)
            calls = rounds = errors = 0
            i = 0
            while time.monotonic() < stop:
                i += 1
                rid = f"m{n}-{i}"
                try:
                    c = stub.CommitSeed(pb.CommitSeedRequest(round_id=rid), timeout=5)
                    s = stub.StartRound(pb.StartRoundRequest(
                        commitment_token=c.commitment_token, client_seed=f"seed-{n}", nonce=i,
                        round_id=rid, seats=[pb.SeatBet(bet=1000)],
                        player_limits=pb.Limits(min_bet=500, max_bet=30000)), timeout=5)
                    calls += 2
                    token = s.round_token
                    if s.round.awaiting_decisions:
                        allowed = list(s.round.seats[0].allowed_actions)
                        action = pb.ACTION_RAISE if pb.ACTION_RAISE in allowed else allowed[0]
                        d = stub.Decide(pb.DecideRequest(round_token=token, round_id=rid, decisions=[
                            pb.SeatDecision(seat=s.round.seats[0].seat, action=action)]), timeout=5)
                        token = d.round_token
                        calls += 1
                    stub.Settle(pb.SettleRequest(round_token=token, round_id=rid), timeout=5)
                    calls += 1
                    rounds += 1
                except grpc.RpcError as e:
                    errors += 1
                    with lock:
                        codes[e.code().name] = codes.get(e.code().name, 0) + 1
            ch.close()
            with lock:
                counts["calls"] += calls
                counts["rounds"] += rounds
                counts["errors"] += errors

        t0, c2 = time.monotonic(), proc_cpu(pid)
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(a.concurrency)]
        for t in threads:
            t.start()
        peak_rss = 0
        while any(t.is_alive() for t in threads):
            peak_rss = max(peak_rss, proc_mem(pid)["VmRSS"])
            time.sleep(0.2)
        dt, c3 = time.monotonic() - t0, proc_cpu(pid)
        m2 = proc_mem(pid)
        cpu = c3 - c2
        rate = counts["calls"] / dt
        print(f"load ({dt:.0f} s, {a.concurrency} client threads): {counts['calls']} calls "
              f"({rate:.0f}/s), {counts['rounds']} rounds, {counts['errors']} errors {codes}")
        print(f"load: server CPU {cpu / dt * 1000:.0f} millicores average, "
              f"{cpu / max(counts['calls'], 1) * 1e6:.1f} CPU-us per call; "
              f"VmRSS peak {peak_rss / 1024:.1f} MiB, VmHWM {m2['VmHWM'] / 1024:.1f} MiB, "
              f"threads {m2['Threads']}")
        if a.h2load_requests:
            errors = h2load(a, addr, maddr, pid) or 0
            counts["errors"] += errors
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
        return 1 if counts["errors"] else 0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
