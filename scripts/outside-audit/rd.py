"""Outside auditor's own re-derivation of a Red Dog round from docs/FAIRNESS.md alone
(section 3: deal, 4.4: transcript, 4.5 check 3: payouts), plus helpers to run the real
binary and decode gRPC error details. ChaCha20 from the `cryptography` package (OpenSSL),
not verify.py's pure-Python one."""

import atexit
import hashlib
import hmac
import os
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GEN = os.path.join(ROOT, ".tools", "outside-audit", "gen")
if not os.path.exists(os.path.join(GEN, "reddog", "v1", "reddog_pb2_grpc.py")):
    os.makedirs(GEN, exist_ok=True)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + os.path.join(ROOT, "proto"), "--python_out=" + GEN,
                    "--grpc_python_out=" + GEN, os.path.join(ROOT, "proto", "reddog", "v1", "reddog.proto")], check=True)
sys.path.insert(0, GEN)

import grpc  # noqa: E402
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402
from reddog.v1 import reddog_pb2 as pb  # noqa: E402,F401 (re-exported to the probes)
from reddog.v1 import reddog_pb2_grpc as pbg  # noqa: E402

RANKS = "23456789TJQKA"
SUITS = "cdhs"


def f(x: bytes) -> bytes:
    return len(x).to_bytes(4, "big") + x


def words(key: bytes):
    enc = Cipher(algorithms.ChaCha20(key, b"\0" * 16), mode=None).encryptor()
    while True:
        block = enc.update(b"\0" * 64)
        for k in range(0, 64, 4):
            yield int.from_bytes(block[k:k + 4], "little")


def deal(seed: bytes, client_seed: bytes, nonce: int, decks: int, count: int):
    msg = f(b"reddog/deal") + f((1).to_bytes(4, "big")) + f(client_seed) + f(nonce.to_bytes(8, "big")) + f(bytes([decks]))
    key = hmac.new(seed, msg, hashlib.sha256).digest()
    w = words(key)
    shoe = [p % 52 for p in range(52 * decks)]
    for i in range(count):
        n = len(shoe) - i
        limit = 2**32 - 2**32 % n
        x = next(w)
        while x >= limit:
            x = next(w)
        j = i + x % n
        shoe[i], shoe[j] = shoe[j], shoe[i]
    return [RANKS[c // 4] + SUITS[c % 4] for c in shoe[:count]]


def rank(card):
    return RANKS.index(card[0]) + 2


def classify(c1, c2):
    a, b = rank(c1), rank(c2)
    if a == b:
        return "pair", None
    if abs(a - b) == 1:
        return "consecutive", None
    return "non_consecutive", abs(a - b) - 1


def pay(cards, spread_odds, trips_odds, bet, raised):
    """Amount returned to one seat, per RULES.md (unbounded ints)."""
    stake = bet * (2 if raised else 1)
    cls, s = classify(cards[0], cards[1])
    if cls == "pair":
        return stake * (trips_odds + 1) if rank(cards[2]) == rank(cards[0]) else stake
    if cls == "consecutive":
        return stake
    lo, hi = sorted((rank(cards[0]), rank(cards[1])))
    return stake * (spread_odds[s - 1] + 1) if lo < rank(cards[2]) < hi else 0


def t0(commitment_hex, table_id, round_id, nonce, decks, client_seed, spread_odds, trips, bets):
    pay_bytes = b"".join(o.to_bytes(4, "big") for o in list(spread_odds) + [trips])
    bet_bytes = b"".join(b.to_bytes(8, "big") for b in bets)
    return hashlib.sha256(
        f(b"reddog/transcript/v1/start") + f(bytes.fromhex(commitment_hex)) + f(table_id.encode())
        + f(round_id.encode()) + f(nonce.to_bytes(8, "big")) + f(bytes([decks])) + f(client_seed.encode())
        + f(pay_bytes) + f(bet_bytes)).digest()


def tk(prev: bytes, decisions):
    """decisions: list of (seat, 'raise'|'stand') in ascending seat order."""
    body = b"".join(bytes([s, 1 if a == "raise" else 2]) for s, a in decisions)
    return hashlib.sha256(f(b"reddog/transcript/v1/decide") + f(prev) + f(body)).digest()


# --- server ----------------------------------------------------------------------------

class Server:
    def __init__(self, binary, *args, env=None, log_path=None):
        self.log_path = log_path
        self.err = open(log_path, "wb") if log_path else subprocess.DEVNULL
        e = dict(os.environ)
        e.update(env or {})
        args = list(args)
        if "--key-ring" in args:  # the flag is gone (it showed in ps): the variable
            i = args.index("--key-ring")
            e["REDDOG_KEY_RING"] = args[i + 1]
            del args[i:i + 2]
        # The audit trail next to the log (stdout is read only up to the listen lines).
        self.audit_path = (str(log_path) + ".audit.jsonl") if log_path else os.devnull
        self.p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                   "--log-format", "json", "--audit-log", self.audit_path, *args],
                                  stdout=subprocess.PIPE, stderr=self.err, env=e)
        self.addr = self.metrics = None
        deadline = time.time() + 30
        while time.time() < deadline and not (self.addr and self.metrics):
            line = self.p.stdout.readline().decode()
            if not line:
                raise RuntimeError("server exited: rc=%s" % self.p.wait())
            m = re.match(r"listening on (\S+)", line)
            if m:
                self.addr = m.group(1)
            m = re.match(r"metrics on (\S+)", line)
            if m:
                self.metrics = m.group(1)
        self.channel = grpc.insecure_channel(self.addr)
        self.stub = pbg.RedDogStub(self.channel)
        atexit.register(self._kill)

    def _kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def stop(self):
        self.channel.close()
        self.p.terminate()
        self.p.wait(timeout=30)
        if self.log_path:
            self.err.close()


def details(err: grpc.RpcError):
    """(code name, message, {ErrorInfo reason, field, ...}, [violations])"""
    info, viol = {}, []
    for k, v in err.trailing_metadata() or ():
        if k == "grpc-status-details-bin":
            st = status_pb2.Status.FromString(v)
            for d in st.details:
                if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    e = error_details_pb2.ErrorInfo()
                    d.Unpack(e)
                    info = {"reason": e.reason, "domain": e.domain, **dict(e.metadata)}
                elif d.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    e = error_details_pb2.BadRequest()
                    d.Unpack(e)
                    viol += [("bad_request", v.field, v.description) for v in e.field_violations]
                elif d.Is(error_details_pb2.PreconditionFailure.DESCRIPTOR):
                    e = error_details_pb2.PreconditionFailure()
                    d.Unpack(e)
                    viol += [("precondition:" + v.type, v.subject, v.description) for v in e.violations]
                else:
                    viol.append(("other", d.type_url, ""))
    return err.code().name, err.details(), info, viol
