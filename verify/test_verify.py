"""Unit tests of the independent verifier: python3 -m unittest discover -s verify"""

import io
import json
import os
import unittest

import verify as v

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = bytes(range(32))


class ChaCha20(unittest.TestCase):
    def test_rfc8439_block_function_vector(self):
        # RFC 8439, section 2.3.2.
        block = v.chacha20_block(bytes(range(32)), 1, bytes.fromhex("000000090000004a00000000"))
        self.assertEqual(block.hex(), "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
                                      "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")

    def test_zero_key_keystream(self):
        # RFC 8439, appendix A.1, test vector 1.
        self.assertEqual(v.chacha20_block(bytes(32), 0, bytes(12)).hex()[:32], "76b8e0ada0f13d90405d6ae55386bd28")

    def test_words_are_little_endian_and_continue_into_the_next_block(self):
        key = bytes(32)
        stream = v.WordStream(key)
        words = [stream.next_word() for _ in range(17)]
        self.assertEqual(words[0], 0xADE0B876)
        self.assertEqual(words[16], int.from_bytes(v.chacha20_block(key, 1, bytes(12))[:4], "little"))


class Deal(unittest.TestCase):
    def test_the_message_is_length_prefixed(self):
        m = v.hmac_message(b"lucky-7", 0, 1)
        self.assertEqual(len(m), 44 + 7)
        self.assertNotEqual(v.hmac_message(b"a:b", 1, 2), v.hmac_message(b"a", 1, 2))

    def test_rejection_skips_words_at_or_above_the_limit(self):
        class Fixed:
            def __init__(self, words):
                self.words = list(words)

            def next_word(self):
                return self.words.pop(0)

        limit = 2**32 - 2**32 % 52
        self.assertEqual(v.uniform_below(Fixed([limit, 2**32 - 1, limit - 1]), 52), ((limit - 1) % 52, 2))
        self.assertEqual(v.uniform_below(Fixed([2**32 - 1]), 32), (31, 0))

    def test_a_full_shoe_is_a_permutation(self):
        for decks in (1, 8):
            codes, _ = v.deal(SEED, b"x", 5, decks, 52 * decks)
            self.assertEqual(sorted(codes), sorted(p % 52 for p in range(52 * decks)))

    def test_card_text(self):
        self.assertEqual([v.card_text(c) for c in (0, 3, 33, 51)], ["2c", "2s", "Td", "As"])
        self.assertEqual(v.card_code("Ah"), 50)
        with self.assertRaises(v.Malformed):
            v.card_code("1h")


class Reveals(unittest.TestCase):
    def reveal(self, **changes):
        codes, _ = v.deal(SEED, "grüße".encode(), 42, 1, 3)
        r = {"algorithm": v.ALGORITHM, "server_seed": SEED.hex(),
             "commitment": __import__("hashlib").sha256(SEED).hexdigest(), "client_seed": "grüße",
             "nonce": 42, "decks": 1, "cards": [v.card_text(c) for c in codes]}
        r.update(changes)
        return r

    def test_a_genuine_reveal_verifies(self):
        self.assertTrue(v.check_reveal(self.reveal(), out=io.StringIO()))

    def test_a_changed_card_nonce_or_commitment_does_not(self):
        r = self.reveal()
        r["cards"] = r["cards"][::-1]
        self.assertFalse(v.check_reveal(r, out=io.StringIO()))
        self.assertFalse(v.check_reveal(self.reveal(nonce=43), out=io.StringIO()))
        self.assertFalse(v.check_reveal(self.reveal(commitment="00" * 32), out=io.StringIO()))

    def test_malformed_reveals_are_errors(self):
        for bad in ({"decks": 9}, {"nonce": -1}, {"nonce": 2**64}, {"server_seed": "xyz"}, {"cards": []},
                    {"algorithm": "reddog-deal-v2"}, {"cards": ["Ah", "Zz"]}, {"decks": True}):
            with self.assertRaises(v.Malformed, msg=str(bad)):
                v.check_reveal(self.reveal(**bad), out=io.StringIO())


class Vectors(unittest.TestCase):
    def test_every_vector_passes(self):
        passed, failed = v.check_vectors(os.path.join(ROOT, "tests", "vectors"), out=io.StringIO())
        self.assertEqual(failed, 0)
        self.assertGreaterEqual(passed, 24)

    def test_a_tampered_vector_fails(self):
        with open(os.path.join(ROOT, "tests", "vectors", "deal-v1.json"), encoding="utf-8") as f:
            case = json.load(f)["cases"][0]
        case["cards"][5], case["cards"][6] = case["cards"][6], case["cards"][5]
        self.assertIn("cards", v.check_case(case))


if __name__ == "__main__":
    unittest.main()
