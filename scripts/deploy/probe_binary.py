#!/usr/bin/env python3
"""Start the real binary the way the pod does and record what it serves.

Runs `reddog serve` on 127.0.0.1 (port 0 for gRPC) with the base's table.json and a key
ring from `reddog keygen` in a file, waits for the "listening on 127.0.0.1:PORT" log line,
asks grpc.health.v1 for the status of the health services the manifests' probes name (and
the well-known ones), scrapes /metrics, then sends SIGTERM and waits (bounded) for exit.
Writes {"health": {service: status}, "metric_names": [...], "metrics_text": "...",
"exit_code": n} as JSON.
Exits 0 when it could do all of that, 1 otherwise (printing why).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

NAMES = ["", "reddog.v1.RedDog", "liveness"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--service", action="append", default=[], help="extra health service names")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quiet", action="store_true", help="print only on failure")
    ap.add_argument("--ring", help="use this key ring file instead of a fresh `reddog keygen` one")
    ap.add_argument("--certified-rules", help="serve with --certified-rules FILE")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        ring = Path(tmp) / "key-ring.json"
        if a.ring:
            ring = Path(a.ring)
        else:
            kg = subprocess.run([a.binary, "keygen", "--id", "ci", "--out", str(ring)],
                                capture_output=True, text=True, timeout=30)
            if kg.returncode != 0:
                print(f"reddog keygen failed: {kg.stderr.strip()}")
                return 1
        cmd = [a.binary, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
               "--key-ring-file", str(ring), "--table-config", a.table,
               "--drain-timeout-secs", "5", "--log-format", "text"]
        if a.certified_rules:
            cmd += ["--certified-rules", a.certified_rules]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={"RUST_LOG": "info", "PATH": "/usr/bin:/bin"})
        lines: list[str] = []
        port: list[int] = []
        mport: list[int] = []

        def pump() -> None:
            assert proc.stdout is not None
            for ln in proc.stdout:
                lines.append(ln.rstrip())
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", ln)
                if m and not port:
                    port.append(int(m.group(1)))
                m = re.search(r"metrics on 127\.0\.0\.1:(\d+)", ln)
                if m and not mport:
                    mport.append(int(m.group(1)))

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + 30
        while not (port and mport) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not (port and mport):
            proc.kill()
            print("no 'listening on' and 'metrics on' lines; output:\n" + "\n".join(lines[-20:]))
            return 1
        metrics_port = mport[0]
        result: dict = {"health": {}, "metric_names": [], "exit_code": None}
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port[0]}") as ch:
                try:
                    grpc.channel_ready_future(ch).result(timeout=30)
                except grpc.FutureTimeoutError:
                    print(f"cannot connect to 127.0.0.1:{port[0]} within 30 s; output:\n"
                          + "\n".join(lines[-20:]))
                    return 1
                stub = health_pb2_grpc.HealthStub(ch)
                for svc in dict.fromkeys(NAMES + a.service):
                    try:
                        r = stub.Check(health_pb2.HealthCheckRequest(service=svc), timeout=5)
                        st = health_pb2.HealthCheckResponse.ServingStatus.Name(r.status)
                    except grpc.RpcError as e:
                        st = f"error {e.code().name}"
                    result["health"][svc] = st
                    if not a.quiet:
                        print(f"health {svc!r}: {st}")
            for _ in range(50):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                                timeout=2) as resp:
                        body = resp.read().decode()
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                body = ""
                print("could not scrape /metrics")
            names = sorted({m.group(1) for m in
                            re.finditer(r"^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) ", body, re.M)})
            result["metric_names"] = names
            result["metrics_text"] = body
            if not a.quiet:
                print(f"metrics: {len(names)} families")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                result["exit_code"] = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                print("did not exit within 15 s of SIGTERM")
        Path(a.out).write_text(json.dumps(result, indent=2))
        if not a.quiet or result["exit_code"] != 0:
            print(f"exit code after SIGTERM: {result['exit_code']}")
        return 0 if result["exit_code"] == 0 and result["health"] else 1


if __name__ == "__main__":
    sys.exit(main())
