#!/usr/bin/env python3
"""Independent verifier for Red Dog reveals (reddog-reveal-v1, -v2 and -v3, deal algorithm
reddog-deal-v1).

Written from docs/FAIRNESS.md (sections 3 and 4) and RULES.md alone, with the Python standard
library only (hashlib, hmac, json); ChaCha20 is implemented below from RFC 8439, section 2.3.

Usage:
    verify.py [FILE|-] [--expect-commitment HEX] [--expect-client-seed TEXT]
              [--expect-nonce N] [--expect-round-id TEXT] [--expect-table-id TEXT]
              [--expect-decks N] [--expect-transcript HEX] [--expect-rules-digest HEX]
              [--expect-bets N,N,...] [--expect-returned N,N,...]
              [--expect-decisions SEAT:ACTION,...;...] [--expect EXPECT.json]
        check a settled round's reveal (no FILE or "-": read stdin) against the player's record:
        each --expect-* (and each key of the --expect file, a JSON object with any of the keys
        commitment, client_seed, nonce, round_id, table_id, decks, transcript, rules_digest,
        bets, returned, decisions) must equal the reveal's value. Text forms (FAIRNESS.md 4.5):
        integers are decimal digits without sign or leading zero (0, 7, 500; not 007, +7);
        --expect-bets / --expect-returned list one integer per seat, seat 0 first, separated
        by commas ("500,1000"); --expect-decisions lists each Decide call's decisions as
        SEAT:ACTION separated by commas, the calls separated by semicolons, ACTION raise or
        stand ("0:raise,1:stand;2:stand"; the empty string: no Decide call); hex is 64 digits
        of either case
    verify.py [FILE|-] --public-key HEX --signature HEX [--key-id ID] [--trusted-keys FILE]
              [--allow-untrusted] [--expect-... as above]
        also check the engine's signed receipt (FAIRNESS.md 4.7): the Ed25519 signature
        (128 hex, Settle's `signature`) by the engine's public key (64 hex, GetRules'
        `signing_keys` or `reddog keygen --public`) over its key id, the reveal's transcript
        and the exact bytes of FILE (one trailing line feed ignored). A reveal changed in any
        byte fails it, without the player's record. The key must be among --trusted-keys (got
        outside the platform), else the round is not verified unless --allow-untrusted. Ed25519
        is checked strictly (small-order and non-canonical points refused, S < L). Needs the
        `cryptography` package (only these options import it)
    verify.py [FILE|-] --public-key HEX --receipt RECEIPT.json [--receipt ...] [...]
        also check receipts the player kept (`receipt_json` of CommitSeed, StartRound and
        Decide, FAIRNESS.md 4.7): each must be signed by the key, name no card before the table
        showed it, not be of a sandbox round, and the reveal must descend from it (its
        transcript after that step is the receipt's), so a reveal of a branch the player did
        not play is not verified
    verify.py --vectors DIR
        check every vector file it knows in DIR (deal-v1.json, reveal-v2.json and
        reveal-v3.json when present, reveal-negative.json, receipt-v1.json and receipt-v2.json
        when present, and the Ed25519 edge vectors in ed25519/)

Exit status: 0 verified / all vectors pass; 1 not verified / a vector fails; 2 malformed input
(a reveal or expectation that breaks the grammar, unreadable input, bad usage).
"""

import argparse
import datetime
import hashlib
import hmac
import json
import os
import sys

ALGORITHM = "reddog-deal-v1"
FORMAT_V2 = "reddog-reveal-v2"
FORMAT_V3 = "reddog-reveal-v3"
VERSION = 1
DOMAIN = b"reddog/deal"
RANKS = "23456789TJQKA"
SUITS = "cdhs"
MASK32 = 0xFFFFFFFF
U64_MAX = 2**64 - 1

MAX_CLIENT_SEED_BYTES = 1024
MAX_ROUND_ID_BYTES = 128
MAX_TABLE_ID_BYTES = 64
MAX_SEATS = 7
MAX_ODDS = 10000
# The largest bet any table allows: its largest win (raised, at the largest odds) fits in 64 bits.
MAX_BET = U64_MAX // (2 * (MAX_ODDS + 1))
SPREADS = 11
TABLE_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
LOWER_HEX = frozenset("0123456789abcdef")
ANY_HEX = frozenset("0123456789abcdefABCDEF")

# A sandbox round's reveal (a test table's requested deal): refused, never a fair round.
FORMAT_SANDBOX = "reddog-sandbox-reveal-v1"
V1_REQUIRED = ("algorithm", "server_seed", "commitment", "client_seed", "nonce", "decks", "cards")
V1_OPTIONAL = ("round_id",)
V2_KEYS = ("format", "algorithm", "server_seed", "commitment", "table_id", "round_id", "client_seed",
           "nonce", "decks", "cards", "paytable", "decisions", "seats", "transcript")
V3_KEYS = V2_KEYS[:11] + ("limits", "currency", "rules_digest") + V2_KEYS[11:]
LIMITS_KEYS = ("min_bet", "max_bet")
CURRENCY_KEYS = ("code", "exponent")
MAX_EXPONENT = 4
SEAT_KEYS = ("bet", "raised", "stake", "returned")
DECISION_KEYS = ("seat", "action")
PAYTABLE_KEYS = ("spread", "three_of_a_kind")
ACTIONS = {"raise": 1, "stand": 2}
EXPECT_KEYS = ("commitment", "client_seed", "nonce", "round_id", "table_id", "decks", "transcript", "rules_digest",
               "bets", "returned", "decisions")

TRANSCRIPT_START = b"reddog/transcript/v1/start"
TRANSCRIPT_START_V2 = b"reddog/transcript/v2/start"
RULES_LABEL = b"reddog/rules/v1"
TRANSCRIPT_DECIDE = b"reddog/transcript/v1/decide"


class Malformed(Exception):
    """The input does not have the form the specification requires (exit status 2)."""


# --- ChaCha20 (RFC 8439, 2.1-2.3) -------------------------------------------------------

def _rotl(v, c):
    return ((v << c) & MASK32) | (v >> (32 - c))


def _quarter_round(x, a, b, c, d):
    x[a] = (x[a] + x[b]) & MASK32
    x[d] = _rotl(x[d] ^ x[a], 16)
    x[c] = (x[c] + x[d]) & MASK32
    x[b] = _rotl(x[b] ^ x[c], 12)
    x[a] = (x[a] + x[b]) & MASK32
    x[d] = _rotl(x[d] ^ x[a], 8)
    x[c] = (x[c] + x[d]) & MASK32
    x[b] = _rotl(x[b] ^ x[c], 7)


def chacha20_block(key, counter, nonce):
    """One 64-byte ChaCha20 block: 32-byte key, 32-bit block counter, 12-byte nonce."""
    if len(key) != 32 or len(nonce) != 12:
        raise ValueError("ChaCha20 takes a 32-byte key and a 12-byte nonce")
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    state += [int.from_bytes(key[i:i + 4], "little") for i in range(0, 32, 4)]
    state += [counter & MASK32]
    state += [int.from_bytes(nonce[i:i + 4], "little") for i in range(0, 12, 4)]
    x = list(state)
    for _ in range(10):  # 20 rounds: 10 x (column round + diagonal round)
        _quarter_round(x, 0, 4, 8, 12)
        _quarter_round(x, 1, 5, 9, 13)
        _quarter_round(x, 2, 6, 10, 14)
        _quarter_round(x, 3, 7, 11, 15)
        _quarter_round(x, 0, 5, 10, 15)
        _quarter_round(x, 1, 6, 11, 12)
        _quarter_round(x, 2, 7, 8, 13)
        _quarter_round(x, 3, 4, 9, 14)
    return b"".join(((x[i] + state[i]) & MASK32).to_bytes(4, "little") for i in range(16))


class WordStream:
    """The deal's words: the ChaCha20 keystream under the deal key, zero nonce, block counter
    0, 1, 2, ..., cut into 32-bit little-endian words."""

    def __init__(self, key):
        self.key = key
        self.counter = 0
        self.words = []
        self.drawn = 0

    def next_word(self):
        if not self.words:
            block = chacha20_block(self.key, self.counter, bytes(12))
            self.counter += 1
            self.words = [int.from_bytes(block[i:i + 4], "little") for i in range(60, -1, -4)]
        self.drawn += 1
        return self.words.pop()


# --- The deal (docs/FAIRNESS.md, section 3) ----------------------------------------------

def field(data):
    return len(data).to_bytes(4, "big") + data


def hmac_message(client_seed, nonce, decks):
    return (field(DOMAIN) + field(VERSION.to_bytes(4, "big")) + field(client_seed)
            + field(nonce.to_bytes(8, "big")) + field(bytes([decks])))


def deal_key(server_seed, client_seed, nonce, decks):
    return hmac.new(server_seed, hmac_message(client_seed, nonce, decks), hashlib.sha256).digest()


def uniform_below(stream, n):
    """Returns (value, rejected words): the first word x < 2^32 - (2^32 mod n), reduced mod n."""
    limit = 2**32 - (2**32 % n)
    rejected = 0
    while True:
        x = stream.next_word()
        if x < limit:
            return x % n, rejected
        rejected += 1


def deal(server_seed, client_seed, nonce, decks, count):
    """The first `count` card codes of the shuffled shoe, and how many words were rejected."""
    stream = WordStream(deal_key(server_seed, client_seed, nonce, decks))
    shoe = [p % 52 for p in range(52 * decks)]
    rejected = 0
    for i in range(count):
        r, rej = uniform_below(stream, len(shoe) - i)
        rejected += rej
        j = i + r
        shoe[i], shoe[j] = shoe[j], shoe[i]
    return shoe[:count], rejected


def card_text(code):
    return RANKS[code // 4] + SUITS[code % 4]


def card_code(text):
    """The code of a card in canonical text (rank from 23456789TJQKA, suit from cdhs)."""
    if not isinstance(text, str) or len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise Malformed("cards: %s is not a card in canonical text such as \"Ah\" or \"Tc\"" % _show(text))
    return RANKS.index(text[0]) * 4 + SUITS.index(text[1])


def rank_value(code):
    """2 .. 14 (ace high)."""
    return code // 4 + 2


# --- The rules (RULES.md) ------------------------------------------------------------------

PAIR, CONSECUTIVE, NON_CONSECUTIVE = "pair", "consecutive", "non-consecutive"


def hand_class(first, second):
    """(class, spread) of the two face-up cards; spread is the number of ranks strictly
    between them (1..11) for a non-consecutive hand, else None."""
    a, b = rank_value(first), rank_value(second)
    if a == b:
        return PAIR, None
    if abs(a - b) == 1:
        return CONSECUTIVE, None
    return NON_CONSECUTIVE, abs(a - b) - 1


def cards_for(cls):
    """How many cards a round of this hand class deals."""
    return 2 if cls == CONSECUTIVE else 3


def settle_seat(codes, paytable, bet, raised):
    """(stake, returned) of one seat by RULES.md, in unbounded integers; returned is what goes
    back to the player: stake * (odds + 1) on a win, stake on a push, 0 on a loss."""
    stake = bet * 2 if raised else bet
    cls, spread = hand_class(codes[0], codes[1])
    if cls == CONSECUTIVE:
        return stake, stake
    third = rank_value(codes[2])
    if cls == PAIR:
        if third == rank_value(codes[0]):
            return stake, stake * (paytable["three_of_a_kind"] + 1)
        return stake, stake
    lo, hi = sorted((rank_value(codes[0]), rank_value(codes[1])))
    if lo < third < hi:
        return stake, stake * (paytable["spread"][spread - 1] + 1)
    return stake, 0


# --- The transcript (FAIRNESS.md section 4, docs/design/round-integrity.md section 4) --------

def _odds_bytes(paytable):
    return b"".join(o.to_bytes(4, "big") for o in list(paytable["spread"]) + [paytable["three_of_a_kind"]])


def transcript_start_preimage(commitment, table_id, round_id, nonce, decks, client_seed, paytable, bets,
                              rules_digest=None):
    """The bytes t_0 is the SHA-256 of: commitment is 32 raw bytes, strings are UTF-8 bytes.
    With a rules digest (32 raw bytes; reveal v3) t_0 is version 2: its own label and the
    digest as a last field."""
    label = TRANSCRIPT_START if rules_digest is None else TRANSCRIPT_START_V2
    out = (field(label) + field(commitment) + field(table_id) + field(round_id)
           + field(nonce.to_bytes(8, "big")) + field(bytes([decks])) + field(client_seed)
           + field(_odds_bytes(paytable)) + field(b"".join(b.to_bytes(8, "big") for b in bets)))
    return out if rules_digest is None else out + field(rules_digest)


def rules_preimage(decks, paytable, min_bet, max_bet, code, exponent):
    """The bytes the rules digest (FAIRNESS.md 4.6) is the SHA-256 of."""
    return (field(RULES_LABEL) + field(bytes([decks])) + field(_odds_bytes(paytable))
            + field(min_bet.to_bytes(8, "big") + max_bet.to_bytes(8, "big")) + field(code.encode("ascii"))
            + field(bytes([exponent])))


def rules_digest(*inputs):
    return hashlib.sha256(rules_preimage(*inputs)).digest()


def transcript_start(*inputs):
    """t_0 from the round's inputs (see transcript_start_preimage)."""
    return hashlib.sha256(transcript_start_preimage(*inputs)).digest()


def transcript_step(previous, decisions):
    """t_k from t_(k-1) and the k-th Decide's decisions [(seat, action)], ascending seat."""
    body = b"".join(bytes([seat, ACTIONS[action]]) for seat, action in decisions)
    return hashlib.sha256(field(TRANSCRIPT_DECIDE) + field(previous) + field(body)).digest()


def transcript_chain(t0, decides):
    t = t0
    for d in decides:
        t = transcript_step(t, d)
    return t


# --- Strict JSON ---------------------------------------------------------------------------

def _show(value):
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise Malformed("duplicate key %s" % _show(key))
        seen[key] = value
    return seen


def _int_literal(text):
    # JSON allows "-0" and "-5": the grammar allows digits only (no sign).
    if not text.isdigit():
        raise Malformed("number %s: integers are digits only (no sign, fraction or exponent)" % text)
    return int(text)


def _float_literal(text):
    raise Malformed("number %s: integers are digits only (no sign, fraction or exponent)" % text)


def _constant(text):
    raise Malformed("%s is not JSON" % text)


def loads_strict(data):
    """Parses JSON text (bytes or str) strictly: UTF-8 without BOM, no duplicate keys, numbers
    only as unsigned integers, no NaN/Infinity, no unpaired surrogate escapes."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Malformed("the input is not UTF-8: %s" % e) from None
    if data.startswith("\ufeff"):
        raise Malformed("the input starts with a byte order mark")
    try:
        value = json.loads(data, object_pairs_hook=_no_duplicates, parse_int=_int_literal,
                           parse_float=_float_literal, parse_constant=_constant)
    except RecursionError:
        raise Malformed("the JSON nests too deeply") from None
    except ValueError as e:  # json.JSONDecodeError, int conversion limits
        raise Malformed("not valid JSON: %s" % e) from None
    _check_strings(value)
    return value


def _check_strings(value):
    """Every string (keys too) must be encodable as UTF-8: no unpaired surrogate escapes."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise Malformed("a string holds an unpaired surrogate escape (not UTF-8)") from None
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


# --- The reveal grammar (FAIRNESS.md section 4) -------------------------------------------

def is_int(v):
    return type(v) is int  # bool is a subclass of int in Python: excluded here


def want_keys(obj, where, required, optional=()):
    if not isinstance(obj, dict):
        raise Malformed("%s: must be a JSON object" % where)
    for k in obj:
        if k not in required and k not in optional:
            raise Malformed("%s: unknown key %s" % (where, _show(k)))
    for k in required:
        if k not in obj:
            raise Malformed("%s: missing key %s" % (where, _show(k)))


def want_int(value, name, lo, hi):
    if not is_int(value):
        raise Malformed("%s: must be a JSON integer, got %s" % (name, _show(value)))
    if not lo <= value <= hi:
        raise Malformed("%s: %d is outside %d..%d" % (name, value, lo, hi))
    return value


def want_string(value, name, lo=0, hi=None):
    if not isinstance(value, str):
        raise Malformed("%s: must be a JSON string, got %s" % (name, _show(value)))
    raw = value.encode("utf-8")
    if len(raw) < lo or (hi is not None and len(raw) > hi):
        raise Malformed("%s: %d bytes of UTF-8, must be %d..%s" % (name, len(raw), lo, hi if hi is not None else "2^32-1"))
    return raw


def want_hex32(value, name, lower_only):
    if not isinstance(value, str):
        raise Malformed("%s: must be a JSON string of 64 hexadecimal digits" % name)
    allowed = LOWER_HEX if lower_only else ANY_HEX
    if len(value) != 64 or any(ch not in allowed for ch in value):
        raise Malformed("%s: must be 64 %shexadecimal digits" % (name, "lower-case " if lower_only else ""))
    return bytes.fromhex(value)


def is_control(ch):
    """Unicode general category Cc: U+0000-U+001F and U+007F-U+009F."""
    o = ord(ch)
    return o <= 0x1F or 0x7F <= o <= 0x9F


def want_round_id(value):
    raw = want_string(value, "round_id", 1, MAX_ROUND_ID_BYTES)
    if any(is_control(ch) for ch in value):
        raise Malformed("round_id: must not contain control characters")
    return raw


def want_table_id(value):
    raw = want_string(value, "table_id", 1, MAX_TABLE_ID_BYTES)
    if any(ch not in TABLE_ID_CHARS for ch in value):
        raise Malformed("table_id: only the characters A-Z a-z 0-9 . _ - are allowed")
    return raw


def want_cards(value):
    if not isinstance(value, list):
        raise Malformed("cards: must be a JSON array")
    codes = [card_code(c) for c in value]
    if len(codes) < 2:
        raise Malformed("cards: a round deals at least 2 cards, the reveal lists %d" % len(codes))
    cls, _ = hand_class(codes[0], codes[1])
    want = cards_for(cls)
    if len(codes) != want:
        raise Malformed("cards: a %s hand deals exactly %d cards, the reveal lists %d" % (cls, want, len(codes)))
    return codes


class Reveal:
    """A reveal that passed the grammar: version 1, 2 or 3, values decoded."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def parse_reveal(obj):
    """Checks the grammar of section 4; returns a Reveal or raises Malformed naming the field."""
    if not isinstance(obj, dict):
        raise Malformed("the reveal must be a JSON object")
    if "format" in obj:
        if obj["format"] == FORMAT_SANDBOX:
            raise Malformed("format: %s is a sandbox round, dealt at a test table from requested cards, not from "
                            "the committed seed; it never verifies as a fair round" % FORMAT_SANDBOX)
        if obj["format"] not in (FORMAT_V2, FORMAT_V3):
            raise Malformed("format: must be %s or %s (a reveal without \"format\" is version 1), got %s"
                            % (_show(FORMAT_V3), _show(FORMAT_V2), _show(obj["format"])))
        return _parse_v2(obj, obj["format"] == FORMAT_V3)
    return _parse_v1(obj)


def _common(obj, lower_only):
    if not isinstance(obj["algorithm"], str) or obj["algorithm"] != ALGORITHM:
        raise Malformed("algorithm: must be %s, got %s" % (_show(ALGORITHM), _show(obj["algorithm"])))
    seed = want_hex32(obj["server_seed"], "server_seed", lower_only)
    commitment = want_hex32(obj["commitment"], "commitment", lower_only)
    nonce = want_int(obj["nonce"], "nonce", 0, U64_MAX)
    decks = want_int(obj["decks"], "decks", 1, 8)
    return seed, commitment, nonce, decks


def _parse_v1(obj):
    want_keys(obj, "reveal (version 1)", V1_REQUIRED, V1_OPTIONAL)
    seed, commitment, nonce, decks = _common(obj, lower_only=False)
    client_seed = want_string(obj["client_seed"], "client_seed", 0, 2**32 - 1)
    round_id = want_round_id(obj["round_id"]) if "round_id" in obj else None
    codes = want_cards(obj["cards"])
    return Reveal(version=1, server_seed=seed, commitment=commitment, client_seed=client_seed, nonce=nonce,
                  decks=decks, codes=codes, round_id=round_id, table_id=None, transcript=None, rules_digest=None,
                  bets=None, returned=None, decisions=None)


def _parse_v3_rules(obj):
    limits = obj["limits"]
    want_keys(limits, "limits", LIMITS_KEYS)
    min_bet = want_int(limits["min_bet"], "limits.min_bet", 1, MAX_BET)
    max_bet = want_int(limits["max_bet"], "limits.max_bet", min_bet, MAX_BET)
    currency = obj["currency"]
    want_keys(currency, "currency", CURRENCY_KEYS)
    code = currency["code"]
    if not isinstance(code, str) or len(code) != 3 or any(ch not in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" for ch in code):
        raise Malformed("currency.code: must be three capital letters A-Z, got %s" % _show(code))
    exponent = want_int(currency["exponent"], "currency.exponent", 0, MAX_EXPONENT)
    digest = want_hex32(obj["rules_digest"], "rules_digest", lower_only=True)
    return {"min_bet": min_bet, "max_bet": max_bet}, {"code": code, "exponent": exponent}, digest


def _parse_v2(obj, v3=False):
    want_keys(obj, "reveal", V3_KEYS if v3 else V2_KEYS)
    limits, currency, digest = _parse_v3_rules(obj) if v3 else (None, None, None)
    seed, commitment, nonce, decks = _common(obj, lower_only=True)
    table_id = want_table_id(obj["table_id"])
    round_id = want_round_id(obj["round_id"])
    client_seed = want_string(obj["client_seed"], "client_seed", 1, MAX_CLIENT_SEED_BYTES)
    codes = want_cards(obj["cards"])
    cls, _ = hand_class(codes[0], codes[1])

    paytable = obj["paytable"]
    want_keys(paytable, "paytable", PAYTABLE_KEYS)
    if not isinstance(paytable["spread"], list) or len(paytable["spread"]) != SPREADS:
        raise Malformed("paytable.spread: must be an array of exactly %d integers" % SPREADS)
    spread = [want_int(o, "paytable.spread[%d]" % i, 1, MAX_ODDS) for i, o in enumerate(paytable["spread"])]
    trips = want_int(paytable["three_of_a_kind"], "paytable.three_of_a_kind", 1, MAX_ODDS)

    seats_in = obj["seats"]
    if not isinstance(seats_in, list) or not 1 <= len(seats_in) <= MAX_SEATS:
        raise Malformed("seats: must be an array of 1..%d seats" % MAX_SEATS)
    seats = []
    for i, s in enumerate(seats_in):
        where = "seats[%d]" % i
        want_keys(s, where, SEAT_KEYS)
        if not isinstance(s["raised"], bool):
            raise Malformed("%s.raised: must be true or false, got %s" % (where, _show(s["raised"])))
        seats.append({"bet": want_int(s["bet"], where + ".bet", 0, U64_MAX), "raised": s["raised"],
                      "stake": want_int(s["stake"], where + ".stake", 0, U64_MAX),
                      "returned": want_int(s["returned"], where + ".returned", 0, U64_MAX)})

    decisions_in = obj["decisions"]
    if not isinstance(decisions_in, list):
        raise Malformed("decisions: must be a JSON array (one entry per Decide call)")
    if decisions_in and cls != NON_CONSECUTIVE:
        raise Malformed("decisions: a %s hand takes no decisions" % cls)
    decided = set()
    decides = []
    for k, step in enumerate(decisions_in):
        where = "decisions[%d]" % k
        if not isinstance(step, list) or not step:
            raise Malformed("%s: must be a non-empty array of {\"seat\",\"action\"}" % where)
        previous = -1
        entries = []
        for j, d in enumerate(step):
            w = "%s[%d]" % (where, j)
            want_keys(d, w, DECISION_KEYS)
            seat = want_int(d["seat"], w + ".seat", 0, len(seats) - 1)
            if not isinstance(d["action"], str) or d["action"] not in ACTIONS:
                raise Malformed("%s.action: must be \"raise\" or \"stand\", got %s" % (w, _show(d["action"])))
            if seat in decided:
                raise Malformed("%s.seat: seat %d decides more than once in the round" % (w, seat))
            if seat <= previous:
                raise Malformed("%s.seat: seats within one Decide must be in ascending order" % w)
            decided.add(seat)
            previous = seat
            entries.append((seat, d["action"]))
        decides.append(entries)

    transcript = want_hex32(obj["transcript"], "transcript", lower_only=True)
    return Reveal(version=3 if v3 else 2, server_seed=seed, commitment=commitment, table_id=table_id,
                  round_id=round_id, client_seed=client_seed, nonce=nonce, decks=decks, codes=codes,
                  paytable={"spread": spread, "three_of_a_kind": trips}, decides=decides, seats=seats,
                  transcript=transcript, limits=limits, currency=currency, rules_digest=digest,
                  bets=[s["bet"] for s in seats], returned=[s["returned"] for s in seats], decisions=decides)


# --- Expectations -------------------------------------------------------------------------

def _want_amounts(value, name):
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_SEATS:
        raise Malformed("%s: must be an array of 1..%d integers (one per seat)" % (name, MAX_SEATS))
    return [want_int(x, "%s[%d]" % (name, i), 0, U64_MAX) for i, x in enumerate(value)]


def _want_decisions(value, name):
    if not isinstance(value, list):
        raise Malformed("%s: must be an array (one entry per Decide call)" % name)
    out = []
    for k, step in enumerate(value):
        if not isinstance(step, list) or not step:
            raise Malformed("%s[%d]: must be a non-empty array of {\"seat\",\"action\"}" % (name, k))
        entries = []
        for j, d in enumerate(step):
            w = "%s[%d][%d]" % (name, k, j)
            want_keys(d, w, DECISION_KEYS)
            seat = want_int(d["seat"], w + ".seat", 0, MAX_SEATS - 1)
            if not isinstance(d["action"], str) or d["action"] not in ACTIONS:
                raise Malformed("%s.action: must be \"raise\" or \"stand\", got %s" % (w, _show(d["action"])))
            entries.append((seat, d["action"]))
        out.append(sorted(entries))  # seats within a call in any order (the reveal's: ascending)
    return out


def parse_expect(obj, where="--expect"):
    """A JSON object with any of EXPECT_KEYS, no others; returns [(key, decoded value)]."""
    if not isinstance(obj, dict):
        raise Malformed("%s: must be a JSON object" % where)
    out = []
    for key, value in obj.items():
        if key not in EXPECT_KEYS:
            raise Malformed("%s: unknown key %s (allowed: %s)" % (where, _show(key), ", ".join(EXPECT_KEYS)))
        name = "%s.%s" % (where, key)
        if key in ("commitment", "transcript", "rules_digest"):
            out.append((key, want_hex32(value, name, lower_only=False)))
        elif key == "nonce":
            out.append((key, want_int(value, name, 0, U64_MAX)))
        elif key == "decks":
            out.append((key, want_int(value, name, 1, 8)))
        elif key in ("bets", "returned"):
            out.append((key, _want_amounts(value, name)))
        elif key == "decisions":
            out.append((key, _want_decisions(value, name)))
        else:
            out.append((key, want_string(value, name)))
    return out


def text_int(text, name, lo, hi):
    """One integer in the text form of FAIRNESS.md 4.5: 0 or [1-9][0-9]* (no sign, no leading
    zero, ASCII digits only), within lo..hi."""
    if not (text.isascii() and text.isdigit()) or (len(text) > 1 and text[0] == "0"):
        raise Malformed("%s: %s is not a decimal integer without sign or leading zero" % (name, _show(text)))
    return want_int(int(text), name, lo, hi)


def text_amounts(text, name):
    """'500,1000': one integer per seat, seat 0 first."""
    parts = text.split(",")
    if not 1 <= len(parts) <= MAX_SEATS:
        raise Malformed("%s: must list 1..%d integers separated by commas" % (name, MAX_SEATS))
    return [text_int(p, "%s (seat %d)" % (name, i), 0, U64_MAX) for i, p in enumerate(parts)]


def text_decisions(text, name):
    """'0:raise,1:stand;2:stand': Decide calls separated by ';', each call's decisions by ',',
    each SEAT:ACTION; the empty string is no Decide call."""
    if text == "":
        return []
    out = []
    for k, call in enumerate(text.split(";")):
        entries = []
        for part in call.split(","):
            seat, sep, action = part.partition(":")
            if not sep or action not in ACTIONS:
                raise Malformed("%s: %s (call %d) is not SEAT:raise or SEAT:stand" % (name, _show(part), k + 1))
            entries.append((text_int(seat, name + " (seat)", 0, MAX_SEATS - 1), action))
        out.append(sorted(entries))  # seats within a call in any order (the reveal's: ascending)
    return out


def expect_from_args(args):
    """The --expect-* options as [(key, value)]; text options are compared as the bytes given
    on the command line (os.fsencode undoes Python's decoding of argv)."""
    out = []
    for key, value in (("commitment", args.expect_commitment), ("transcript", args.expect_transcript),
                       ("rules_digest", args.expect_rules_digest)):
        if value is not None:
            out.append((key, want_hex32(value, "--expect-" + key.replace("_", "-"), lower_only=False)))
    for key, value in (("client_seed", args.expect_client_seed), ("nonce", args.expect_nonce),
                       ("round_id", args.expect_round_id), ("table_id", args.expect_table_id),
                       ("decks", args.expect_decks), ("bets", args.expect_bets),
                       ("returned", args.expect_returned), ("decisions", args.expect_decisions)):
        if value is None:
            continue
        name = "--expect-" + key.replace("_", "-")
        if key in ("nonce", "decks"):
            lo, hi = (0, U64_MAX) if key == "nonce" else (1, 8)
            out.append((key, text_int(value, name, lo, hi)))
        elif key in ("bets", "returned"):
            out.append((key, text_amounts(value, name)))
        elif key == "decisions":
            out.append((key, text_decisions(value, name)))
        else:
            out.append((key, os.fsencode(value)))
    return out


# --- Verification -------------------------------------------------------------------------

def verify(reveal, expectations=()):
    """Runs every check of section 4 on a parsed reveal; expectations are [(key, value)] with
    keys from EXPECT_KEYS (commitment as 32 bytes, strings as UTF-8 bytes, integers). Returns
    (ok, lines): each line (label, ok or None for information, text); ok when all hold."""
    lines = []

    def check(label, ok, text):
        lines.append((label, ok, text))

    actual = hashlib.sha256(reveal.server_seed).digest()
    check("commitment", actual == reveal.commitment,
          "SHA-256(server_seed) = commitment" if actual == reveal.commitment
          else "SHA-256(server_seed) = %s, not the commitment" % actual.hex())

    recomputed, _ = deal(reveal.server_seed, reveal.client_seed, reveal.nonce, reveal.decks, len(reveal.codes))
    cards_ok = recomputed == reveal.codes
    check("cards", cards_ok, "recomputed %s, revealed %s" % (
        " ".join(card_text(c) for c in recomputed), " ".join(card_text(c) for c in reveal.codes)))
    cls, spread = hand_class(reveal.codes[0], reveal.codes[1])
    check("hand", None, cls + (", spread %d" % spread if spread else ""))

    if reveal.version >= 2:
        decision = {}
        for step in reveal.decides:
            for seat, action in step:
                decision[seat] = action
        # Payouts from the revealed cards (when they are not the recomputed ones, the round is
        # already not verified; the amounts are still checked against what the reveal says).
        for i, s in enumerate(reveal.seats):
            raised = decision.get(i) == "raise"
            stake, returned = settle_seat(reveal.codes, reveal.paytable, s["bet"], raised)
            problems = []
            if not 1 <= s["bet"] <= MAX_BET:
                problems.append("bet %d is outside 1..%d: no table allows it" % (s["bet"], MAX_BET))
            if s["raised"] != raised:
                problems.append("raised is %s but the seat's decision is %s"
                                % (str(s["raised"]).lower(), decision.get(i, "none (stand)")))
            if stake > U64_MAX:
                problems.append("the stake %d does not fit in 0..2^64-1" % stake)
            elif s["stake"] != stake:
                problems.append("stake %d, the rules give %d" % (s["stake"], stake))
            if returned > U64_MAX:
                problems.append("the amount returned %d does not fit in 0..2^64-1" % returned)
            elif s["returned"] != returned:
                problems.append("returned %d, the rules give %d" % (s["returned"], returned))
            check("seat %d" % i, not problems,
                  "; ".join(problems) if problems else "bet %d, %s, stake %d, returned %d"
                  % (s["bet"], "raised" if raised else "stood", stake, returned))

        totals = [sum(s["stake"] for s in reveal.seats), sum(s["returned"] for s in reveal.seats)]
        check("totals", all(x <= U64_MAX for x in totals),
              "staked %d, returned %d%s" % (totals[0], totals[1], "" if all(x <= U64_MAX for x in totals)
                                            else ": beyond 2^64-1, no table allows such a round"))

        if reveal.version == 3:
            lim, cur = reveal.limits, reveal.currency
            d = rules_digest(reveal.decks, reveal.paytable, lim["min_bet"], lim["max_bet"], cur["code"],
                             cur["exponent"])
            check("rules digest", d == reveal.rules_digest,
                  "SHA-256 of decks, paytable, limits and currency" if d == reveal.rules_digest
                  else "recomputed %s, revealed %s" % (d.hex(), reveal.rules_digest.hex()))
            outside = [i for i, s in enumerate(reveal.seats) if not lim["min_bet"] <= s["bet"] <= lim["max_bet"]]
            check("limits", not outside, "every bet within %d..%d" % (lim["min_bet"], lim["max_bet"]) if not outside
                  else "seat(s) %s bet outside %d..%d" % (", ".join(map(str, outside)), lim["min_bet"], lim["max_bet"]))
        t0 = transcript_start(reveal.commitment, reveal.table_id, reveal.round_id, reveal.nonce, reveal.decks,
                              reveal.client_seed, reveal.paytable, [s["bet"] for s in reveal.seats],
                              reveal.rules_digest)
        t = transcript_chain(t0, reveal.decides)
        check("transcript", t == reveal.transcript,
              "step %d, %s" % (len(reveal.decides), t.hex()) if t == reveal.transcript
              else "recomputed %s (step %d), revealed %s" % (t.hex(), len(reveal.decides), reveal.transcript.hex()))

    for key, want in expectations:
        have = getattr(reveal, key)
        if have is None:
            check("expect " + key, False, "the reveal (version %d) does not carry %s" % (reveal.version, key))
        else:
            check("expect " + key, have == want, "as expected" if have == want else "the reveal says %s, expected %s"
                  % (_render(have), _render(want)))

    ok = all(line[1] is not False for line in lines)
    return ok, lines


def _render(v):
    if isinstance(v, bytes):
        try:
            return _show(v.decode("utf-8"))
        except UnicodeDecodeError:
            return repr(v)
    return str(v)


def check_text(data, expectations=(), out=None):
    """Parses and verifies reveal text. Returns "verified", "not_verified" or "malformed"
    (printing the reason when out is given)."""
    try:
        reveal = parse_reveal(loads_strict(data))
    except Malformed as e:
        if out is not None:
            print("malformed   %s" % e, file=out)
        return "malformed"
    ok, lines = verify(reveal, expectations)
    if out is not None:
        report(reveal, ok, lines, out)
    return "verified" if ok else "not_verified"


def report(reveal, ok, lines, out):
    print("%-18s %s" % ("format", "reddog-reveal-v%d" % reveal.version), file=out)
    if reveal.round_id is not None:
        print("%-18s %s" % ("round_id", _render(reveal.round_id)), file=out)
    for label, good, text in lines:
        mark = "" if good is None else ("OK    " if good else "FAIL  ")
        print("%-18s %s%s" % (label, mark, text), file=out)
    print("%-18s %s" % ("verdict", "VERIFIED" if ok else "NOT VERIFIED"), file=out)


# --- Signed receipts (section 4.7) -------------------------------------------------------

RECEIPT_COMMIT_LABEL = b"reddog/receipt/commit/v2"
RECEIPT_COMMIT_LABEL_V1 = b"reddog/receipt/commit/v1"
RECEIPT_SETTLE_LABEL = b"reddog/receipt/settle/v2"
RECEIPT_SETTLE_LABEL_V1 = b"reddog/receipt/settle/v1"
RECEIPT_STEP_LABEL = b"reddog/receipt/step/v2"
RECEIPT_STEP_LABEL_V1 = b"reddog/receipt/step/v1"

# Strict Ed25519 (FAIRNESS.md 4.7): the field prime, the group order and the 14 encodings of
# the 8 points of small order (C2SP/CCTV ed25519/README.md).
ED25519_P = 2**255 - 19
ED25519_L = 2**252 + 27742317777372353535851937790883648493
SMALL_ORDER_ENCODINGS = frozenset(bytes.fromhex(h) for h in (
    "0000000000000000000000000000000000000000000000000000000000000000",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000080",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
))


def _strict_point(encoding):
    """Canonical (y < p) and not of small order."""
    y = int.from_bytes(encoding, "little") & ((1 << 255) - 1)
    return y < ED25519_P and encoding not in SMALL_ORDER_ENCODINGS


def ed25519_verifies(public_key, signature, message):
    """The one strict Ed25519 rule (FAIRNESS.md 4.7): A and R canonical and not of small
    order, S < L, then RFC 8032's cofactorless check by the `cryptography` package (imported
    only here; OpenSSL alone accepts small-order keys, so the checks above come first)."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    if not _strict_point(public_key) or not _strict_point(signature[:32]) \
            or int.from_bytes(signature[32:], "little") >= ED25519_L:
        return False
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
        return True
    except (InvalidSignature, ValueError):
        return False


def settle_receipt_message(key_id, transcript, reveal_bytes):
    """The bytes a Settle receipt signs (version 2; key_id None: version 1)."""
    if key_id is None:
        return field(RECEIPT_SETTLE_LABEL_V1) + field(transcript) + field(hashlib.sha256(reveal_bytes).digest())
    return (field(RECEIPT_SETTLE_LABEL) + field(key_id.encode("utf-8")) + field(transcript)
            + field(hashlib.sha256(reveal_bytes).digest()))


def commit_receipt_message(commitment, round_id, nonce, table_id, decks, rules_digest, expires_at_unix_ms,
                           algorithm, sandbox, key_id=None):
    """The bytes a CommitSeed receipt signs (hex arguments as bytes, text as str); version 2
    with a key id, version 1 without."""
    head = field(RECEIPT_COMMIT_LABEL_V1) if key_id is None else \
        field(RECEIPT_COMMIT_LABEL) + field(key_id.encode("utf-8"))
    return (head + field(commitment) + field(round_id.encode("utf-8"))
            + field(nonce.to_bytes(8, "big")) + field(table_id.encode("utf-8")) + field(bytes([decks]))
            + field(rules_digest) + field(expires_at_unix_ms.to_bytes(8, "big", signed=True))
            + field(algorithm.encode("utf-8")) + field(bytes([1 if sandbox else 0])))


STEP_RECEIPT_FORMAT = "reddog-step-receipt-v2"
STEP_RECEIPT_FORMAT_V1 = "reddog-step-receipt-v1"
STEP_RECEIPT_KEYS = ("format", "signing_key_id", "commitment", "table_id", "round_id", "rules_digest", "sandbox",
                     "step", "transcript", "cards", "decisions", "signature")
STEP_RECEIPT_KEYS_V1 = ("format", "signing_key_id", "commitment", "round_id", "step", "transcript", "cards",
                        "decisions", "signature")


def step_receipt_message(r):
    """The bytes a step receipt (StartRound, Decide) signs: version 2 (key id, commitment,
    table, round id, rules digest, sandbox flag, step, transcript, cards shown, this step's
    decisions) or version 1 (commitment, round id, step, transcript, cards, decisions)."""
    body = b"".join(bytes([seat, ACTIONS[action]]) for seat, action in sorted(r["decisions"]))
    cards = "".join(r["cards"]).encode("ascii")
    if r["version"] == 1:
        return (field(RECEIPT_STEP_LABEL_V1) + field(r["commitment"]) + field(r["round_id"])
                + field(r["step"].to_bytes(4, "big")) + field(r["transcript"]) + field(cards) + field(body))
    return (field(RECEIPT_STEP_LABEL) + field(r["signing_key_id"].encode("utf-8")) + field(r["commitment"])
            + field(r["table_id"]) + field(r["round_id"]) + field(r["rules_digest"])
            + field(bytes([1 if r["sandbox"] else 0])) + field(r["step"].to_bytes(4, "big"))
            + field(r["transcript"]) + field(cards) + field(body))


def parse_step_receipt(data, where="--receipt"):
    """A step receipt's JSON (`receipt_json` of StartRound or Decide, version 2 or 1): a dict
    of its decoded values and the signature, or Malformed naming the field."""
    obj = loads_strict(data)
    if not isinstance(obj, dict):
        raise Malformed("%s: must be a JSON object" % where)
    version = {STEP_RECEIPT_FORMAT: 2, STEP_RECEIPT_FORMAT_V1: 1}.get(obj.get("format"))
    if version is None:
        raise Malformed("%s.format: must be %s (or %s)" % (where, STEP_RECEIPT_FORMAT, STEP_RECEIPT_FORMAT_V1))
    want_keys(obj, where, STEP_RECEIPT_KEYS if version == 2 else STEP_RECEIPT_KEYS_V1)
    step = want_int(obj["step"], where + ".step", 0, MAX_SEATS)
    cards = obj["cards"]
    if not isinstance(cards, list) or not 2 <= len(cards) <= 3:
        raise Malformed("%s.cards: a step shows two or three cards" % where)
    for c in cards:
        card_code(c)
    decisions = _want_decisions([obj["decisions"]], where + ".decisions")[0] if obj["decisions"] else []
    if (step == 0) != (not decisions):
        raise Malformed("%s.step: step 0 has no decisions, every later step has some" % where)
    if not isinstance(obj["signing_key_id"], str) or not isinstance(obj["round_id"], str):
        raise Malformed("%s: signing_key_id and round_id are strings" % where)
    r = {"kind": "step", "version": version, "signing_key_id": obj["signing_key_id"],
         "commitment": want_hex(obj["commitment"], where + ".commitment", 32),
         "round_id": obj["round_id"].encode("utf-8"), "step": step,
         "transcript": want_hex(obj["transcript"], where + ".transcript", 32), "cards": cards,
         "decisions": decisions, "signature": want_hex(obj["signature"], where + ".signature", 64),
         "table_id": b"", "rules_digest": b"", "sandbox": False}
    if version == 2:
        if not isinstance(obj["table_id"], str) or not isinstance(obj["sandbox"], bool):
            raise Malformed("%s: table_id is a string, sandbox a boolean" % where)
        r["table_id"] = obj["table_id"].encode("utf-8")
        r["sandbox"] = obj["sandbox"]
        r["rules_digest"] = b"" if obj["rules_digest"] == "" else \
            want_hex(obj["rules_digest"], where + ".rules_digest", 32)
    return r


COMMIT_RECEIPT_FORMATS = {"reddog-commit-receipt-v2": 2, "reddog-commit-receipt-v1": 1}
COMMIT_RECEIPT_KEYS = ("format", "signing_key_id", "commitment", "round_id", "nonce", "table_id", "decks",
                       "rules_digest", "expires_at_unix_ms", "algorithm", "sandbox", "signature")


def parse_receipt(data, where="--receipt"):
    """A CommitSeed receipt (`receipt_json` of CommitSeed) or a step receipt, by its format."""
    obj = loads_strict(data)
    if not (isinstance(obj, dict) and obj.get("format") in COMMIT_RECEIPT_FORMATS):
        return parse_step_receipt(data, where)
    want_keys(obj, where, COMMIT_RECEIPT_KEYS)
    for k in ("signing_key_id", "round_id", "table_id", "algorithm"):
        if not isinstance(obj[k], str):
            raise Malformed("%s.%s: must be a string" % (where, k))
    if not isinstance(obj["sandbox"], bool) or not is_int(obj["expires_at_unix_ms"]) \
            or not -2 ** 63 <= obj["expires_at_unix_ms"] < 2 ** 63:
        raise Malformed("%s: sandbox is a boolean, expires_at_unix_ms a 64-bit integer" % where)
    return {"kind": "commit", "version": COMMIT_RECEIPT_FORMATS[obj["format"]],
            "signing_key_id": obj["signing_key_id"],
            "commitment": want_hex(obj["commitment"], where + ".commitment", 32),
            "round_id": obj["round_id"], "nonce": want_int(obj["nonce"], where + ".nonce", 0, U64_MAX),
            "table_id": obj["table_id"], "decks": want_int(obj["decks"], where + ".decks", 0, 255),
            "rules_digest": want_hex(obj["rules_digest"], where + ".rules_digest", 32),
            "expires_at_unix_ms": obj["expires_at_unix_ms"], "algorithm": obj["algorithm"], "sandbox": obj["sandbox"],
            "signature": want_hex(obj["signature"], where + ".signature", 64)}


def shown_after(reveal, step):
    """How many of the reveal's cards the table showed after step `step`: a pair's three at
    once, a consecutive hand's two, a non-consecutive hand's two until every seat has decided
    in calls 1..step, then three."""
    cls, _ = hand_class(reveal.codes[0], reveal.codes[1])
    if cls == "pair":
        return 3
    if cls == "consecutive":
        return 2
    decided = {seat for call in reveal.decides[:step] for seat, _ in call}
    return 3 if step > 0 and decided >= set(range(len(reveal.seats))) else 2


def check_commit_receipt(reveal, r, public_key):
    """(label, ok, text, signed key id or None): the CommitSeed receipt is signed by the key,
    is not of a sandbox round, and the reveal is of the round it committed to."""
    expires = datetime.datetime.fromtimestamp(r["expires_at_unix_ms"] / 1000, datetime.timezone.utc) \
        if -62135596800000 <= r["expires_at_unix_ms"] <= 253402300799000 else None
    label = "receipt commit"
    key_id = r["signing_key_id"] if r["version"] == 2 else None
    message = commit_receipt_message(r["commitment"], r["round_id"], r["nonce"], r["table_id"], r["decks"],
                                     r["rules_digest"], r["expires_at_unix_ms"], r["algorithm"], r["sandbox"], key_id)
    shown = "expires at %d Unix ms (%s)" % (r["expires_at_unix_ms"], expires.isoformat() if expires else "out of range")
    if not ed25519_verifies(public_key, r["signature"], message):
        return (label, False, "not signed by %s; %s" % (public_key.hex(), shown), None)
    if r["sandbox"]:
        return (label, False, "a sandbox round: its cards were requested, not dealt fair", key_id)
    descends = (reveal.version == 3 and r["commitment"] == reveal.commitment
                and r["round_id"].encode("utf-8") == reveal.round_id and r["nonce"] == reveal.nonce
                and r["table_id"].encode("utf-8") == reveal.table_id and r["decks"] == reveal.decks
                and r["rules_digest"] == reveal.rules_digest and r["algorithm"] == ALGORITHM)
    return (label, descends, "signed (v%d), %s; the reveal %s" % (
        r["version"], shown, "is of this commitment's round" if descends else "is not of this commitment's round"),
        key_id)


def check_step_receipt(reveal, r, public_key):
    """(label, ok, text, signed key id or None): the step receipt is signed by the key; it
    names exactly the cards the table showed after its step (never a face-down card); it is
    not of a sandbox round; and the reveal descends from it (same commitment, round id and —
    version 2 — table and rules digest, the transcript after call `step` recomputed from the
    reveal equal to the receipt's, its decisions the reveal's call `step`)."""
    label = "receipt step %d" % r["step"]
    if not ed25519_verifies(public_key, r["signature"], step_receipt_message(r)):
        return (label, False, "not signed by %s" % public_key.hex(), None)
    key_id = r["signing_key_id"] if r["version"] == 2 else None
    if reveal.version < 2:
        return (label, False, "a version-1 reveal has no transcript: it descends from no signed step", key_id)
    t = transcript_start(reveal.commitment, reveal.table_id, reveal.round_id, reveal.nonce, reveal.decks,
                         reveal.client_seed, reveal.paytable, [s["bet"] for s in reveal.seats], reveal.rules_digest)
    chain = [t]
    for step in reveal.decides:
        chain.append(transcript_step(chain[-1], step))
    k = r["step"]
    revealed = [card_text(c) for c in reveal.codes]
    same = (r["commitment"] == reveal.commitment and r["round_id"] == reveal.round_id and k < len(chain)
            and chain[k] == r["transcript"] and r["cards"] == revealed[:len(r["cards"])]
            and (k == 0 or sorted(r["decisions"]) == sorted(reveal.decides[k - 1]))
            and (r["version"] == 1 or (r["table_id"] == reveal.table_id
                                       and r["rules_digest"] == (reveal.rules_digest or b""))))
    shown = shown_after(reveal, k)
    if same and len(r["cards"]) > shown:
        return (label, False, "names %s, a card the table had not shown at this step: the engine that signed it "
                              "leaked the face-down card" % r["cards"][shown], key_id)
    if r["sandbox"]:
        return (label, False, "a sandbox round: its cards were requested, not dealt fair", key_id)
    descends = same and len(r["cards"]) == shown
    return (label, descends, "signed (v%d); the reveal %s" % (
        r["version"], "descends from this step" if descends else "does not descend from this step"), key_id)


def parse_trusted_keys(data, where="--trusted-keys"):
    """[(key id, public key bytes)] of a trusted-keys file: a JSON array of {key_id,
    algorithm, public_key_hex}, or an object whose "signing_keys" is one (as GetRules lists
    them)."""
    doc = loads_strict(data)
    keys = doc.get("signing_keys") if isinstance(doc, dict) else doc
    if not isinstance(keys, list):
        raise Malformed("%s: an array of {key_id, algorithm, public_key_hex}" % where)
    out = []
    for i, k in enumerate(keys):
        if not isinstance(k, dict) or sorted(k) != ["algorithm", "key_id", "public_key_hex"] \
                or k["algorithm"] != "ed25519" or not isinstance(k["key_id"], str):
            raise Malformed("%s[%d]: {key_id, algorithm: \"ed25519\", public_key_hex}" % (where, i))
        out.append((k["key_id"], want_hex(k["public_key_hex"], "%s[%d].public_key_hex" % (where, i), 32)))
    return out


def receipt_bytes(data):
    """The reveal bytes a receipt covers: the file without one trailing line feed."""
    return data[:-1] if data.endswith(b"\n") else data


def want_hex(value, name, size):
    """A text-form hex option: exactly 2*size hex digits of either case."""
    if not isinstance(value, str) or len(value) != 2 * size or any(c not in "0123456789abcdefABCDEF" for c in value):
        raise Malformed("%s: must be %d hexadecimal digits" % (name, 2 * size))
    return bytes.fromhex(value)


def check_signed(reveal, data, public_key, signature=None, receipts=(), key_id=None, trusted=None,
                 allow_untrusted=False):
    """Every check with the engine's public key (FAIRNESS.md 4.7): Settle's signature (version
    2 under the key id, else version 1), each receipt, the key ids signed, and whether the key
    is trusted. Returns (ok, lines, notes); the verdict of section 4.7 in every verifier."""
    lines, notes = [], []
    signed_ids = []
    for r in receipts:
        check = check_commit_receipt if r.get("kind") == "commit" else check_step_receipt
        label, ok, text, kid = check(reveal, r, public_key)
        lines.append((label, ok, text))
        if kid is not None:
            signed_ids.append(kid)
        if r["version"] == 1:
            notes.append("%s is version 1: its key id (and a step's table, rules and sandbox flag) is not signed"
                         % label)
    entries = None if trusted is None else [kid for kid, k in trusted if k == public_key]
    settle_id = key_id if key_id is not None else (signed_ids[0] if signed_ids else (entries[0] if entries else None))
    settle_version = None
    if signature is not None:
        if reveal.version < 2:
            lines.append(("signature", False, "a version-1 reveal has no transcript: no receipt covers it"))
        else:
            body = receipt_bytes(data)
            if settle_id is not None and ed25519_verifies(
                    public_key, signature, settle_receipt_message(settle_id, reveal.transcript, body)):
                settle_version = 2
            elif ed25519_verifies(public_key, signature, settle_receipt_message(None, reveal.transcript, body)):
                settle_version = 1
                notes.append("the Settle signature is version 1: the key id is not inside what it signs")
            lines.append(("signature", settle_version is not None,
                          "ed25519 by %s: covers this reveal (settle receipt v%d)" % (public_key.hex(), settle_version)
                          if settle_version else "does not cover this reveal (another reveal, key or key id%s)"
                          % ("" if settle_id is not None else "; no key id known: give --key-id")))
    ids = [("a receipt is signed as key id", i) for i in signed_ids]
    if settle_version == 2:
        ids.append(("the Settle signature is under key id", settle_id))
    if key_id is not None:
        ids.append(("--key-id is", key_id))
    conflict = next(("the key ids disagree: %s %r, %s %r" % (a[0], a[1], b[0], b[1])
                     for a, b in zip(ids, ids[1:]) if a[1] != b[1]), None)
    fingerprint = hashlib.sha256(public_key).hexdigest()
    if entries:
        entry = next((e for e in entries if ids and e == ids[0][1]), entries[0])
        if conflict is None and ids and ids[0][1] != entry:
            conflict = "your trusted keys list this public key as key id %r, but %s %r" % (entry, ids[0][0], ids[0][1])
        lines.append(("key", True, "a trusted key (%r in --trusted-keys), fingerprint SHA-256 %s" % (entry, fingerprint)))
    elif allow_untrusted:
        lines.append(("key", True, "a key the platform named (untrusted, --allow-untrusted), fingerprint SHA-256 %s"
                      % fingerprint))
        notes.append("--allow-untrusted: the key is not one you trust; the signatures prove only that the key the "
                     "platform named signed")
    elif trusted is not None:
        lines.append(("key", False, "a key NOT among your --trusted-keys (fingerprint SHA-256 %s): it proves only that "
                                    "whoever the platform named signed (--allow-untrusted accepts that)" % fingerprint))
    else:
        lines.append(("key", False, "no --trusted-keys given: a key the platform named (fingerprint SHA-256 %s) proves "
                                    "only that it signed (give the keys you got from the operator or a certification "
                                    "report, or --allow-untrusted)" % fingerprint))
    if conflict is not None:
        lines.append(("key id", False, conflict))
    ok = all(line[1] is not False for line in lines)
    return ok, lines, notes


# --- Test vectors -------------------------------------------------------------------------

def check_case(case):
    """A deal-v1.json case: returns a list of what differs between it and the recomputation."""
    errors = []
    seed = bytes.fromhex(case["server_seed"])
    client_seed = case["client_seed"].encode("utf-8")
    if "client_seed_hex" in case and client_seed.hex() != case["client_seed_hex"]:
        errors.append("client_seed_hex is not the UTF-8 of client_seed")
    nonce, decks = case["nonce"], case["decks"]
    if hashlib.sha256(seed).hexdigest() != case["commitment"]:
        errors.append("commitment")
    if "hmac_message" in case and hmac_message(client_seed, nonce, decks).hex() != case["hmac_message"]:
        errors.append("hmac_message")
    key = deal_key(seed, client_seed, nonce, decks)
    if key.hex() != case["key"]:
        errors.append("key")
    if "keystream_block0" in case and chacha20_block(key, 0, bytes(12)).hex() != case["keystream_block0"]:
        errors.append("keystream_block0")
    codes, rejected = deal(seed, client_seed, nonce, decks, len(case["cards"]))
    if [card_text(c) for c in codes] != case["cards"]:
        errors.append("cards")
    if "codes" in case and codes != case["codes"]:
        errors.append("codes")
    if "rejected_words" in case and rejected != case["rejected_words"]:
        errors.append("rejected_words (%d recomputed)" % rejected)
    return errors


def _case_expect(case):
    return parse_expect(case["expect"], "expect") if "expect" in case else []


def _reveal_text(case):
    r = case["reveal"]
    return r if isinstance(r, str) else json.dumps(r, ensure_ascii=False, separators=(",", ":"))


def _deal_cases(doc):
    if doc.get("algorithm") != ALGORITHM:
        raise Malformed("algorithm %s is not %s" % (_show(doc.get("algorithm")), ALGORITHM))
    for case in doc["cases"]:
        try:
            errors = check_case(case)
        except (KeyError, ValueError, TypeError) as e:
            errors = ["malformed case: %r" % (e,)]
        yield case.get("name"), errors


def _negative_cases(doc):
    if doc.get("format") != "reddog-reveal-negative-vectors-v1":
        raise Malformed("format %s is not reddog-reveal-negative-vectors-v1" % _show(doc.get("format")))
    for case in doc["cases"]:
        want = case.get("verdict")
        if want not in ("malformed", "not_verified"):
            yield case.get("name"), ["verdict must be \"malformed\" or \"not_verified\", got %s" % _show(want)]
            continue
        got = check_text(_reveal_text(case), _case_expect(case))
        yield case.get("name"), ([] if got == want else ["expected %s, the verifier says %s" % (want, got)])


def _positive_cases(doc):
    """reveal-v2.json and reveal-v3.json (generated by the engine from real rounds): every case
    must verify, with its expectations; its transcript chain t_0 .. t_K, the preimage of t_0
    and (v3) the preimage of the rules digest, when listed, must be what sections 4.4 and 4.6
    compute from the reveal."""
    if doc.get("format") not in ("reddog-reveal-v2-vectors", "reddog-reveal-v3-vectors"):
        raise Malformed("format %s is not reddog-reveal-v2-vectors or -v3-vectors" % _show(doc.get("format")))
    for case in doc["cases"]:
        want = case.get("verdict", "verified")
        text = _reveal_text(case)
        got = check_text(text, _case_expect(case))
        errors = [] if got == want else ["expected %s, the verifier says %s" % (want, got)]
        if got != "malformed" and ("transcript_chain" in case or "t0_preimage_hex" in case):
            r = parse_reveal(loads_strict(text))
            pre = transcript_start_preimage(r.commitment, r.table_id, r.round_id, r.nonce, r.decks, r.client_seed,
                                            r.paytable, [s["bet"] for s in r.seats], r.rules_digest)
            if r.version == 3 and "rules_preimage_hex" in case:
                rp = rules_preimage(r.decks, r.paytable, r.limits["min_bet"], r.limits["max_bet"], r.currency["code"],
                                    r.currency["exponent"])
                if case["rules_preimage_hex"] != rp.hex():
                    errors.append("rules_preimage_hex differs from section 4.6's")
            chain = [hashlib.sha256(pre).digest()]
            for step in r.decides:
                chain.append(transcript_step(chain[-1], step))
            if "t0_preimage_hex" in case and case["t0_preimage_hex"] != pre.hex():
                errors.append("t0_preimage_hex differs from section 4.4's")
            if "transcript_chain" in case and case["transcript_chain"] != [t.hex() for t in chain]:
                errors.append("transcript_chain differs from section 4.4's")
        yield case.get("name"), errors


def receipt_case_verdict(case):
    """A receipt vector case (receipt-v1.json, receipt-v2.json): "verified", "not_verified"
    or "malformed", as the command line would answer given the case's arguments."""
    data = case["reveal"].encode("utf-8")
    try:
        reveal = parse_reveal(loads_strict(data))
        receipts = [parse_receipt(t.encode("utf-8"), "receipt") for t in case["receipts"]]
        trusted = None if case["trusted_keys"] is None else \
            parse_trusted_keys(json.dumps(case["trusted_keys"]).encode("utf-8"))
        public_key = want_hex(case["public_key"], "public_key", 32)
        signature = want_hex(case["signature"], "signature", 64) if case["signature"] else None
    except Malformed:
        return "malformed"
    ok, _ = verify(reveal)
    signed_ok, _, _ = check_signed(reveal, data, public_key, signature, receipts, case["key_id"] or None, trusted,
                                   case["allow_untrusted"])
    return "verified" if ok and signed_ok else "not_verified"


def _receipt_cases(doc):
    """receipt-v1.json and receipt-v2.json: the public key of the secret, the CommitSeed
    receipt's message and signature (version `receipt_version`), and each case's verdict."""
    if doc.get("format") != "reddog-receipt-vectors" or doc.get("receipt_version") not in (1, 2):
        raise Malformed("format %s is not reddog-receipt-vectors (receipt_version 1 or 2)" % _show(doc.get("format")))
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    except ImportError:
        raise Malformed("the cryptography package is needed to check signatures (pip install cryptography)")
    secret = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(doc["secret"]))
    public = secret.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    yield "public-key-of-the-secret", ([] if public.hex() == doc["public_key"] else ["public key %s" % public.hex()])
    c = doc["commit"]
    version = doc["receipt_version"]
    message = commit_receipt_message(bytes.fromhex(c["commitment"]), c["round_id"], c["nonce"], c["table_id"],
                                     c["decks"], bytes.fromhex(c["rules_digest"]), c["expires_at_unix_ms"],
                                     c["algorithm"], c["sandbox"], doc["key_id"] if version == 2 else None)
    errors = []
    if message.hex() != c["message_hex"]:
        errors.append("message_hex differs from section 4.7's")
    if secret.sign(message).hex() != c["signature"]:
        errors.append("signature is not the secret's Ed25519 signature of the message")
    if not ed25519_verifies(public, bytes.fromhex(c["signature"]), message):
        errors.append("signature does not verify")
    yield "commit", errors
    for case in doc["cases"]:
        got = receipt_case_verdict(case)
        errors = [] if got == case["verdict"] else ["expected %s, the verifier says %s" % (case["verdict"], got)]
        if case["name"] == "settle/genuine":
            r = parse_reveal(loads_strict(case["reveal"].encode("utf-8")))
            m = settle_receipt_message(doc["key_id"] if version == 2 else None, r.transcript,
                                       case["reveal"].encode("utf-8"))
            if m.hex() != doc["settle_message_hex"]:
                errors.append("settle_message_hex differs from section 4.7's")
        if case["name"] == "step/honest-with-the-decide-receipt":
            r = parse_receipt(case["receipts"][0].encode("utf-8"), "receipt")
            if step_receipt_message(r).hex() != doc["step_message_hex"]:
                errors.append("step_message_hex differs from section 4.7's")
        yield case.get("name"), errors


def _ed25519_cctv(doc):
    """C2SP/CCTV ed25519vectors.json: the strict rule verifies exactly the vectors whose flags
    are at most low_order_component_A / _R (tests/vectors/ed25519/README.md)."""
    allowed = {"low_order_component_A", "low_order_component_R"}
    for v in doc:
        want = set(v["flags"] or ()) <= allowed
        got = ed25519_verifies(bytes.fromhex(v["key"]), bytes.fromhex(v["sig"]), v["msg"].encode("utf-8"))
        yield "cctv-%d" % v["number"], ([] if got == want else ["strict rule says %s, expected %s" % (got, want)])


def _ed25519_speccheck(doc):
    """ed25519-speccheck cases.json: only case 3 verifies under the strict rule."""
    for i, c in enumerate(doc):
        got = ed25519_verifies(bytes.fromhex(c["pub_key"]), bytes.fromhex(c["signature"]), bytes.fromhex(c["message"]))
        yield "speccheck-%d" % i, ([] if got == (i == 3) else ["strict rule says %s, expected %s" % (got, i == 3)])


KNOWN_VECTOR_FILES = (
    ("deal-v1.json", True, _deal_cases),
    ("reveal-v2.json", False, _positive_cases),
    ("reveal-v3.json", False, _positive_cases),
    ("reveal-negative.json", True, _negative_cases),
    ("receipt-v1.json", False, _receipt_cases),
    ("receipt-v2.json", False, _receipt_cases),
    ("ed25519/cctv-ed25519vectors.json", False, _ed25519_cctv),
    ("ed25519/speccheck-cases.json", False, _ed25519_speccheck),
)


def check_vectors(directory, out=sys.stdout):
    """Checks every vector file it knows in the directory; returns (passed, failed). A required
    file that is missing or unreadable counts as a failure."""
    passed = failed = 0
    for name, required, cases_of in KNOWN_VECTOR_FILES:
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            if required:
                failed += 1
                print("FAIL %s: missing" % name, file=out)
            continue
        try:
            with open(path, "rb") as f:
                doc = loads_json_file(f.read())
            results = list(cases_of(doc))
        except (Malformed, KeyError, TypeError, OSError) as e:
            failed += 1
            print("FAIL %s: unreadable: %s" % (name, e), file=out)
            continue
        if not results:
            failed += 1
            print("FAIL %s: no cases" % name, file=out)
        for case_name, errors in results:
            if errors:
                failed += 1
                print("FAIL %s/%s: %s" % (name, case_name, ", ".join(errors)), file=out)
            else:
                passed += 1
                print("ok   %s/%s" % (name, case_name), file=out)
    for name in sorted(os.listdir(directory)):
        if name.endswith(".json") and name not in [k[0] for k in KNOWN_VECTOR_FILES]:
            print("skip %s: not a vector file this verifier knows" % name, file=out)
    return passed, failed


def loads_json_file(data):
    """Vector files are ordinary JSON (they may hold floats or signed numbers elsewhere); only
    duplicate keys are refused."""
    return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)


# --- Command line -------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print("error: %s" % message, file=sys.stderr)
        sys.exit(2)


def main(argv):
    p = _Parser(prog="verify.py", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", default="-", help="the reveal (JSON); '-' or nothing reads stdin")
    p.add_argument("--vectors", metavar="DIR", help="check every known vector file in DIR")
    p.add_argument("--expect-commitment", metavar="HEX")
    p.add_argument("--expect-client-seed", metavar="TEXT")
    p.add_argument("--expect-nonce", metavar="N")
    p.add_argument("--expect-round-id", metavar="TEXT")
    p.add_argument("--expect-table-id", metavar="TEXT")
    p.add_argument("--expect-decks", metavar="N")
    p.add_argument("--expect-transcript", metavar="HEX", help="the last transcript hash the player was shown")
    p.add_argument("--expect-rules-digest", metavar="HEX", help="the rules digest shown with the commitment")
    p.add_argument("--expect-bets", metavar="N,N,...", help="each seat's bet, seat 0 first")
    p.add_argument("--expect-returned", metavar="N,N,...", help="each seat's amount credited, seat 0 first")
    p.add_argument("--expect-decisions", metavar="SEAT:ACTION,...;...",
                   help="each Decide call's decisions, e.g. 0:raise,1:stand;2:stand")
    p.add_argument("--expect", metavar="FILE", help="a JSON object of expectations (keys: %s)" % ", ".join(EXPECT_KEYS))
    p.add_argument("--public-key", metavar="HEX",
                   help="the engine's Ed25519 public key (64 hex); checks --signature and every --receipt; not "
                        "verified unless it is among --trusted-keys (or --allow-untrusted)")
    p.add_argument("--signature", metavar="HEX", help="Settle's signature over the reveal (128 hex); with --public-key")
    p.add_argument("--key-id", metavar="ID",
                   help="Settle's signing_key_id: the key id inside the signed message (else a signed receipt's, or "
                        "the --trusted-keys entry's)")
    p.add_argument("--trusted-keys", metavar="FILE",
                   help="the signing keys you trust, got outside the platform: a JSON array of {key_id, algorithm, "
                        "public_key_hex} (or {\"signing_keys\": [...]}); a --public-key not among them is not verified")
    p.add_argument("--allow-untrusted", action="store_true",
                   help="accept a --public-key not among --trusted-keys: the signatures then prove only that the key "
                        "the platform named signed")
    p.add_argument("--receipt", metavar="FILE", action="append", default=[],
                   help="a receipt the player kept (receipt_json of CommitSeed, StartRound or Decide); with "
                        "--public-key; the reveal must descend from each. Repeatable")
    args = p.parse_args(argv)
    if args.public_key is None and (args.signature is not None or args.receipt or args.trusted_keys
                                    or args.key_id is not None or args.allow_untrusted):
        p.error("--signature, --receipt, --key-id, --trusted-keys and --allow-untrusted need --public-key")
    if args.public_key is not None and args.signature is None and not args.receipt:
        p.error("--public-key: give --signature or --receipt to check with it")

    if args.vectors is not None:
        if args.file != "-":
            p.error("--vectors takes no reveal file")
        passed, failed = check_vectors(args.vectors)
        print("%d passed, %d failed" % (passed, failed))
        return 0 if failed == 0 and passed > 0 else 1

    try:
        expectations = expect_from_args(args)
        if args.expect is not None:
            with open(args.expect, "rb") as f:
                expectations += parse_expect(loads_strict(f.read()), "--expect " + args.expect)
        for key, value in expectations:
            if any(k == key and x != value for k, x in expectations):
                raise Malformed("--expect-%s disagrees with the --expect file" % key.replace("_", "-"))
        receipt, public_key, steps = None, None, []
        if args.public_key is not None:
            public_key = want_hex(args.public_key, "--public-key", 32)
            if args.signature is not None:
                receipt = (public_key, want_hex(args.signature, "--signature", 64))
            try:
                import cryptography  # noqa: F401  (only the signature check needs it)
            except ImportError:
                raise Malformed("--public-key: checking a signature needs the cryptography package "
                                "(pip install cryptography)")
        for path in args.receipt:
            with open(path, "rb") as f:
                steps.append((path, parse_receipt(f.read(), "--receipt " + path)))
        trusted = None
        if args.trusted_keys is not None:
            with open(args.trusted_keys, "rb") as f:
                trusted = parse_trusted_keys(f.read(), "--trusted-keys " + args.trusted_keys)
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                data = f.read()
    except (Malformed, OSError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    try:
        reveal = parse_reveal(loads_strict(data))
    except Malformed as e:
        print("error: malformed reveal: %s" % e, file=sys.stderr)
        return 2
    ok, lines = verify(reveal, expectations)
    if public_key is not None:
        signed_ok, signed_lines, notes = check_signed(
            reveal, data, public_key, receipt[1] if receipt else None, [r for _, r in steps], args.key_id, trusted,
            args.allow_untrusted)
        lines += signed_lines
        ok = ok and signed_ok
        lines += [("note", None, n) for n in notes]
        if ok and receipt is not None and not any(r.get("kind") == "step" for _, r in steps) \
                and not any(k == "transcript" for k, _ in expectations):
            lines.append(("note", None, "the signature proves the key's holder produced this reveal, not that it is "
                                        "the round played: give the last --receipt or --expect-transcript for that"))
    report(reveal, ok, lines, sys.stdout)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
