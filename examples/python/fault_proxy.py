#!/usr/bin/env python3
"""A gRPC proxy for the kill test (examples/python/kill_test.py, scripts/ci.d/35-clients.sh):
it forwards every call to the engine unchanged — request bytes, answer bytes, status, message
and trailers (the `google.rpc` details included) — except the calls named by `--fault`, which
it forwards and then answers with a fault instead of the engine's answer, as a reset stream,
a restarting proxy or a load balancer would: the engine acted, the client never learns it.

    python3 examples/python/fault_proxy.py --target 127.0.0.1:50051 --fault Decide:INTERNAL:1

`--fault METHOD:CODE:N` (repeatable): the Nth call (1-based) of METHOD (`StartRound`, `Decide`,
`Settle`, ...) is forwarded, then answered with status CODE (`INTERNAL`, `UNKNOWN`,
`CANCELLED`, any gRPC code name but OK) and no details. Prints `proxy listening on HOST:PORT`
first, then one line `fault: METHOD call N forwarded (engine answered OK), answered CODE` per
fault, flushed at once; serves until killed.
"""

import argparse
import sys
import threading
from concurrent import futures

import grpc


class Proxy(grpc.GenericRpcHandler):
    """Forwards each unary call as bytes over one channel to the engine."""

    def __init__(self, channel, faults):
        self.channel = channel
        self.faults = faults  # {(method, n): grpc.StatusCode}
        self.counts = {}
        self.lock = threading.Lock()

    def fault(self, method):
        """The fault for this call of `method`, if one is planned (counts the call)."""
        with self.lock:
            n = self.counts[method] = self.counts.get(method, 0) + 1
            return n, self.faults.get((method, n))

    def service(self, handler_call_details):
        full = handler_call_details.method  # "/reddog.v1.RedDog/Decide"
        method = full.rsplit("/", 1)[-1]
        forward = self.channel.unary_unary(full)  # no (de)serializers: bytes both ways

        def handle(request, context):
            n, fault = self.fault(method)
            metadata = [(k, v) for k, v in context.invocation_metadata()
                        if not k.startswith((":", "grpc-")) and k != "user-agent"]
            try:
                answer, call = forward.with_call(request, timeout=context.time_remaining(), metadata=metadata)
            except grpc.RpcError as err:  # the engine's refusal, passed on as it is
                context.set_trailing_metadata(err.trailing_metadata() or ())
                context.abort(err.code(), err.details() or "")
            if fault is not None:
                print("fault: %s call %d forwarded (engine answered OK), answered %s" % (method, n, fault.name),
                      flush=True)
                context.abort(fault, "fault_proxy: %s after forwarding the call" % fault.name)
            context.set_trailing_metadata(call.trailing_metadata() or ())
            return answer

        return grpc.unary_unary_rpc_method_handler(handle)


def parse_fault(text):
    try:
        method, code, n = text.split(":")
        status = grpc.StatusCode[code]
        if status == grpc.StatusCode.OK or int(n) < 1:
            raise ValueError
        return (method, int(n)), status
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError("%r is not METHOD:CODE:N (e.g. Decide:INTERNAL:1)" % text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", required=True, help="the engine's address, HOST:PORT")
    p.add_argument("--listen", default="127.0.0.1:0", help="where the proxy listens (port 0: any free port)")
    p.add_argument("--fault", type=parse_fault, action="append", default=[], metavar="METHOD:CODE:N")
    a = p.parse_args()
    channel = grpc.insecure_channel(a.target)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[Proxy(channel, dict(a.fault))])
    port = server.add_insecure_port(a.listen)
    server.start()
    print("proxy listening on %s:%d" % (a.listen.rsplit(":", 1)[0], port), flush=True)
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
