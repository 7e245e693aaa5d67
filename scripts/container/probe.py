#!/usr/bin/env python3
"""gRPC checks of a running engine from outside its container (scripts/ci.d/50-container.sh).

    probe.py health ADDR
        waits (bounded) until Health/Check("") and Health/Check("liveness") answer SERVING.

    probe.py drain ADDR --held N -- STOP-COMMAND...
        opens a Health/Watch("") and N GetRules calls whose request message is withheld (the
        server has the streams, the handlers wait), runs STOP-COMMAND (e.g. `podman stop`) in
        the background, and checks: the Watch turns NOT_SERVING; the held calls then complete
        OK once their messages are sent; STOP-COMMAND exits 0. Prints one JSON line with
        what it saw and how long each part took.

Needs grpcio and grpcio-health-checking. Exit status 0 when every check holds.
"""

import argparse
import json
import queue
import subprocess
import sys
import threading
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def wait_serving(addr, bound):
    deadline = time.monotonic() + bound
    last = None
    while time.monotonic() < deadline:
        try:
            with grpc.insecure_channel(addr) as ch:
                stub = health_pb2_grpc.HealthStub(ch)
                got = {name: stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=2).status
                       for name in ("", "liveness")}
            if all(s == SERVING for s in got.values()):
                return {k or '""': health_pb2.HealthCheckResponse.ServingStatus.Name(v) for k, v in got.items()}
            last = got
        except grpc.RpcError as e:
            last = e.code()
        time.sleep(0.1)
    raise SystemExit("health not SERVING within %.0f s (last: %s)" % (bound, last))


class HeldCall:
    """A GetRules call (unary on the server) sent as a client stream whose one message is
    withheld until release(): the server has accepted the stream, its handler waits."""

    def __init__(self, channel):
        self.gate = threading.Event()
        self.result = queue.Queue()
        call = channel.stream_unary("/reddog.v1.RedDog/GetRules",
                                    request_serializer=lambda b: b, response_deserializer=lambda b: b)

        def requests():
            self.gate.wait(60)
            yield b""  # GetRulesRequest has no fields: its encoding is empty

        def run():
            try:
                call(requests(), timeout=60)
                self.result.put("OK")
            except grpc.RpcError as e:
                self.result.put(e.code().name)

        threading.Thread(target=run, daemon=True).start()

    def release(self):
        self.gate.set()


def drain(addr, held, stop_cmd):
    report = {}
    ch = grpc.insecure_channel(addr)
    grpc.channel_ready_future(ch).result(timeout=10)
    watch = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
    first = next(watch)
    if first.status != SERVING:
        raise SystemExit("Watch(\"\") started as %s" % first.status)
    calls = [HeldCall(ch) for _ in range(held)]
    time.sleep(0.3)  # let the HEADERS reach the server; nothing below depends on this delay
    for c in calls:
        if not c.result.empty():
            raise SystemExit("a held call ended before its message was sent: %s" % c.result.get())

    t0 = time.monotonic()
    stop = subprocess.Popen(stop_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    update = next(watch)  # bounded by the Watch's 60 s deadline
    report["not_serving_after_s"] = round(time.monotonic() - t0, 3)
    if update.status != NOT_SERVING:
        raise SystemExit("Watch(\"\") after SIGTERM: %s, want NOT_SERVING" % update.status)
    watch.cancel()  # a Watch is a call in flight too; the held calls are what this checks
    if stop.poll() is not None:
        raise SystemExit("the stop command finished while calls were in flight")
    for c in calls:
        if not c.result.empty():
            raise SystemExit("an in-flight call was cut off: %s" % c.result.get())
    for c in calls:
        c.release()
    codes = [c.result.get(timeout=15) for c in calls]
    report["held_calls"] = codes
    if codes != ["OK"] * held:
        raise SystemExit("in-flight calls during the drain ended %s" % codes)
    report["held_calls_done_after_s"] = round(time.monotonic() - t0, 3)
    ch.close()
    out, _ = stop.communicate(timeout=60)
    report["stopped_after_s"] = round(time.monotonic() - t0, 3)
    report["stop_command_exit"] = stop.returncode
    if stop.returncode != 0:
        raise SystemExit("stop command failed (%d): %s" % (stop.returncode, out.decode(errors="replace")))
    return report


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("health")
    h.add_argument("addr")
    h.add_argument("--bound", type=float, default=30)
    d = sub.add_parser("drain")
    d.add_argument("addr")
    d.add_argument("--held", type=int, default=4)
    argv = sys.argv[1:]
    stop = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if a.cmd == "health":
        print(json.dumps({"health": wait_serving(a.addr, a.bound)}))
    else:
        if not stop:
            p.error("drain needs -- STOP-COMMAND...")
        print(json.dumps(drain(a.addr, a.held, stop)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
