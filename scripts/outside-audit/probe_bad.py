"""Probe 3: malformed requests against the real release binary. Each case states the status
and field docs/API.md's error table promises; the answer's code, ErrorInfo field and the
BadRequest/PreconditionFailure violation must all name it. Never INTERNAL, never a crash."""

import json
import os
import sys
import tempfile
import time

import grpc

import rd
import v1tok
from rd import pb

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("REDDOG", os.path.join(ROOT, "target", "release", "reddog"))
KEY = bytes(range(32, 64))
RING = json.dumps({"primary": "k1", "keys": {"k1": KEY.hex()}})
work = tempfile.mkdtemp(prefix="probe-bad-")
cfg = os.path.join(work, "tables.json")
json.dump({"tables": {"default": {}, "eur": {"decks": 2, "min_bet": 100, "max_bet": 1000, "currency": "EUR",
                                             "minor_unit_exponent": 2}}}, open(cfg, "w"))
srv = rd.Server(BIN, "--table-config", cfg, "--key-ring", RING, log_path=os.path.join(work, "engine.log"))
s = srv.stub
LIM = pb.Limits(min_bet=500, max_bet=30000)
results = []  # (case, ok, got)


def expect(case, fn, code, field):
    try:
        fn()
        got = "OK"
        ok = code == "OK"
    except grpc.RpcError as e:
        c, msg, info, viol = rd.details(e)
        got = (c, msg, info.get("field"), [v[:2] for v in viol])
        ok = c == code and (field is None or (info.get("field") == field and any(v[1] == field for v in viol)))
        if c == "INTERNAL" or c == "UNKNOWN" or c == "UNAVAILABLE":
            ok = False
    results.append((case, ok, got))
    if not ok:
        print("MISMATCH", case, "want", code, field, "got", got, flush=True)


def fresh(rid="r1", nonce=1, table=""):
    return s.CommitSeed(pb.CommitSeedRequest(round_id=rid, nonce=nonce, table_id=table))


def start_req(c, **kw):
    base = dict(commitment_token=c.commitment_token, client_seed="seed", nonce=1, round_id="r1",
                seats=[pb.SeatBet(bet=1000)], player_limits=LIM)
    base.update(kw)
    return pb.StartRoundRequest(**base)


# --- CommitSeed -------------------------------------------------------------------------
IA, OOR, FP, NF = "INVALID_ARGUMENT", "OUT_OF_RANGE", "FAILED_PRECONDITION", "NOT_FOUND"
for name, rid in [("empty", ""), ("129 bytes", "r" * 129), ("NUL", "a\0b"), ("LF", "a\nb"), ("DEL", "a\x7fb"),
                  ("C1 NEL", "a\u0085b"), ("C1 0x9f", "\u009f"), ("33 4-byte chars", "\U0001F600" * 33),
                  ("127 + 2-byte", "r" * 127 + "é"), ("tab", "\t")]:
    expect(f"CommitSeed round_id {name}", lambda: s.CommitSeed(pb.CommitSeedRequest(round_id=rid)), IA, "round_id")
for name, rid in [("128 bytes", "r" * 128), ("32 4-byte chars", "\U0001F600" * 32), ("U+2028", "a\u2028b"),
                  ("zero width", "a\u200bb"), ("RTL override", "\u202e")]:
    expect(f"CommitSeed round_id ok {name}", lambda: s.CommitSeed(pb.CommitSeedRequest(round_id=rid)), "OK", None)
for name, t in [("65 bytes", "t" * 65), ("space", "a b"), ("slash", "a/b"), ("utf8", "é"), ("NUL", "\0"),
                ("colon", "a:b"), ("plus", "a+b")]:
    expect(f"CommitSeed table_id {name}", lambda: s.CommitSeed(pb.CommitSeedRequest(round_id="r", table_id=t)), IA,
           "table_id")
for t in ["nope", "DEFAULT", "Default", "eur ".strip() + "x", "t" * 64]:
    expect(f"CommitSeed table_id unknown {t[:10]}", lambda: s.CommitSeed(pb.CommitSeedRequest(round_id="r", table_id=t)),
           NF, "table_id")
for n in [0, 1, 2**63, 2**64 - 1]:
    expect(f"CommitSeed nonce {n}", lambda: s.CommitSeed(pb.CommitSeedRequest(round_id="r", nonce=n)), "OK", None)

# --- GetRules ---------------------------------------------------------------------------
expect("GetRules unknown", lambda: s.GetRules(pb.GetRulesRequest(table_id="zz")), NF, "table_id")
expect("GetRules bad id", lambda: s.GetRules(pb.GetRulesRequest(table_id="a b")), IA, "table_id")
expect("GetRules 65", lambda: s.GetRules(pb.GetRulesRequest(table_id="a" * 65)), IA, "table_id")
expect("GetRules default", lambda: s.GetRules(pb.GetRulesRequest()), "OK", None)

# --- StartRound -------------------------------------------------------------------------
c = fresh()
expect("Start missing commitment_token", lambda: s.StartRound(start_req(c, commitment_token=b"")), IA, "commitment_token")
expect("Start missing client_seed", lambda: s.StartRound(start_req(c, client_seed="")), IA, "client_seed")
expect("Start client_seed 1025", lambda: s.StartRound(start_req(c, client_seed="x" * 1025)), IA, "client_seed")
expect("Start client_seed 257x4-byte", lambda: s.StartRound(start_req(c, client_seed="\U0001F600" * 257)), IA,
       "client_seed")
expect("Start missing round_id", lambda: s.StartRound(start_req(c, round_id="")), IA, "round_id")
expect("Start round_id 129", lambda: s.StartRound(start_req(c, round_id="r" * 129)), IA, "round_id")
expect("Start round_id ctrl", lambda: s.StartRound(start_req(c, round_id="r\x01")), IA, "round_id")
expect("Start table_id bad", lambda: s.StartRound(start_req(c, table_id="a b")), IA, "table_id")
expect("Start table_id 65", lambda: s.StartRound(start_req(c, table_id="a" * 65)), IA, "table_id")
expect("Start other round id", lambda: s.StartRound(start_req(c, round_id="r2")), FP, "round_id")
expect("Start other nonce", lambda: s.StartRound(start_req(c, nonce=2)), FP, "nonce")
expect("Start other table", lambda: s.StartRound(start_req(c, table_id="eur")), FP, "table_id")
expect("Start unknown table", lambda: s.StartRound(start_req(c, table_id="nope")), FP, "table_id")
expect("Start missing player_limits", lambda: s.StartRound(start_req(c, player_limits=None)), IA, "player_limits")
expect("Start limits min 0", lambda: s.StartRound(start_req(c, player_limits=pb.Limits(min_bet=0, max_bet=10))), OOR,
       "player_limits.min_bet")
expect("Start limits max<min", lambda: s.StartRound(start_req(c, player_limits=pb.Limits(min_bet=600, max_bet=500))),
       OOR, "player_limits.max_bet")
expect("Start limits max 0", lambda: s.StartRound(start_req(c, player_limits=pb.Limits(min_bet=1, max_bet=0))), OOR,
       "player_limits.max_bet")
expect("Start limits u64max", lambda: s.StartRound(start_req(c, player_limits=pb.Limits(min_bet=2**64 - 1,
                                                                                           max_bet=2**64 - 1))),
       OOR, "player_limits.min_bet")
expect("Start limits no overlap above", lambda: s.StartRound(start_req(c, player_limits=pb.Limits(min_bet=30001,
                                                                                                   max_bet=40000))),
       FP, "player_limits")
expect("Start limits no overlap below", lambda: s.StartRound(start_req(c, player_limits=pb.Limits(min_bet=1,
                                                                                                   max_bet=499))),
       FP, "player_limits")
expect("Start 0 seats", lambda: s.StartRound(start_req(c, seats=[])), OOR, "seats")
expect("Start 8 seats", lambda: s.StartRound(start_req(c, seats=[pb.SeatBet(bet=1000)] * 8)), OOR, "seats")
expect("Start 1000 seats", lambda: s.StartRound(start_req(c, seats=[pb.SeatBet(bet=1000)] * 1000)), OOR, "seats")
for i, bets in enumerate([[0], [499], [30001], [2**64 - 1], [1000, 0], [1000, 1000, 1000, 1000, 1000, 1000, 10**12]]):
    bad = next(k for k, b in enumerate(bets) if not 500 <= b <= 30000)
    expect(f"Start bet {bets}", lambda: s.StartRound(start_req(c, seats=[pb.SeatBet(bet=b) for b in bets])), OOR,
           f"seats[{bad}].bet")
expect("Start bet outside player limits", lambda: s.StartRound(start_req(
    c, seats=[pb.SeatBet(bet=1000), pb.SeatBet(bet=2000)], player_limits=pb.Limits(min_bet=500, max_bet=1500))), OOR,
       "seats[1].bet")
tok = c.commitment_token
for name, t in [("truncated 1", tok[:1]), ("truncated half", tok[:len(tok) // 2]), ("minus 1", tok[:-1]),
                ("plus 1", tok + b"\0"), ("garbage", b"\x02c\x02k1" + b"\0" * 40), ("v3", b"\x03" + tok[1:]),
                ("wrong kind byte", tok[:1] + b"r" + tok[2:]), ("key id zz", tok[:3] + b"zz" + tok[5:]),
                ("over max", b"\x02c" + b"\0" * 1500), ("len 2", b"\x02c"), ("id len 0", b"\x02c\x00" + b"\0" * 40),
                ("id len 255", b"\x02c\xff" + b"a" * 40)] + [
        (f"bit flip {i}", tok[:i] + bytes([tok[i] ^ (1 << (i % 8))]) + tok[i + 1:]) for i in range(0, len(tok), 3)]:
    expect(f"Start token {name}", lambda: s.StartRound(start_req(c, commitment_token=t)), IA, "commitment_token")
# A round token passed as a commitment token (wrong kind).
st = s.StartRound(start_req(c))
expect("Start with a round token", lambda: s.StartRound(start_req(c, commitment_token=st.round_token)), IA,
       "commitment_token")
# Expired commitment, sealed under the ring key (what an engine would have issued 10 minutes ago).
seed = os.urandom(32)
expired = v1tok.seal_v2(KEY, "k1", b"c", v1tok.commitment_bound(seed, int(time.time() * 1000) - 1, "r1", 1, "default", 1))
expect("Start expired commitment", lambda: s.StartRound(start_req(c, commitment_token=expired)), IA, "commitment_token")
live = v1tok.seal_v2(KEY, "k1", b"c", v1tok.commitment_bound(seed, int(time.time() * 1000) + 60000, "r1", 1, "default", 1))
expect("Start hand-sealed live commitment (control)", lambda: s.StartRound(start_req(c, commitment_token=live)), "OK",
       None)
changed = v1tok.seal_v2(KEY, "k1", b"c", v1tok.commitment_bound(seed, int(time.time() * 1000) + 60000, "r1", 1,
                                                                  "default", 3))
expect("Start deck count changed", lambda: s.StartRound(start_req(c, commitment_token=changed)), FP, "commitment_token")
gone = v1tok.seal_v2(KEY, "k1", b"c", v1tok.commitment_bound(seed, int(time.time() * 1000) + 60000, "r1", 1,
                                                               "removed", 1))
expect("Start commitment for a removed table", lambda: s.StartRound(start_req(c, commitment_token=gone)), NF, "table_id")

# --- Decide / Settle --------------------------------------------------------------------
def nc_round(seats=2):
    for k in range(300):
        c = fresh(f"d{k}", 1)
        st = s.StartRound(start_req(c, round_id=f"d{k}", seats=[pb.SeatBet(bet=1000)] * seats))
        if st.round.awaiting_decisions:
            return st
    raise RuntimeError


def other_round(want):
    for k in range(3000):
        c = fresh(f"o{want}{k}", 1)
        st = s.StartRound(start_req(c, round_id=f"o{want}{k}"))
        if st.round.hand_class == want:
            return st
    raise RuntimeError


nc = nc_round()
T = nc.round_token
rid = nc.round_id
D = lambda *ds, **kw: pb.DecideRequest(round_token=kw.get("tok", T), round_id=kw.get("rid", ""), decisions=list(ds))
sd = pb.SeatDecision
expect("Decide missing token", lambda: s.Decide(D(sd(seat=0, action=1), tok=b"")), IA, "round_token")
expect("Decide no decisions", lambda: s.Decide(D()), IA, "decisions")
for a in [0, 3, 99, -1, 2**31 - 1]:
    expect(f"Decide action {a}", lambda: s.Decide(D(sd(seat=0, action=a))), IA, "decisions[0].action")
expect("Decide action bad 2nd", lambda: s.Decide(D(sd(seat=0, action=1), sd(seat=1, action=0))), IA,
       "decisions[1].action")
expect("Decide dup seat", lambda: s.Decide(D(sd(seat=0, action=1), sd(seat=0, action=2))), IA, "decisions[1].seat")
expect("Decide dup seat same action", lambda: s.Decide(D(sd(seat=1, action=1), sd(seat=1, action=1))), IA,
       "decisions[1].seat")
for seat in [2, 7, 255, 256, 2**32 - 1]:
    expect(f"Decide seat {seat}", lambda: s.Decide(D(sd(seat=seat, action=1))), OOR, "decisions[0].seat")
expect("Decide seat oor 2nd", lambda: s.Decide(D(sd(seat=0, action=1), sd(seat=9, action=1))), OOR,
       "decisions[1].seat")
expect("Decide round_id mismatch", lambda: s.Decide(D(sd(seat=0, action=1), rid="other")), IA, "round_id")
expect("Decide round_id 129", lambda: s.Decide(D(sd(seat=0, action=1), rid="r" * 129)), IA, "round_id")
expect("Decide round_id ctrl", lambda: s.Decide(D(sd(seat=0, action=1), rid="\x1b")), IA, "round_id")
expect("Decide with commitment token", lambda: s.Decide(D(sd(seat=0, action=1), tok=fresh().commitment_token)), IA,
       "round_token")
for name, t in [("truncated", T[:-5]), ("bitflip", T[:40] + bytes([T[40] ^ 1]) + T[41:]), ("over max", T + b"\0" * 1500),
                ("v1 label", b"\x01" + T[1:]), ("empty-ish", b"\x02")]:
    expect(f"Decide token {name}", lambda: s.Decide(D(sd(seat=0, action=1), tok=t)), IA, "round_token")
expect("Decide ok (control)", lambda: s.Decide(D(sd(seat=0, action=1), rid=rid)), "OK", None)
T1 = s.Decide(D(sd(seat=0, action=1))).round_token
expect("Decide seat already decided", lambda: s.Decide(D(sd(seat=0, action=2), tok=T1)), FP, "seats[0].decision")
expect("Decide decided + new", lambda: s.Decide(D(sd(seat=1, action=2), sd(seat=0, action=2), tok=T1)), FP,
       "seats[0].decision")
T2 = s.Decide(D(sd(seat=1, action=2), tok=T1)).round_token
expect("Decide complete round", lambda: s.Decide(D(sd(seat=1, action=2), tok=T2)), FP, "seats[1].decision")
cons = other_round(pb.HAND_CLASS_CONSECUTIVE)
expect("Decide consecutive", lambda: s.Decide(D(sd(seat=0, action=1), tok=cons.round_token)), FP, "seats[0].decision")
pair = other_round(pb.HAND_CLASS_PAIR)
expect("Decide pair", lambda: s.Decide(D(sd(seat=0, action=1), tok=pair.round_token)), FP, "seats[0].decision")
expect("Decide pair seat oor", lambda: s.Decide(D(sd(seat=5, action=1), tok=pair.round_token)), OOR,
       "decisions[0].seat")
expect("Settle missing token", lambda: s.Settle(pb.SettleRequest()), IA, "round_token")
expect("Settle commitment token", lambda: s.Settle(pb.SettleRequest(round_token=fresh().commitment_token)), IA,
       "round_token")
expect("Settle round_id mismatch", lambda: s.Settle(pb.SettleRequest(round_token=T2, round_id="x")), IA, "round_id")
expect("Settle round_id 200", lambda: s.Settle(pb.SettleRequest(round_token=T2, round_id="x" * 200)), IA, "round_id")
for i in range(0, len(T2), 7):
    t = T2[:i] + bytes([T2[i] ^ 0x80]) + T2[i + 1:]
    expect(f"Settle bitflip {i}", lambda: s.Settle(pb.SettleRequest(round_token=t)), IA, "round_token")
for n in range(0, len(T2), 11):
    expect(f"Settle truncated {n}", lambda: s.Settle(pb.SettleRequest(round_token=T2[:n])), IA, "round_token")
# A genuine-looking round token whose content no genuine round could hold (sealed with the key).
bad_payloads = {
    "3 cards consecutive": v1tok.round_v1(seed, "s", 1, 1, "", True, [0, 4, 8], [1000], [0], [5, 4, 2] + [1] * 8 + [11]),
    "decks 9": v1tok.round_v1(seed, "s", 1, 9, "", True, [0, 4], [1000], [0], [5, 4, 2] + [1] * 8 + [11]),
    "card 52": v1tok.round_v1(seed, "s", 1, 1, "", True, [52, 4], [1000], [0], [5, 4, 2] + [1] * 8 + [11]),
    "bet 0": v1tok.round_v1(seed, "s", 1, 1, "", True, [0, 4], [0], [0], [5, 4, 2] + [1] * 8 + [11]),
    "bet 2^64-1": v1tok.round_v1(seed, "s", 1, 1, "", True, [0, 4], [2**64 - 1], [0], [5, 4, 2] + [1] * 8 + [11]),
    "8 seats": v1tok.round_v1(seed, "s", 1, 1, "", True, [0, 4], [1000] * 8, [0] * 8, [5, 4, 2] + [1] * 8 + [11]),
    "odds 0": v1tok.round_v1(seed, "s", 1, 1, "", True, [0, 4], [1000], [0], [0] * 12),
    "seed 31": v1tok.round_v1(seed[:31], "s", 1, 1, "", True, [0, 4], [1000], [0], [5, 4, 2] + [1] * 8 + [11]),
    "not protobuf": b"\xff\xff\xff",
}
for name, p in bad_payloads.items():
    t = v1tok.seal_v2(KEY, "k1", b"r", p)
    expect(f"Settle sealed impossible round: {name}", lambda: s.Settle(pb.SettleRequest(round_token=t)), IA,
           "round_token")
    t1 = v1tok.seal_v1(KEY, "k1", b"r", p)
    expect(f"Settle v1-sealed impossible round: {name}", lambda: s.Settle(pb.SettleRequest(round_token=t1)), IA,
           "round_token")

# --- raw wire: bytes that are not a valid message -------------------------------------------
def raw(method, body):
    call = srv.channel.unary_unary(f"/reddog.v1.RedDog/{method}", request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
    return call(body)


expect("raw CommitSeed invalid UTF-8 round_id", lambda: raw("CommitSeed", b"\x0a\x02\xff\xfe"), IA, "round_id")
expect("raw StartRound invalid UTF-8 client_seed", lambda: raw("StartRound", b"\x12\x02\xc3\x28"), IA, "client_seed")
expect("raw Settle truncated message", lambda: raw("Settle", b"\x0a\x05ab"), IA, None)
expect("raw GetRules garbage", lambda: raw("GetRules", b"\xff\xff\xff\xff"), IA, None)

srv.stop()
bad = [r for r in results if not r[1]]
print(f"{len(results)} cases, {len(bad)} mismatches")
for case, ok, got in bad:
    print("  ", case, "->", got)
print("work", work)
sys.exit(1 if bad else 0)
