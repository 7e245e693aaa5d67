"""v1 (pre-transcript) round tokens mid-round with a round id: they decide, settle, and the v2
reveal verifies with both verifiers and this re-derivation."""
import json, os, subprocess, sys, tempfile, hashlib
import rd, v1tok
from rd import pb
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("REDDOG", os.path.join(ROOT, "target", "release", "reddog"))
KEY = bytes(range(100, 132))
srv = rd.Server(BIN, "--key-ring", json.dumps({"primary": "k1", "keys": {"k1": KEY.hex()}}))
bad = 0; n = 0
w = tempfile.mkdtemp()
for nonce in range(200):
    seed = hashlib.sha256(b"s%d" % nonce).digest()
    cards = rd.deal(seed, b"old", nonce, 1, 3)
    cls, _ = rd.classify(cards[0], cards[1])
    if cls != "non_consecutive": continue
    codes = [rd.RANKS.index(x[0]) * 4 + rd.SUITS.index(x[1]) for x in cards]
    # seat 0 raised already (v1 token records no step), seats 1, 2 undecided
    tok = v1tok.seal_v1(KEY, "k1", b"r", v1tok.round_v1(seed, "old", nonce, 1, f"old-{nonce}", False, codes, [1000, 2000, 3000], [1, 0, 0], [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 11]))
    d = srv.stub.Decide(pb.DecideRequest(round_token=tok, decisions=[pb.SeatDecision(seat=2, action=1)]))
    se = srv.stub.Settle(pb.SettleRequest(round_token=d.round_token))
    rv = json.loads(se.reveal_json)
    p = os.path.join(w, "r.json"); open(p, "w").write(se.reveal_json)
    a = subprocess.run([BIN, "verify", p, "--expect-round-id", f"old-{nonce}", "--expect-table-id", "default"], capture_output=True, text=True)
    b = subprocess.run([sys.executable, os.path.join(ROOT, "verify", "verify.py"), p], capture_output=True, text=True)
    t = rd.t0(rv["commitment"], "default", f"old-{nonce}", nonce, 1, "old", [5,4,2,1,1,1,1,1,1,1,1], 11, [1000,2000,3000])
    t = rd.tk(t, [(0, "raise")]); t = rd.tk(t, [(2, "raise")])
    ok = a.returncode == 0 and b.returncode == 0 and t.hex() == rv["transcript"] and rv["decisions"] == [[{"seat":0,"action":"raise"}],[{"seat":2,"action":"raise"}]] and se.step == 2
    pays = [rd.pay(cards, [5,4,2,1,1,1,1,1,1,1,1], 11, b_, r_) for b_, r_ in ((1000, True), (2000, False), (3000, True))]
    ok = ok and [r.returned for r in se.results] == pays
    n += 1; bad += not ok
    if not ok: print("BAD", nonce, a.returncode, b.returncode, a.stdout[-300:], rv)
    if n >= 20: break
srv.stop()
print(n, "v1 rounds", bad, "bad")
sys.exit(1 if bad or n < 20 else 0)
