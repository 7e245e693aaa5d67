#!/usr/bin/env python3
"""Writes tests/vectors/reveal-negative.json: reveals every verifier MUST refuse.

Each case is a genuine reveal (built here from docs/FAIRNESS.md with verify.py's deal, rules
and transcript; the script checks that each base verifies) with exactly one defect, and the
verdict a verifier must give: "malformed" (the grammar of FAIRNESS.md section 4 is broken,
exit status 2) or "not_verified" (well-formed, but a check of section 4 fails, exit status 1).
Where a defect would otherwise also break the transcript, the transcript is recomputed, so a
verifier that misses the rule under test accepts the case instead of refusing it for another
reason.

Deterministic: no randomness, fixed seeds; the output is byte-for-byte reproducible.

    python3 verify/make_negative_vectors.py            # rewrites the file
    python3 verify/make_negative_vectors.py --check    # exit 1 if the file differs
"""

import copy
import hashlib
import json
import os
import sys

import verify as v

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "vectors", "reveal-negative.json")

STANDARD = {"spread": [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], "three_of_a_kind": 11}
CUSTOM = {"spread": [7, 6, 3, 2, 2, 2, 2, 2, 2, 2, 2], "three_of_a_kind": 15}


def seed_of(label):
    return hashlib.sha256(b"reddog negative vectors: " + label.encode()).digest()


class Raw:
    """A JSON value written literally (e.g. 1e3, -0, 42.0), for defects JSON values cannot carry."""

    def __init__(self, text):
        self.text = text


def render(obj):
    """Compact JSON in the key order of the object (the engine's order for genuine reveals).
    Raw values are written literally; a list of pairs renders as an object with those pairs
    (so duplicate keys can be written)."""
    if isinstance(obj, Raw):
        return obj.text
    if isinstance(obj, Pairs):
        return "{" + ",".join(render(k) + ":" + render(x) for k, x in obj.items) + "}"
    if isinstance(obj, dict):
        return "{" + ",".join(render(k) + ":" + render(x) for k, x in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(render(x) for x in obj) + "]"
    return json.dumps(obj, ensure_ascii=False)


class Pairs:
    def __init__(self, items):
        self.items = items


# --- Genuine reveals -------------------------------------------------------------------------

def deal_class(seed, client_seed, nonce, decks):
    codes, _ = v.deal(seed, client_seed.encode(), nonce, decks, 3)
    cls, _ = v.hand_class(codes[0], codes[1])
    return codes[:v.cards_for(cls)], cls


def find_nonce(seed, client_seed, decks, want, start=0):
    """The first nonce from `start` whose deal satisfies want(codes, cls)."""
    nonce = start
    while True:
        codes, cls = deal_class(seed, client_seed, nonce, decks)
        if want(codes, cls):
            return nonce
        nonce += 1


def inside(codes):
    lo, hi = sorted((v.rank_value(codes[0]), v.rank_value(codes[1])))
    return lo < v.rank_value(codes[2]) < hi


def genuine_v2(seed, client_seed, nonce, decks, table_id, round_id, paytable, bets, decides):
    """A reveal as the engine emits it (contract order), computed from the spec."""
    codes, cls = deal_class(seed, client_seed, nonce, decks)
    decision = {s: a for step in decides for s, a in step}
    seats = []
    for i, bet in enumerate(bets):
        raised = decision.get(i) == "raise"
        stake, returned = v.settle_seat(codes, paytable, bet, raised)
        seats.append({"bet": bet, "raised": raised, "stake": stake, "returned": returned})
    r = {
        "format": v.FORMAT_V2,
        "algorithm": v.ALGORITHM,
        "server_seed": seed.hex(),
        "commitment": hashlib.sha256(seed).hexdigest(),
        "table_id": table_id,
        "round_id": round_id,
        "client_seed": client_seed,
        "nonce": nonce,
        "decks": decks,
        "cards": [v.card_text(c) for c in codes],
        "paytable": copy.deepcopy(paytable),
        "decisions": [[{"seat": s, "action": a} for s, a in step] for step in decides],
        "seats": seats,
        "transcript": "",
    }
    return retranscript(r)


def transcript_of(r):
    digest = r.get("rules_digest")
    t0 = v.transcript_start(bytes.fromhex(r["commitment"]), r["table_id"].encode(), r["round_id"].encode(),
                            r["nonce"], r["decks"], r["client_seed"].encode(), r["paytable"],
                            [s["bet"] for s in r["seats"]], bytes.fromhex(digest) if digest is not None else None)
    return v.transcript_chain(t0, [[(d["seat"], d["action"]) for d in step] for step in r["decisions"]]).hex()


def retranscript(r):
    r["transcript"] = transcript_of(r)
    return r


def as_v3(r, min_bet, max_bet, code, exponent):
    """The version-3 reveal of the same round (FAIRNESS.md 4.2, 4.6): limits, currency and
    rules digest after the paytable; t_0 version 2."""
    out = {}
    for k, x in copy.deepcopy(r).items():
        out[k] = x
        if k == "paytable":
            out["limits"] = {"min_bet": min_bet, "max_bet": max_bet}
            out["currency"] = {"code": code, "exponent": exponent}
            out["rules_digest"] = ""
    out["format"] = v.FORMAT_V3
    return redigest(out)


def redigest(r):
    """Recomputes the rules digest from the reveal's rules, then the transcript."""
    r["rules_digest"] = v.rules_digest(r["decks"], r["paytable"], r["limits"]["min_bet"], r["limits"]["max_bet"],
                                       r["currency"]["code"], r["currency"]["exponent"]).hex()
    return retranscript(r)


def genuine_v1(seed, client_seed, nonce, decks, round_id):
    codes, _ = deal_class(seed, client_seed, nonce, decks)
    r = {"algorithm": v.ALGORITHM, "server_seed": seed.hex(), "commitment": hashlib.sha256(seed).hexdigest(),
         "client_seed": client_seed, "nonce": nonce, "decks": decks, "cards": [v.card_text(c) for c in codes]}
    if round_id is not None:
        r["round_id"] = round_id
    return r


def bases():
    """The genuine reveals the cases start from (each verifies; checked in main)."""
    b = {}
    s = seed_of("win")
    cs = "grüße, 世界 🎲"
    n = find_nonce(s, cs, 6, lambda c, k: k == v.NON_CONSECUTIVE and inside(c) and v.hand_class(c[0], c[1])[1] <= 3
                   and "J" in v.card_text(c[0]) + v.card_text(c[1]))
    b["win"] = genuine_v2(s, cs, n, 6, "main-1", "r-2026-000042", CUSTOM, [10, 25, 7],
                          [[(0, "raise")], [(1, "stand"), (2, "raise")]])
    s = seed_of("loss")
    n = find_nonce(s, "player chosen text", 1, lambda c, k: k == v.NON_CONSECUTIVE and not inside(c))
    b["loss"] = genuine_v2(s, "player chosen text", n, 1, "default", "round-7", STANDARD, [100, 5],
                           [[(1, "raise")]])
    s = seed_of("pair")
    n = find_nonce(s, "pair please", 8, lambda c, k: k == v.PAIR and v.rank_value(c[2]) != v.rank_value(c[0]))
    b["pair"] = genuine_v2(s, "pair please", n, 8, "default", "p-1", STANDARD, [50], [])
    s = seed_of("trips")
    n = find_nonce(s, "trips", 2, lambda c, k: k == v.PAIR and v.rank_value(c[2]) == v.rank_value(c[0]))
    b["trips"] = genuine_v2(s, "trips", n, 2, "high.stakes_2", "t-1", CUSTOM, [3, 4], [])
    s = seed_of("consecutive")
    n = find_nonce(s, "c", 1, lambda c, k: k == v.CONSECUTIVE)
    b["consecutive"] = genuine_v2(s, "c", n, 1, "default", "c-1", STANDARD, [20, 30, 40], [])
    s = seed_of("v1")
    n = find_nonce(s, "lucky-7", 1, lambda c, k: k == v.NON_CONSECUTIVE and "J" in v.card_text(c[0]) + v.card_text(c[1]))
    b["v1"] = genuine_v1(s, "lucky-7", n, 1, "r-2026-000001")
    s = seed_of("v1 consecutive")
    n = find_nonce(s, "lucky-8", 2, lambda c, k: k == v.CONSECUTIVE)
    b["v1-consecutive"] = genuine_v1(s, "lucky-8", n, 2, None)
    s = seed_of("v1 pair")
    n = find_nonce(s, "lucky-9", 1, lambda c, k: k == v.PAIR)
    b["v1-pair"] = genuine_v1(s, "lucky-9", n, 1, None)
    b["win-v3"] = as_v3(b["win"], 5, 1000, "EUR", 2)
    # The round of the forged reveal (one seat of 1000 raised, a spread of 4 or more won at
    # 1 to 1: returned 4000), in both formats.
    s = seed_of("forged")
    n = find_nonce(s, "lucky", 1, lambda c, k: k == v.NON_CONSECUTIVE and inside(c)
                   and v.hand_class(c[0], c[1])[1] >= 4)
    b["raised-win"] = genuine_v2(s, "lucky", n, 1, "default", "r-forged", STANDARD, [1000], [[(0, "raise")]])
    assert b["raised-win"]["seats"][0]["returned"] == 4000
    b["raised-win-v3"] = as_v3(b["raised-win"], 500, 30000, "XXX", 2)
    return b


def forge(r):
    """Finding 1's forgery of a genuine reveal: the raise becomes a stand, every odds 1, the
    stake 1000 and the return 2000, and the transcript (and, in v3, the rules digest)
    recomputed from the altered fields. Verifies on its own."""
    f = copy.deepcopy(r)
    f["decisions"] = [[{"seat": 0, "action": "stand"}]]
    f["paytable"] = {"spread": [1] * 11, "three_of_a_kind": 1}
    f["seats"] = [{"bet": 1000, "raised": False, "stake": 1000, "returned": 2000}]
    f = redigest(f) if "rules_digest" in f else retranscript(f)
    assert v.check_text(render(f)) == "verified", "the forgery verifies without the player's record"
    return f


# --- The cases -------------------------------------------------------------------------------

def other_card(card, keep_rank=False):
    """A different card; with keep_rank, another suit of the same rank."""
    rank, suit = card[0], card[1]
    if keep_rank:
        return rank + v.SUITS[(v.SUITS.index(suit) + 1) % 4]
    return v.RANKS[(v.RANKS.index(rank) + 1) % 13] + suit


def build_cases(b):
    cases = []

    def add(name, reveal, verdict, expect=None):
        text = reveal if isinstance(reveal, str) else render(reveal)
        case = {"name": name, "reveal": text, "verdict": verdict}
        if expect is not None:
            case["expect"] = expect
        cases.append(case)

    def with_(base, **changes):
        r = copy.deepcopy(b[base])
        for k, x in changes.items():
            r[k] = x
        return r

    def without(base, key):
        r = copy.deepcopy(b[base])
        del r[key]
        return r

    def raw(base, key, text):
        return with_(base, **{key: Raw(text)})

    win, loss, pair, consec, trips = "win", "loss", "pair", "consecutive", "trips"

    # --- JSON text -------------------------------------------------------------------------
    text = render(b[win])
    add("json/duplicate-key-different-value", text[:-1] + ',"nonce":%d}' % (b[win]["nonce"] + 1), "malformed")
    add("json/duplicate-key-same-value", text[:-1] + ',"nonce":%d}' % b[win]["nonce"], "malformed")
    add("json/duplicate-key-client-seed-first-is-genuine", text[:-1] + ',"client_seed":"someone else"}', "malformed")
    add("json/duplicate-key-in-seat", render(with_(win, seats=[Pairs(list(b[win]["seats"][0].items()) + [("stake", 0)])]
                                                   + b[win]["seats"][1:])), "malformed")
    add("json/duplicate-key-in-paytable", render(with_(win, paytable=Pairs(
        list(b[win]["paytable"].items()) + [("three_of_a_kind", 15)]))), "malformed")
    add("json/duplicate-key-in-decision", render(with_(win, decisions=[
        [Pairs([("seat", 0), ("action", "raise"), ("seat", 0)])]] + b[win]["decisions"][1:])), "malformed")
    add("json/trailing-garbage", text + "x", "malformed")
    add("json/two-objects", text + text, "malformed")
    add("json/truncated", text[:-1], "malformed")
    add("json/top-level-array", "[" + text + "]", "malformed")
    add("json/top-level-string", json.dumps(text), "malformed")
    add("json/empty", "", "malformed")
    add("json/byte-order-mark", "\ufeff" + text, "malformed")
    add("json/single-quotes", text.replace('"format"', "'format'"), "malformed")
    add("json/comment", "/* reveal */" + text, "malformed")
    add("json/deeply-nested", render(with_(win, cards=Raw("[" * 3000 + "]" * 3000))), "malformed")
    add("json/nan-nonce", render(raw(win, "nonce", "NaN")), "malformed")
    add("json/infinity-returned", render(with_(win, seats=[dict(b[win]["seats"][0], returned=Raw("Infinity"))]
                                                + b[win]["seats"][1:])), "malformed")
    add("json/lone-surrogate-in-client-seed", text.replace(render(b[win]["client_seed"]), '"\\ud800abc"'), "malformed")
    add("json/lone-surrogate-in-round-id", text.replace('"r-2026-000042"', '"r-\\udc00"'), "malformed")
    add("json/raw-control-character-in-string", text.replace('"r-2026-000042"', '"r-\t1"'), "malformed")

    # --- top-level keys --------------------------------------------------------------------
    for key in v.V2_KEYS:
        if key == "format":
            continue  # without "format" the reveal is read as version 1: see the next case
        add("v2/missing-key/" + key, without(win, key), "malformed")
    add("v2/missing-key/format (read as v1: unknown keys)", without(win, "format"), "malformed")
    add("v2/unknown-key", dict(b[win], extra=1), "malformed")
    add("v2/unknown-key-null", dict(b[win], signature=None), "malformed")
    add("v2/key-in-other-case", {("Nonce" if k == "nonce" else k): x for k, x in b[win].items()}, "malformed")

    # --- format and algorithm --------------------------------------------------------------
    add("v2/format/unknown", with_(win, format="reddog-reveal-v3"), "malformed")
    add("v2/format/v1-named", with_(win, format="reddog-reveal-v1"), "malformed")
    add("v2/format/upper-case", with_(win, format="REDDOG-REVEAL-V2"), "malformed")
    add("v2/format/number", with_(win, format=2), "malformed")
    add("v2/format/null", with_(win, format=None), "malformed")
    add("v2/algorithm/unknown", with_(win, algorithm="reddog-deal-v2"), "malformed")
    add("v2/algorithm/trailing-space", with_(win, algorithm="reddog-deal-v1 "), "malformed")
    add("v2/algorithm/null", with_(win, algorithm=None), "malformed")

    # --- hex -------------------------------------------------------------------------------
    for key in ("server_seed", "commitment", "transcript"):
        h = b[win][key]
        add("v2/hex/%s/upper-case" % key, with_(win, **{key: h.upper()}), "malformed")
        add("v2/hex/%s/one-upper-case-digit" % key, with_(win, **{key: h[:-1] + h[-1].upper()
                                                                 if h[-1] in "abcdef" else "A" + h[1:]}), "malformed")
        add("v2/hex/%s/63-digits" % key, with_(win, **{key: h[:-1]}), "malformed")
        add("v2/hex/%s/65-digits" % key, with_(win, **{key: h + "0"}), "malformed")
        add("v2/hex/%s/not-hex" % key, with_(win, **{key: "g" + h[1:]}), "malformed")
        add("v2/hex/%s/0x-prefix" % key, with_(win, **{key: "0x" + h[2:]}), "malformed")
        add("v2/hex/%s/whitespace" % key, with_(win, **{key: " " + h[1:]}), "malformed")
        add("v2/hex/%s/array-of-bytes" % key, with_(win, **{key: list(bytes.fromhex(h)[:4])}), "malformed")

    # --- integers --------------------------------------------------------------------------
    nonce = b[win]["nonce"]
    add("v2/nonce/string", with_(win, nonce=str(nonce)), "malformed")
    add("v2/nonce/fraction", render(raw(win, "nonce", "%d.0" % nonce)), "malformed")
    add("v2/nonce/exponent", render(raw(win, "nonce", "%de0" % nonce)), "malformed")
    add("v2/nonce/exponent-1e3", render(raw(win, "nonce", "1e3")), "malformed")
    add("v2/nonce/exponent-1E3", render(raw(win, "nonce", "1E3")), "malformed")
    add("v2/nonce/negative", render(raw(win, "nonce", "-1")), "malformed")
    add("v2/nonce/minus-zero", render(raw(loss, "nonce", "-0")) if b[loss]["nonce"] == 0
        else render(raw(win, "nonce", "-0")), "malformed")
    add("v2/nonce/leading-zero", render(raw(win, "nonce", "0%d" % nonce)), "malformed")
    add("v2/nonce/plus-sign", render(raw(win, "nonce", "+%d" % nonce)), "malformed")
    add("v2/nonce/2^64", with_(win, nonce=2**64), "malformed")
    add("v2/nonce/huge", render(raw(win, "nonce", "9" * 400)), "malformed")
    add("v2/nonce/bool", with_(win, nonce=True), "malformed")
    add("v2/nonce/null", with_(win, nonce=None), "malformed")
    add("v2/decks/0", with_(win, decks=0), "malformed")
    add("v2/decks/9", with_(win, decks=9), "malformed")
    add("v2/decks/bool-true", with_(win, decks=True), "malformed")
    add("v2/decks/fraction", render(raw(win, "decks", "6.0")), "malformed")
    add("v2/decks/string", with_(win, decks="6"), "malformed")

    # --- strings ---------------------------------------------------------------------------
    add("v2/round_id/number", with_(win, round_id=42), "malformed")
    add("v2/round_id/null", with_(win, round_id=None), "malformed")
    add("v2/round_id/empty", retranscript(with_(win, round_id="")), "malformed")
    add("v2/round_id/129-bytes", retranscript(with_(win, round_id="r" * 129)), "malformed")
    add("v2/round_id/130-bytes-in-65-characters", retranscript(with_(win, round_id="é" * 65)), "malformed")
    add("v2/round_id/control-character-newline", retranscript(with_(win, round_id="r-1\n")), "malformed")
    add("v2/round_id/control-character-delete", retranscript(with_(win, round_id="r-\u007f1")), "malformed")
    add("v2/round_id/control-character-c1", retranscript(with_(win, round_id="r-\u00851")), "malformed")
    add("v2/table_id/number", with_(win, table_id=1), "malformed")
    add("v2/table_id/empty", retranscript(with_(win, table_id="")), "malformed")
    add("v2/table_id/65-bytes", retranscript(with_(win, table_id="t" * 65)), "malformed")
    add("v2/table_id/space", retranscript(with_(win, table_id="main 1")), "malformed")
    add("v2/table_id/slash", retranscript(with_(win, table_id="main/1")), "malformed")
    add("v2/table_id/non-ascii", retranscript(with_(win, table_id="tablé")), "malformed")
    add("v2/client_seed/number", with_(win, client_seed=7), "malformed")
    add("v2/client_seed/null", with_(win, client_seed=None), "malformed")
    # Over-long client seeds: the transcript is recomputed; the cards are those of the long seed.
    for name, cs in (("empty", ""), ("1025-bytes", "x" * 1025), ("1026-bytes-in-513-characters", "é" * 513)):
        r = copy.deepcopy(b[loss])
        r["client_seed"] = cs
        codes, _ = deal_class(bytes.fromhex(r["server_seed"]), cs, r["nonce"], r["decks"])
        r["cards"] = [v.card_text(c) for c in codes]
        add("v2/client_seed/" + name, retranscript(r), "malformed")
    long_escaped = render(b[win]).replace(render(b[win]["client_seed"]), '"' + "\\u00e9" * 513 + '"')
    add("v2/client_seed/1026-bytes-written-as-escapes", long_escaped, "malformed")

    # --- cards -----------------------------------------------------------------------------
    cards = b[win]["cards"]
    add("v2/cards/lower-case-rank-like-jd", with_(win, cards=[c.lower() for c in cards]), "malformed")
    add("v2/cards/ten-as-10", with_(win, cards=["10" + c[1] if c[0] == "T" else c for c in cards]
                                    if any(c[0] == "T" for c in cards) else ["10h"] + cards[1:]), "malformed")
    add("v2/cards/upper-case-suit-AH", with_(win, cards=[c[0] + c[1].upper() for c in cards]), "malformed")
    add("v2/cards/suit-first", with_(win, cards=[c[1] + c[0] for c in cards]), "malformed")
    add("v2/cards/not-a-card", with_(win, cards=[cards[0], "Zz", cards[2]]), "malformed")
    add("v2/cards/padded", with_(win, cards=[" " + cards[0]] + cards[1:]), "malformed")
    add("v2/cards/code-number", with_(win, cards=[v.card_code(c) for c in cards]), "malformed")
    add("v2/cards/string", with_(win, cards=" ".join(cards)), "malformed")
    add("v2/cards/empty", with_(win, cards=[]), "malformed")
    add("v2/cards/one", with_(win, cards=cards[:1]), "malformed")
    add("v2/cards/third-card-dropped-non-consecutive", with_(win, cards=cards[:2]), "malformed")
    add("v2/cards/third-card-dropped-pair", with_(pair, cards=b[pair]["cards"][:2]), "malformed")
    add("v2/cards/extra-card-consecutive", with_(consec, cards=b[consec]["cards"] + ["2c"]), "malformed")
    add("v2/cards/extra-card-non-consecutive", with_(win, cards=cards + ["2c"]), "malformed")
    add("v2/cards/extra-card-pair", with_(pair, cards=b[pair]["cards"] + ["2c"]), "malformed")

    # --- paytable --------------------------------------------------------------------------
    pt = b[win]["paytable"]

    def paytable(spread=None, trips=None, drop=None, extra=None):
        p = {"spread": list(pt["spread"]) if spread is None else spread,
             "three_of_a_kind": pt["three_of_a_kind"] if trips is None else trips}
        if drop:
            del p[drop]
        if extra:
            p[extra] = 1
        return retranscript(with_(win, paytable=p)) if isinstance(p.get("spread"), list) and drop is None \
            and all(v.is_int(x) for x in p["spread"]) and len(p["spread"]) == 11 and v.is_int(p["three_of_a_kind"]) \
            else with_(win, paytable=p)

    add("v2/paytable/missing-spread", paytable(drop="spread"), "malformed")
    add("v2/paytable/missing-three_of_a_kind", paytable(drop="three_of_a_kind"), "malformed")
    add("v2/paytable/unknown-key", with_(win, paytable=dict(pt, pair=1)), "malformed")
    add("v2/paytable/10-spreads", with_(win, paytable=dict(pt, spread=pt["spread"][:10])), "malformed")
    add("v2/paytable/12-spreads", with_(win, paytable=dict(pt, spread=pt["spread"] + [1])), "malformed")
    add("v2/paytable/odds-0", paytable(spread=[0] + pt["spread"][1:]), "malformed")
    add("v2/paytable/odds-10001", paytable(spread=pt["spread"][:5] + [10001] + pt["spread"][6:]), "malformed")
    add("v2/paytable/three_of_a_kind-0", paytable(trips=0), "malformed")
    add("v2/paytable/three_of_a_kind-10001", paytable(trips=10001), "malformed")
    add("v2/paytable/odds-string", with_(win, paytable=dict(pt, three_of_a_kind="15")), "malformed")
    add("v2/paytable/odds-fraction", render(with_(win, paytable=dict(pt, three_of_a_kind=Raw("15.0")))), "malformed")
    add("v2/paytable/spread-object", with_(win, paytable=dict(pt, spread={str(i + 1): o for i, o in enumerate(pt["spread"])})),
        "malformed")
    add("v2/paytable/array", with_(win, paytable=pt["spread"] + [pt["three_of_a_kind"]]), "malformed")

    # --- seats -----------------------------------------------------------------------------
    seats = b[win]["seats"]

    def seat(i, **changes):
        s = copy.deepcopy(seats)
        s[i].update(changes)
        return s

    add("v2/seats/none", retranscript(with_(pair, seats=[])), "malformed")
    eight = [{"bet": 5, "raised": False, "stake": 5, "returned": 5}] * 8
    add("v2/seats/eight", retranscript(with_(pair, seats=eight)), "malformed")
    add("v2/seats/object", with_(win, seats={"0": seats[0]}), "malformed")
    for key in v.SEAT_KEYS:
        s = copy.deepcopy(seats)
        del s[1][key]
        add("v2/seats/missing-key/" + key, with_(win, seats=s), "malformed")
    add("v2/seats/unknown-key", with_(win, seats=seat(1, odds=1)), "malformed")
    add("v2/seats/raised-as-1", with_(win, seats=seat(0, raised=1)), "malformed")
    add("v2/seats/raised-as-0", with_(win, seats=seat(1, raised=0)), "malformed")
    add("v2/seats/raised-as-string", with_(win, seats=seat(0, raised="true")), "malformed")
    add("v2/seats/raised-null", with_(win, seats=seat(1, raised=None)), "malformed")
    add("v2/seats/bet-string", with_(win, seats=seat(1, bet=str(seats[1]["bet"]))), "malformed")
    add("v2/seats/bet-bool", with_(win, seats=seat(1, bet=True)), "malformed")
    add("v2/seats/bet-fraction", render(with_(win, seats=seat(1, bet=Raw("%d.0" % seats[1]["bet"])))), "malformed")
    add("v2/seats/bet-exponent", render(with_(win, seats=seat(1, bet=Raw("%de0" % seats[1]["bet"])))), "malformed")
    add("v2/seats/stake-negative", render(with_(win, seats=seat(0, stake=Raw("-20")))), "malformed")
    add("v2/seats/returned-2^64", with_(win, seats=seat(0, returned=2**64)), "malformed")
    add("v2/seats/bet-2^64", with_(pair, seats=[{"bet": 2**64, "raised": False, "stake": 2**64,
                                               "returned": 2**64}]), "malformed")
    add("v2/seats/seat-null", with_(win, seats=[seats[0], None, seats[2]]), "malformed")

    # --- decisions -------------------------------------------------------------------------
    def decisions(steps, base=win):
        return retranscript(with_(base, decisions=steps))

    add("v2/decisions/on-a-pair", decisions([[{"seat": 0, "action": "stand"}]], pair), "malformed")
    add("v2/decisions/on-three-of-a-kind", decisions([[{"seat": 1, "action": "stand"}]], trips), "malformed")
    add("v2/decisions/on-a-consecutive-hand", decisions([[{"seat": 2, "action": "stand"}]], consec), "malformed")
    add("v2/decisions/seat-decides-twice-across-decides",
        decisions(b[win]["decisions"] + [[{"seat": 0, "action": "raise"}]]), "malformed")
    add("v2/decisions/seat-decides-twice-in-one-decide",
        decisions([[{"seat": 0, "action": "raise"}, {"seat": 0, "action": "raise"}],
                   [{"seat": 1, "action": "stand"}, {"seat": 2, "action": "raise"}]]), "malformed")
    add("v2/decisions/not-ascending-in-one-decide",
        decisions([[{"seat": 0, "action": "raise"}], [{"seat": 2, "action": "raise"}, {"seat": 1, "action": "stand"}]]),
        "malformed")
    add("v2/decisions/empty-decide", decisions([[]] + b[win]["decisions"]), "malformed")
    add("v2/decisions/seat-out-of-range", decisions([[{"seat": 0, "action": "raise"}],
                                                     [{"seat": 1, "action": "stand"}, {"seat": 3, "action": "raise"}]]),
        "malformed")
    add("v2/decisions/seat-7", decisions([[{"seat": 7, "action": "raise"}]], loss), "malformed")
    add("v2/decisions/seat-negative", render(with_(loss, decisions=[[{"seat": Raw("-1"), "action": "raise"}]])),
        "malformed")
    add("v2/decisions/seat-string", with_(loss, decisions=[[{"seat": "1", "action": "raise"}]]), "malformed")
    add("v2/decisions/action-unknown", with_(loss, decisions=[[{"seat": 1, "action": "fold"}]]), "malformed")
    add("v2/decisions/action-upper-case", with_(loss, decisions=[[{"seat": 1, "action": "Raise"}]]), "malformed")
    add("v2/decisions/action-number", with_(loss, decisions=[[{"seat": 1, "action": 1}]]), "malformed")
    add("v2/decisions/missing-action", with_(loss, decisions=[[{"seat": 1}]]), "malformed")
    add("v2/decisions/missing-seat", with_(loss, decisions=[[{"action": "raise"}]]), "malformed")
    add("v2/decisions/unknown-key", with_(loss, decisions=[[{"seat": 1, "action": "raise", "step": 1}]]), "malformed")
    add("v2/decisions/flat-list", with_(loss, decisions=[{"seat": 1, "action": "raise"}]), "malformed")
    add("v2/decisions/object", with_(loss, decisions={"seat": 1, "action": "raise"}), "malformed")
    add("v2/decisions/null", with_(loss, decisions=None), "malformed")

    # --- well-formed but not verified: deal ------------------------------------------------
    other_seed = seed_of("someone else's seed")
    add("verify/commitment-of-another-seed", retranscript(with_(win, commitment=hashlib.sha256(other_seed).hexdigest())),
        "not_verified")
    r = with_(win, server_seed=other_seed.hex(), commitment=hashlib.sha256(other_seed).hexdigest())
    add("verify/another-seed-with-its-own-commitment", retranscript(r), "not_verified")
    add("verify/commitment-of-the-seed-hex-text", retranscript(with_(win, commitment=hashlib.sha256(
        b[win]["server_seed"].encode()).hexdigest())), "not_verified")
    add("verify/cards/first-two-swapped", with_(win, cards=[cards[1], cards[0], cards[2]]), "not_verified")
    add("verify/cards/third-card-same-rank-other-suit", with_(win, cards=cards[:2] + [other_card(cards[2], True)]),
        "not_verified")
    add("verify/cards/pair-third-card-other-suit", with_(pair, cards=b[pair]["cards"][:2]
                                                         + [other_card(b[pair]["cards"][2], True)]), "not_verified")
    add("verify/nonce-plus-one", retranscript(with_(win, nonce=b[win]["nonce"] + 1)), "not_verified")
    add("verify/decks-changed", retranscript(with_(win, decks=b[win]["decks"] + 1)), "not_verified")
    add("verify/client-seed-changed", retranscript(with_(win, client_seed=b[win]["client_seed"] + " ")), "not_verified")

    # --- well-formed but not verified: money -----------------------------------------------
    add("verify/raised-true-but-stood", with_(win, seats=seat(1, raised=True)), "not_verified")
    add("verify/raised-false-but-raised", with_(win, seats=seat(0, raised=False)), "not_verified")
    add("verify/raised-without-a-decision", with_(loss, seats=[dict(b[loss]["seats"][0], raised=True)]
                                                  + b[loss]["seats"][1:]), "not_verified")
    add("verify/raised-on-a-pair", with_(pair, seats=[dict(b[pair]["seats"][0], raised=True)]), "not_verified")
    add("verify/stake/raised-but-single", with_(win, seats=seat(0, stake=seats[0]["bet"],
                                                              returned=seats[0]["returned"] // 2)), "not_verified")
    add("verify/stake/stood-but-double", with_(win, seats=seat(1, stake=2 * seats[1]["bet"],
                                                             returned=2 * seats[1]["returned"])), "not_verified")
    add("verify/stake/one-more", with_(win, seats=seat(2, stake=seats[2]["stake"] + 1)), "not_verified")
    add("verify/returned/one-more-on-a-win", with_(win, seats=seat(1, returned=seats[1]["returned"] + 1)), "not_verified")
    add("verify/returned/one-less-on-a-win", with_(win, seats=seat(2, returned=seats[2]["returned"] - 1)), "not_verified")
    add("verify/returned/one-on-a-loss", with_(loss, seats=[dict(b[loss]["seats"][0], returned=1)]
                                               + b[loss]["seats"][1:]), "not_verified")
    add("verify/returned/stake-on-a-loss", with_(loss, seats=[b[loss]["seats"][0],
                                                              dict(b[loss]["seats"][1], returned=b[loss]["seats"][1]["stake"])]),
        "not_verified")
    add("verify/returned/winnings-only-not-stake", with_(win, seats=seat(0, returned=seats[0]["returned"] - seats[0]["stake"])),
        "not_verified")
    add("verify/returned/standard-paytable-instead-of-the-reveals",
        with_(win, seats=[dict(s, returned=v.settle_seat([v.card_code(c) for c in cards], STANDARD, s["bet"], s["raised"])[1])
                          for s in seats]), "not_verified")
    add("verify/returned/pair-paid-as-trips", with_(pair, seats=[dict(b[pair]["seats"][0], returned=50 * 12)]),
        "not_verified")
    add("verify/returned/pair-one-less", with_(pair, seats=[dict(b[pair]["seats"][0], returned=49)]), "not_verified")
    add("verify/returned/trips-paid-as-push", with_(trips, seats=[dict(s, returned=s["stake"]) for s in b[trips]["seats"]]),
        "not_verified")
    add("verify/returned/consecutive-zero", with_(consec, seats=seat_list(b[consec]["seats"], 1, returned=0)),
        "not_verified")

    # Overflow: the rules' amount does not fit in 0..2^64-1, so no value is right; the reveal
    # carries it reduced mod 2^64 (what wrapping arithmetic would give).
    big = 2**63
    r = copy.deepcopy(b[win])
    r["seats"][0] = {"bet": big, "raised": True, "stake": (2 * big) % 2**64, "returned": 0}
    add("verify/overflow/stake-of-a-raised-2^63-bet-wrapped", retranscript(r), "not_verified")
    r = copy.deepcopy(b[win])
    stake = 2 * 2**62
    returned = v.settle_seat([v.card_code(c) for c in cards], b[win]["paytable"], 2**62, True)[1]
    assert returned > v.U64_MAX
    r["seats"][0] = {"bet": 2**62, "raised": True, "stake": stake, "returned": returned % 2**64}
    add("verify/overflow/returned-wrapped", retranscript(r), "not_verified")
    r = copy.deepcopy(b[win])
    r["seats"][0] = {"bet": 2**62, "raised": True, "stake": stake, "returned": v.U64_MAX}
    add("verify/overflow/returned-saturated", retranscript(r), "not_verified")

    # Amounts no genuine round has (FAIRNESS.md 4.5, check 3): a bet outside 1..MAX_BET, or
    # round totals beyond 2^64 - 1 — each self-consistent by the rules, seat by seat.
    r = copy.deepcopy(b[pair])
    r["seats"] = [{"bet": 0, "raised": False, "stake": 0, "returned": 0}]
    add("verify/money/bet-0", retranscript(r), "not_verified")
    r["seats"] = [{"bet": v.MAX_BET + 1, "raised": False, "stake": v.MAX_BET + 1, "returned": v.MAX_BET + 1}]
    add("verify/money/bet-above-the-largest-any-table-allows", retranscript(r), "not_verified")
    r = copy.deepcopy(b[win])
    r["paytable"] = {"spread": [10000] * 11, "three_of_a_kind": 10000}
    r["decisions"] = [[{"seat": i, "action": "raise"} for i in range(7)]]
    r["seats"] = [{"bet": v.MAX_BET, "raised": True, "stake": 2 * v.MAX_BET, "returned": 2 * v.MAX_BET * 10001}] * 7
    assert 2 * v.MAX_BET * 10001 <= v.U64_MAX < 7 * 2 * v.MAX_BET * 10001
    add("verify/money/total-returned-beyond-2^64", retranscript(r), "not_verified")

    # --- well-formed but not verified: transcript -------------------------------------------
    t = b[win]["transcript"]
    add("verify/transcript/one-digit-changed", with_(win, transcript=t[:10] + ("0" if t[10] != "0" else "1") + t[11:]),
        "not_verified")
    add("verify/transcript/of-another-round", with_(win, transcript=b[loss]["transcript"]), "not_verified")
    add("verify/transcript/decides-merged", with_(win, decisions=[b[win]["decisions"][0] + b[win]["decisions"][1]]),
        "not_verified")
    add("verify/transcript/decides-split", with_(win, decisions=[b[win]["decisions"][0], b[win]["decisions"][1][:1],
                                                                 b[win]["decisions"][1][1:]]), "not_verified")
    add("verify/transcript/decides-reordered", with_(win, decisions=[b[win]["decisions"][1], b[win]["decisions"][0]]),
        "not_verified")
    add("verify/transcript/a-decide-left-out", with_(loss, decisions=[],
                                                    seats=[dict(s, raised=False, stake=s["bet"], returned=0)
                                                           for s in b[loss]["seats"]]), "not_verified")
    add("verify/transcript/bets-swapped", with_(win, seats=[seats[0], seats[2], seats[1]],
                                               decisions=[[{"seat": 0, "action": "raise"}],
                                                          [{"seat": 1, "action": "raise"}, {"seat": 2, "action": "stand"}]]),
        "not_verified")
    add("verify/transcript/table-id-changed", with_(win, table_id="main-2"), "not_verified")
    add("verify/transcript/round-id-changed", with_(win, round_id="r-2026-000043"), "not_verified")
    add("verify/transcript/unused-odds-changed", with_(win, paytable=dict(pt, spread=pt["spread"][:10] + [3])),
        "not_verified")
    add("verify/transcript/three-of-a-kind-odds-changed", with_(win, paytable=dict(pt, three_of_a_kind=16)), "not_verified")
    add("verify/transcript/start-hash-only", with_(win, transcript=v.transcript_start(
        bytes.fromhex(b[win]["commitment"]), b"main-1", b"r-2026-000042", b[win]["nonce"], b[win]["decks"],
        b[win]["client_seed"].encode(), b[win]["paytable"], [s["bet"] for s in seats]).hex()), "not_verified")
    add("verify/transcript/hex-commitment-instead-of-raw", retranscript_variant(b[win], hex_commitment=True),
        "not_verified")

    # --- expectations ------------------------------------------------------------------------
    add("expect/commitment", b[win], "not_verified", {"commitment": b[loss]["commitment"]})
    add("expect/client_seed", b[win], "not_verified", {"client_seed": "grüße, 世界"})
    add("expect/client_seed-other-normalisation", b[win], "not_verified",
        {"client_seed": b[win]["client_seed"].replace("ü", "u\u0308")})
    add("expect/nonce", b[win], "not_verified", {"nonce": b[win]["nonce"] + 1})
    add("expect/round_id", b[win], "not_verified", {"round_id": "r-2026-000041"})
    add("expect/table_id", b[win], "not_verified", {"table_id": "default"})
    add("expect/decks", b[win], "not_verified", {"decks": 1})
    add("expect/one-of-several", b[loss], "not_verified",
        {"commitment": b[loss]["commitment"], "client_seed": b[loss]["client_seed"], "nonce": b[loss]["nonce"],
         "round_id": b[loss]["round_id"], "table_id": b[loss]["table_id"], "decks": 2})

    # --- version 1 -----------------------------------------------------------------------------
    v1 = b["v1"]
    t1 = render(v1)
    add("v1/duplicate-key", t1[:-1] + ',"client_seed":"lucky-8"}', "malformed")
    add("v1/duplicate-key-same-value", t1[:-1] + ',"decks":1}', "malformed")
    add("v1/cards/lower-case-rank-like-jd", dict(v1, cards=[c.lower() for c in v1["cards"]]), "malformed")
    add("v1/cards/ten-as-10", dict(v1, cards=["10h"] + v1["cards"][1:]), "malformed")
    add("v1/cards/upper-case-suit-AH", dict(v1, cards=[c[0] + c[1].upper() for c in v1["cards"]]), "malformed")
    add("v1/cards/third-card-dropped", dict(v1, cards=v1["cards"][:2]), "malformed")
    add("v1/cards/third-card-dropped-pair", dict(b["v1-pair"], cards=b["v1-pair"]["cards"][:2]), "malformed")
    add("v1/cards/extra-card-consecutive", dict(b["v1-consecutive"], cards=b["v1-consecutive"]["cards"] + ["2c"]),
        "malformed")
    add("v1/cards/extra-cards", dict(v1, cards=v1["cards"] + ["2c", "3c"]), "malformed")
    add("v1/cards/one", dict(v1, cards=v1["cards"][:1]), "malformed")
    add("v1/round_id/number", dict(v1, round_id=1), "malformed")
    add("v1/round_id/null", dict(v1, round_id=None), "malformed")
    add("v1/round_id/empty", dict(v1, round_id=""), "malformed")
    add("v1/round_id/129-bytes", dict(v1, round_id="r" * 129), "malformed")
    add("v1/round_id/control-character", dict(v1, round_id="r-1\u0000"), "malformed")
    for key in v.V1_REQUIRED:
        r = dict(v1)
        del r[key]
        add("v1/missing-key/" + key, r, "malformed")
    add("v1/unknown-key", dict(v1, table_id="default"), "malformed")
    add("v1/unknown-key-paytable", dict(v1, paytable=STANDARD), "malformed")
    add("v1/format-key-v1", dict({"format": "reddog-reveal-v1"}, **v1), "malformed")
    add("v1/algorithm-unknown", dict(v1, algorithm="reddog-deal-v0"), "malformed")
    add("v1/nonce-string", dict(v1, nonce=str(v1["nonce"])), "malformed")
    add("v1/nonce-fraction", render(dict(v1, nonce=Raw("%d.0" % v1["nonce"]))), "malformed")
    add("v1/nonce-negative", render(dict(v1, nonce=Raw("-%d" % max(1, v1["nonce"])))), "malformed")
    add("v1/decks-bool", dict(v1, decks=True), "malformed")
    add("v1/server_seed-whitespace", dict(v1, server_seed=" " + v1["server_seed"] + " "), "malformed")
    add("v1/client_seed-number", dict(v1, client_seed=7), "malformed")
    add("v1/cards-wrong", dict(v1, cards=[v1["cards"][1], v1["cards"][0], v1["cards"][2]]), "not_verified")
    add("v1/commitment-of-another-seed", dict(v1, commitment=hashlib.sha256(other_seed).hexdigest()), "not_verified")
    add("v1/nonce-plus-one", dict(v1, nonce=v1["nonce"] + 1), "not_verified")
    add("v1/expect-nonce", v1, "not_verified", {"nonce": v1["nonce"] + 1})
    add("v1/expect-commitment", v1, "not_verified", {"commitment": hashlib.sha256(other_seed).hexdigest()})
    add("v1/expect-round_id-absent", b["v1-consecutive"], "not_verified", {"round_id": "r-1"})

    # --- version 3 -------------------------------------------------------------------------
    w3 = "win-v3"
    for key in ("limits", "currency", "rules_digest"):
        add("v3/missing-key/" + key, without(w3, key), "malformed")
    add("v3/format-v2-with-v3-keys", with_(w3, format=v.FORMAT_V2), "malformed")
    add("v3/format-v3-without-v3-keys", with_("win", format=v.FORMAT_V3), "malformed")
    add("v3/limits/unknown-key", with_(w3, limits=dict(b[w3]["limits"], step=5)), "malformed")
    add("v3/limits/missing-max_bet", with_(w3, limits={"min_bet": 5}), "malformed")
    add("v3/limits/min_bet-0", redigest(with_(w3, limits={"min_bet": 0, "max_bet": 1000})), "malformed")
    add("v3/limits/max_bet-below-min_bet", with_(w3, limits={"min_bet": 5, "max_bet": 4}), "malformed")
    add("v3/limits/max_bet-above-MAX_BET", with_(w3, limits={"min_bet": 5, "max_bet": v.MAX_BET + 1}), "malformed")
    add("v3/limits/string", with_(w3, limits={"min_bet": "5", "max_bet": 1000}), "malformed")
    add("v3/limits/array", with_(w3, limits=[5, 1000]), "malformed")
    add("v3/currency/lower-case-code", with_(w3, currency={"code": "eur", "exponent": 2}), "malformed")
    add("v3/currency/four-letters", with_(w3, currency={"code": "EURO", "exponent": 2}), "malformed")
    add("v3/currency/numeric-code", with_(w3, currency={"code": "978", "exponent": 2}), "malformed")
    add("v3/currency/exponent-5", with_(w3, currency={"code": "EUR", "exponent": 5}), "malformed")
    add("v3/currency/unknown-key", with_(w3, currency={"code": "EUR", "exponent": 2, "name": "euro"}), "malformed")
    add("v3/rules_digest/upper-case", with_(w3, rules_digest=b[w3]["rules_digest"].upper()), "malformed")
    add("v3/rules_digest/63-digits", with_(w3, rules_digest=b[w3]["rules_digest"][:-1]), "malformed")
    add("v3/duplicate-key-rules_digest", render(b[w3])[:-1] + ',"rules_digest":"%s"}' % b[w3]["rules_digest"],
        "malformed")
    r = with_(w3, limits={"min_bet": 5, "max_bet": 999})
    add("verify/v3/limits-changed-digest-kept", retranscript(r), "not_verified")
    r = with_(w3, currency={"code": "USD", "exponent": 2})
    add("verify/v3/currency-changed-digest-kept", retranscript(r), "not_verified")
    r = with_(w3, rules_digest=hashlib.sha256(b"other rules").hexdigest())
    add("verify/v3/digest-of-other-rules", retranscript(r), "not_verified")
    add("verify/v3/bet-below-min_bet", redigest(with_(w3, limits={"min_bet": 8, "max_bet": 1000})), "not_verified")
    add("verify/v3/bet-above-max_bet", redigest(with_(w3, limits={"min_bet": 5, "max_bet": 24})), "not_verified")
    r = copy.deepcopy(b[w3])
    r["transcript"] = transcript_of(dict(r, rules_digest=None))
    add("verify/v3/transcript-with-a-v1-start", r, "not_verified")
    add("verify/v3/transcript-of-the-v2-reveal", with_(w3, transcript=b["win"]["transcript"]), "not_verified")
    add("verify/v3/paytable-changed-digest-and-transcript-kept", with_(w3, paytable=dict(b[w3]["paytable"],
                                                                                         three_of_a_kind=16)),
        "not_verified")

    # --- the player's record -------------------------------------------------------------
    add("expect/transcript", b[w3], "not_verified", {"transcript": b["win"]["transcript"]})
    add("expect/rules_digest", b[w3], "not_verified", {"rules_digest": hashlib.sha256(b"other rules").hexdigest()})
    add("expect/rules_digest-absent-from-a-v2-reveal", b["win"], "not_verified",
        {"rules_digest": b[w3]["rules_digest"]})
    add("expect/bets", b[w3], "not_verified", {"bets": [10, 25, 8]})
    add("expect/bets-one-seat-fewer", b[w3], "not_verified", {"bets": [10, 25]})
    add("expect/returned", b[w3], "not_verified",
        {"returned": [s["returned"] for s in b[w3]["seats"][:2]] + [b[w3]["seats"][2]["returned"] + 1]})
    add("expect/decisions-merged", b[w3], "not_verified",
        {"decisions": [b[w3]["decisions"][0] + b[w3]["decisions"][1]]})
    add("expect/decisions-raise-as-stand", b[w3], "not_verified",
        {"decisions": [[{"seat": 0, "action": "stand"}], b[w3]["decisions"][1]]})
    add("expect/decisions-absent-from-a-v1-reveal", b["v1"], "not_verified", {"decisions": []})

    # Finding 1: a genuine reveal altered (stand, every odds 1, stake 1000, returned 2000) with
    # its transcript recomputed verifies alone; the player's record refuses it.
    for base, tag in (("raised-win", "v2"), ("raised-win-v3", "v3")):
        genuine, forged = b[base], forge(b[base])
        record = {"commitment": genuine["commitment"], "round_id": genuine["round_id"], "nonce": genuine["nonce"],
                  "table_id": genuine["table_id"], "decks": genuine["decks"], "client_seed": genuine["client_seed"],
                  "bets": [1000], "decisions": [[{"seat": 0, "action": "raise"}]], "returned": [4000],
                  "transcript": genuine["transcript"]}
        if "rules_digest" in genuine:
            record["rules_digest"] = genuine["rules_digest"]
        add("forged/%s/given-the-players-last-transcript" % tag, forged, "not_verified",
            {"transcript": genuine["transcript"]})
        add("forged/%s/given-the-players-decisions" % tag, forged, "not_verified",
            {"decisions": record["decisions"]})
        add("forged/%s/given-the-amount-credited" % tag, forged, "not_verified", {"returned": [4000]})
        add("forged/%s/given-the-players-whole-record" % tag, forged, "not_verified", record)
        if tag == "v3":
            add("forged/v3/given-the-rules-digest-shown-with-the-commitment", forged, "not_verified",
                {"rules_digest": genuine["rules_digest"]})
    return cases


def seat_list(seats, i, **changes):
    s = copy.deepcopy(seats)
    s[i].update(changes)
    return s


def retranscript_variant(r, hex_commitment=False):
    """A transcript computed the wrong way (the commitment's hex text instead of its 32 bytes)."""
    r = copy.deepcopy(r)
    commitment = r["commitment"].encode() if hex_commitment else bytes.fromhex(r["commitment"])
    t0 = v.transcript_start(commitment, r["table_id"].encode(), r["round_id"].encode(), r["nonce"], r["decks"],
                            r["client_seed"].encode(), r["paytable"], [s["bet"] for s in r["seats"]])
    r["transcript"] = v.transcript_chain(t0, [[(d["seat"], d["action"]) for d in step]
                                              for step in r["decisions"]]).hex()
    return r


NOTE = ("Reveals every verifier MUST refuse (docs/FAIRNESS.md section 9). Each case is a genuine reveal "
        "with one defect; \"reveal\" is the exact reveal text. verdict \"malformed\": the grammar of "
        "FAIRNESS.md section 4 is broken (exit status 2); \"not_verified\": well-formed, but a check fails "
        "(exit status 1). \"expect\", when present, holds expectations with the keys of --expect FILE. "
        "Generated by verify/make_negative_vectors.py (deterministic; --check compares).")


def document():
    b = bases()
    for name, r in b.items():
        got = v.check_text(render(r))
        assert got == "verified", "base %s does not verify: %s" % (name, got)
    cases = build_cases(b)
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    for c in cases:
        exp = v.parse_expect(c["expect"], "expect") if "expect" in c else []
        got = v.check_text(c["reveal"], exp)
        assert got == c["verdict"], "%s: the verifier says %s, the case %s" % (c["name"], got, c["verdict"])
    doc = {"format": "reddog-reveal-negative-vectors-v1", "note": NOTE, "cases": cases}
    lines = ["{", '  "format": %s,' % json.dumps(doc["format"]), '  "note": %s,' % json.dumps(NOTE, ensure_ascii=False),
             '  "cases": [']
    for i, c in enumerate(cases):
        lines.append("    " + json.dumps(c, ensure_ascii=False) + ("," if i + 1 < len(cases) else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def main(argv):
    text = document()
    if argv == ["--check"]:
        with open(OUT, encoding="utf-8") as f:
            same = f.read() == text
        print("%s is %s" % (os.path.relpath(OUT, ROOT), "up to date" if same else "NOT what the generator writes"))
        return 0 if same else 1
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote %s (%d cases)" % (os.path.relpath(OUT, ROOT), text.count('"verdict"')))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
