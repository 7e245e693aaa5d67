#!/usr/bin/env python3
"""Independent verifier for Red Dog deals (algorithm reddog-deal-v1).

Written from docs/FAIRNESS.md alone, with the Python standard library only (hashlib, hmac,
json); ChaCha20 is implemented below from RFC 8439, section 2.3.

Usage:
    python3 verify/verify.py reveal.json         check a settled round's reveal
    python3 verify/verify.py - < reveal.json     the same, from stdin (also: no argument)
    python3 verify/verify.py --vectors tests/vectors/
                                                 check every test vector file in a directory

Exit status: 0 verified / all vectors pass; 1 the reveal does not verify / a vector fails;
2 the input is malformed.
"""

import hashlib
import hmac
import json
import os
import sys

ALGORITHM = "reddog-deal-v1"
VERSION = 1
DOMAIN = b"reddog/deal"
RANKS = "23456789TJQKA"
SUITS = "cdhs"
MASK32 = 0xFFFFFFFF


class Malformed(Exception):
    """The input does not have the form the specification requires."""


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


# --- The deal (docs/FAIRNESS.md, "Derivation" and "Shuffle") -----------------------------

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
    if not isinstance(text, str) or len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise Malformed("cards: %r is not a card such as \"Ah\" or \"Tc\"" % (text,))
    return RANKS.index(text[0]) * 4 + SUITS.index(text[1])


# --- Reveals ------------------------------------------------------------------------------

def hex32(obj, name):
    value = obj.get(name)
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise Malformed("%s: must be 64 hexadecimal digits" % name)
    return raw


def parse_reveal(obj):
    if not isinstance(obj, dict):
        raise Malformed("the reveal must be a JSON object")
    if obj.get("algorithm") != ALGORITHM:
        raise Malformed("algorithm: must be %r" % ALGORITHM)
    seed = hex32(obj, "server_seed")
    commitment = hex32(obj, "commitment")
    client_seed = obj.get("client_seed")
    if not isinstance(client_seed, str):
        raise Malformed("client_seed: must be a string")
    nonce = obj.get("nonce")
    if not isinstance(nonce, int) or isinstance(nonce, bool) or not 0 <= nonce < 2**64:
        raise Malformed("nonce: must be an integer in 0..2^64-1")
    decks = obj.get("decks")
    if not isinstance(decks, int) or isinstance(decks, bool) or not 1 <= decks <= 8:
        raise Malformed("decks: must be an integer in 1..8")
    cards = obj.get("cards")
    if not isinstance(cards, list) or not 1 <= len(cards) <= 52 * decks:
        raise Malformed("cards: must list between 1 and %d cards" % (52 * decks))
    codes = [card_code(c) for c in cards]
    return seed, commitment, client_seed.encode("utf-8"), nonce, decks, codes


def check_reveal(obj, out=sys.stdout):
    """Prints the recomputed cards and the verdict; returns True when the reveal verifies."""
    seed, commitment, client_seed, nonce, decks, codes = parse_reveal(obj)
    commitment_ok = hashlib.sha256(seed).digest() == commitment
    recomputed, _ = deal(seed, client_seed, nonce, decks, len(codes))
    cards_ok = recomputed == codes
    if obj.get("round_id") is not None:
        print("round_id    %s" % obj["round_id"], file=out)
    print("commitment  %s" % ("OK: SHA-256(server_seed) = commitment" if commitment_ok
                              else "MISMATCH: SHA-256(server_seed) = " + hashlib.sha256(seed).hexdigest()), file=out)
    print("cards       %s" % " ".join(card_text(c) for c in recomputed), file=out)
    print("revealed    %s  %s" % (" ".join(card_text(c) for c in codes), "OK" if cards_ok else "MISMATCH"), file=out)
    ok = commitment_ok and cards_ok
    print("verdict     %s" % ("VERIFIED" if ok else "NOT VERIFIED"), file=out)
    return ok


# --- Test vectors -------------------------------------------------------------------------

def check_case(case):
    """Returns a list of what differs between the case and the recomputation."""
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


def check_vectors(directory, out=sys.stdout):
    """Checks every *.json vector file in the directory; returns (passed, failed)."""
    passed = failed = 0
    files = sorted(f for f in os.listdir(directory) if f.endswith(".json"))
    for name in files:
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("algorithm") != ALGORITHM:
            print("%s: skipped (algorithm %r)" % (name, doc.get("algorithm")), file=out)
            continue
        for case in doc["cases"]:
            try:
                errors = check_case(case)
            except (KeyError, ValueError, TypeError) as e:
                errors = ["malformed case: %r" % (e,)]
            if errors:
                failed += 1
                print("FAIL %s/%s: %s" % (name, case.get("name"), ", ".join(errors)), file=out)
            else:
                passed += 1
                print("ok   %s/%s" % (name, case["name"]), file=out)
    return passed, failed


def main(argv):
    if len(argv) >= 1 and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) == 2 and argv[0] == "--vectors":
        passed, failed = check_vectors(argv[1])
        print("%d passed, %d failed" % (passed, failed))
        return 0 if failed == 0 and passed > 0 else 1
    if len(argv) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if not argv or argv[0] == "-":
            obj = json.load(sys.stdin)
        else:
            with open(argv[0], encoding="utf-8") as f:
                obj = json.load(f)
        return 0 if check_reveal(obj) else 1
    except (Malformed, ValueError, OSError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
