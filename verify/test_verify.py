"""Unit tests of the independent verifier: python3 -m unittest discover -s verify"""

import copy
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import make_negative_vectors as mk
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


class RevealsV1(unittest.TestCase):
    def reveal(self, **changes):
        codes, _ = v.deal(SEED, "grüße".encode(), 42, 1, 3)
        cls, _ = v.hand_class(codes[0], codes[1])
        r = {"algorithm": v.ALGORITHM, "server_seed": SEED.hex(),
             "commitment": hashlib.sha256(SEED).hexdigest(), "client_seed": "grüße",
             "nonce": 42, "decks": 1, "cards": [v.card_text(c) for c in codes[:v.cards_for(cls)]]}
        r.update(changes)
        return r

    def verdict(self, r, expect=()):
        return v.check_text(json.dumps(r), list(expect))

    def test_a_genuine_reveal_verifies_with_or_without_round_id(self):
        self.assertEqual(self.verdict(self.reveal()), "verified")
        self.assertEqual(self.verdict(self.reveal(round_id="r-1")), "verified")

    def test_version_1_accepts_upper_case_hex_as_its_spec_allowed(self):
        r = self.reveal(server_seed=SEED.hex().upper(), commitment=hashlib.sha256(SEED).hexdigest().upper())
        self.assertEqual(self.verdict(r), "verified")

    def test_a_changed_card_nonce_or_commitment_does_not_verify(self):
        r = self.reveal()
        r["cards"] = [r["cards"][1], r["cards"][0]] + r["cards"][2:]
        self.assertEqual(self.verdict(r), "not_verified")
        self.assertEqual(self.verdict(self.reveal(nonce=43)), "not_verified")
        self.assertEqual(self.verdict(self.reveal(commitment="00" * 32)), "not_verified")

    def test_malformed_reveals(self):
        for bad in ({"decks": 9}, {"server_seed": "xyz"}, {"cards": []}, {"algorithm": "reddog-deal-v2"},
                    {"cards": ["Ah", "Zz"]}, {"decks": True}, {"round_id": 5}, {"extra": 1}):
            self.assertEqual(self.verdict(self.reveal(**bad)), "malformed", bad)
        self.assertEqual(v.check_text(json.dumps(self.reveal()).replace('"nonce": 42', '"nonce": -1')), "malformed")

    def test_expectations(self):
        r = self.reveal(round_id="r-1")
        good = [("commitment", hashlib.sha256(SEED).digest()), ("client_seed", "grüße".encode()), ("nonce", 42),
                ("decks", 1), ("round_id", b"r-1")]
        self.assertEqual(self.verdict(r, good), "verified")
        self.assertEqual(self.verdict(r, [("nonce", 41)]), "not_verified")
        # A version-1 reveal carries no table id: an expected one cannot be confirmed.
        self.assertEqual(self.verdict(r, [("table_id", b"default")]), "not_verified")


class RevealsV2(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bases = mk.bases()

    def test_every_base_verifies_pretty_printed_and_in_any_key_order(self):
        for name, r in self.bases.items():
            self.assertEqual(v.check_text(mk.render(r)), "verified", name)
            self.assertEqual(v.check_text(json.dumps(r, indent=2, ensure_ascii=True)), "verified", name)
            shuffled = dict(reversed(list(r.items())))
            self.assertEqual(v.check_text(json.dumps(shuffled)), "verified", name)

    def test_payouts_follow_the_rules_and_the_reveals_paytable(self):
        win = self.bases["win"]
        codes = [v.card_code(c) for c in win["cards"]]
        cls, spread = v.hand_class(codes[0], codes[1])
        self.assertEqual(cls, v.NON_CONSECUTIVE)
        odds = win["paytable"]["spread"][spread - 1]
        self.assertNotEqual(odds, mk.STANDARD["spread"][spread - 1])
        self.assertEqual([s["returned"] for s in win["seats"]], [s["stake"] * (odds + 1) for s in win["seats"]])
        self.assertEqual([s["stake"] for s in win["seats"]], [20, 25, 14])
        self.assertEqual([s["returned"] for s in self.bases["loss"]["seats"]], [0, 0])
        self.assertEqual([s["returned"] for s in self.bases["pair"]["seats"]], [50])
        trips = self.bases["trips"]
        self.assertEqual([s["returned"] for s in trips["seats"]], [s["bet"] * 16 for s in trips["seats"]])
        self.assertEqual([s["returned"] for s in self.bases["consecutive"]["seats"]], [20, 30, 40])

    def test_the_largest_amounts_fit_and_one_more_does_not(self):
        self.assertEqual(v.MAX_BET, 922244979187558)
        win = copy.deepcopy(self.bases["win"])
        win["paytable"] = {"spread": [10000] * 11, "three_of_a_kind": 10000}
        big = {"bet": v.MAX_BET, "raised": True, "stake": 2 * v.MAX_BET, "returned": 2 * v.MAX_BET * 10001}
        win["decisions"] = [[{"seat": 0, "action": "raise"}]]
        win["seats"] = [big]
        self.assertEqual(v.check_text(mk.render(mk.retranscript(win))), "verified")
        # The largest round whose total return fits: as many such seats as fit.
        seats = v.U64_MAX // big["returned"]
        win["decisions"] = [[{"seat": i, "action": "raise"} for i in range(seats)]]
        win["seats"] = [big] * seats
        self.assertEqual(v.check_text(mk.render(mk.retranscript(win))), "verified")
        win["decisions"][0].append({"seat": seats, "action": "raise"})
        win["seats"].append(big)
        self.assertEqual(v.check_text(mk.render(mk.retranscript(win))), "not_verified")
        pair = copy.deepcopy(self.bases["pair"])
        for bet, verdict in ((1, "verified"), (v.MAX_BET, "verified"), (0, "not_verified"),
                             (v.MAX_BET + 1, "not_verified"), (v.U64_MAX, "not_verified")):
            pair["seats"] = [{"bet": bet, "raised": False, "stake": bet, "returned": bet}]
            self.assertEqual(v.check_text(mk.render(mk.retranscript(pair))), verdict, bet)

    def test_the_transcript_chains_one_hash_per_decide(self):
        win = self.bases["win"]
        t0 = v.transcript_start(bytes.fromhex(win["commitment"]), b"main-1", b"r-2026-000042", win["nonce"],
                                win["decks"], win["client_seed"].encode(), win["paytable"], [10, 25, 7])
        t1 = v.transcript_step(t0, [(0, "raise")])
        t2 = v.transcript_step(t1, [(1, "stand"), (2, "raise")])
        self.assertEqual(t2.hex(), win["transcript"])
        # The layout of t_0 byte by byte: 9 length-prefixed fields.
        body = (v.field(b"reddog/transcript/v1/start") + v.field(bytes.fromhex(win["commitment"]))
                + v.field(b"main-1") + v.field(b"r-2026-000042") + v.field(win["nonce"].to_bytes(8, "big"))
                + v.field(bytes([win["decks"]])) + v.field(win["client_seed"].encode())
                + v.field(bytes.fromhex("00000007000000060000000300000002000000020000000200000002"
                                        "00000002000000020000000200000002" "0000000f"))
                + v.field(bytes.fromhex("000000000000000a" "0000000000000019" "0000000000000007")))
        self.assertEqual(hashlib.sha256(body).digest(), t0)
        self.assertEqual(hashlib.sha256(v.field(b"reddog/transcript/v1/decide") + v.field(t0)
                                        + v.field(bytes([0, 1]))).digest(), t1)

    def test_strict_json(self):
        for text in ('{"a":1,"a":1}', '{"a":1.0}', '{"a":-0}', '{"a":1e3}', '{"a":NaN}', '\ufeff{}', '{"a":"\\ud800"}'):
            with self.assertRaises(v.Malformed, msg=text):
                v.loads_strict(text)
        with self.assertRaises(v.Malformed):
            v.loads_strict(b'{"a":"\xff"}')
        self.assertEqual(v.loads_strict(' {"a" : [1, "\\u00e9"]} \n'), {"a": [1, "é"]})

    def test_bool_is_not_an_integer(self):
        with self.assertRaises(v.Malformed):
            v.want_int(True, "x", 0, 1)
        self.assertEqual(v.want_int(1, "x", 0, 1), 1)


class Sandbox(unittest.TestCase):
    def test_a_sandbox_reveal_is_refused_as_malformed_saying_it_is_a_sandbox_round(self):
        r = dict(mk.bases()["win"], format=v.FORMAT_SANDBOX)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "verify", "verify.py")],
                           input=mk.render(r).encode(), capture_output=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("sandbox round", (p.stdout + p.stderr).decode())


class CommandLine(unittest.TestCase):
    def run_cli(self, *args, stdin=b""):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "verify", "verify.py")] + list(args),
                           input=stdin, capture_output=True)
        return p.returncode, p.stdout.decode("utf-8", "replace")

    def test_exit_statuses_and_expectations(self):
        r = mk.bases()["loss"]
        text = mk.render(r).encode()
        self.assertEqual(self.run_cli(stdin=text)[0], 0)
        self.assertEqual(self.run_cli("-", "--expect-nonce", str(r["nonce"]), "--expect-commitment",
                                      r["commitment"].upper(), "--expect-client-seed", r["client_seed"],
                                      "--expect-round-id", r["round_id"], "--expect-table-id", r["table_id"],
                                      "--expect-decks", str(r["decks"]), stdin=text)[0], 0)
        code, out = self.run_cli("--expect-nonce", str(r["nonce"] + 1), stdin=text)
        self.assertEqual(code, 1)
        self.assertIn("NOT VERIFIED", out)
        self.assertEqual(self.run_cli("--expect-nonce", "x", stdin=text)[0], 2)
        self.assertEqual(self.run_cli("--expect-decks", "9", stdin=text)[0], 2)
        self.assertEqual(self.run_cli("--expect-commitment", "xyz", stdin=text)[0], 2)
        self.assertEqual(self.run_cli(stdin=text[:-1])[0], 2)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "expect.json")
            for expect, code in (({"nonce": r["nonce"], "table_id": r["table_id"]}, 0), ({"decks": 2}, 1),
                                 ({"nonce": str(r["nonce"])}, 2), ({"player": "x"}, 2)):
                with open(path, "w") as f:
                    json.dump(expect, f)
                self.assertEqual(self.run_cli("--expect", path, stdin=text)[0], code, expect)
            with open(path, "w") as f:
                json.dump({"nonce": r["nonce"]}, f)
            self.assertEqual(self.run_cli("--expect", path, "--expect-nonce", str(r["nonce"]), stdin=text)[0], 0)
            self.assertEqual(self.run_cli("--expect", path, "--expect-nonce", str(r["nonce"] + 1), stdin=text)[0], 2)


class SignedReceipts(unittest.TestCase):
    """FAIRNESS.md 4.7, with tests/vectors/receipt-v2.json (signed by the engine) and the
    frozen receipt-v1.json."""

    run_cli = CommandLine.run_cli

    def vectors(self, name="receipt-v2.json"):
        with open(os.path.join(ROOT, "tests", "vectors", name), encoding="utf-8") as f:
            return json.load(f)

    def cases(self, name="receipt-v2.json"):
        return {c["name"]: c for c in self.vectors(name)["cases"]}

    def trusted(self, tmp, key_id="s1", public_key=None):
        path = os.path.join(tmp, "trusted.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump([{"key_id": key_id, "algorithm": "ed25519",
                        "public_key_hex": public_key or self.vectors()["public_key"]}], f)
        return path

    def test_a_forged_reveal_is_refused_with_the_public_key_alone(self):
        case = self.cases()
        genuine, forged = case["settle/genuine"], case["settle/forged-raise-rewritten-as-a-stand-transcript-recomputed"]
        key, sig = genuine["public_key"], genuine["signature"]
        with tempfile.TemporaryDirectory() as tmp:
            keys = self.trusted(tmp)
            self.assertEqual(self.run_cli("--public-key", key, "--signature", sig, "--trusted-keys", keys,
                                          stdin=genuine["reveal"].encode())[0], 0)
            self.assertEqual(self.run_cli(stdin=forged["reveal"].encode())[0], 0, "the forgery verifies without the key")
            code, out = self.run_cli("--public-key", key, "--signature", sig, "--trusted-keys", keys,
                                     stdin=forged["reveal"].encode())
            self.assertEqual(code, 1)
            self.assertIn("does not cover this reveal", out)

    def test_a_key_not_among_the_trusted_ones_is_not_verified_unless_allowed(self):
        case = self.cases()["settle/forged-signed-by-the-platforms-key-not-in-trusted-keys"]
        args = ("--public-key", case["public_key"], "--signature", case["signature"], "--key-id", "s1")
        text = case["reveal"].encode()
        with tempfile.TemporaryDirectory() as tmp:
            code, out = self.run_cli(*args, "--trusted-keys", self.trusted(tmp), stdin=text)
            self.assertEqual(code, 1, out)
            self.assertIn("NOT among your --trusted-keys", out)
        code, out = self.run_cli(*args, stdin=text)
        self.assertEqual(code, 1, out)
        self.assertIn("no --trusted-keys given", out)
        code, out = self.run_cli(*args, "--allow-untrusted", stdin=text)
        self.assertEqual(code, 0, out)
        self.assertIn("untrusted, --allow-untrusted", out)

    def test_the_identity_key_with_r_identity_and_s_zero_verifies_nothing(self):
        case = self.cases()["settle/forged-identity-key-r-identity-s-zero"]
        with tempfile.TemporaryDirectory() as tmp:
            keys = self.trusted(tmp, public_key=case["public_key"])
            code, out = self.run_cli("--public-key", case["public_key"], "--signature", case["signature"],
                                     "--key-id", "s1", "--trusted-keys", keys, stdin=case["reveal"].encode())
        self.assertEqual(code, 1, out)
        self.assertIn("does not cover this reveal", out)
        # The library alone accepts it: the strict rule's own checks are what refuse it.
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(case["public_key"])).verify(
            bytes.fromhex(case["signature"]), b"any message")
        self.assertFalse(v.ed25519_verifies(bytes.fromhex(case["public_key"]), bytes.fromhex(case["signature"]),
                                            b"any message"))

    def test_the_key_and_signature_text_forms(self):
        g = self.cases()["settle/genuine"]
        text = g["reveal"].encode()
        with tempfile.TemporaryDirectory() as tmp:
            keys = self.trusted(tmp)
            self.assertEqual(self.run_cli("--public-key", g["public_key"].upper(), "--signature",
                                          g["signature"].upper(), "--trusted-keys", keys, stdin=text)[0], 0)
        self.assertEqual(self.run_cli("--public-key", g["public_key"], stdin=text)[0], 2)
        self.assertEqual(self.run_cli("--public-key", g["public_key"][:-1], "--signature", g["signature"],
                                      stdin=text)[0], 2)
        self.assertEqual(self.run_cli("--public-key", g["public_key"], "--signature", "0x" + g["signature"][2:],
                                      stdin=text)[0], 2)

    def test_a_reveal_of_the_branch_not_played_is_refused_with_the_decide_receipt(self):
        doc, case = self.vectors(), self.cases()
        honest, older = case["step/honest-with-the-decide-receipt"], case["step/settle-older-with-the-decide-receipt"]
        self.assertEqual(honest["receipts"], older["receipts"], "the same Decide receipt")
        with tempfile.TemporaryDirectory() as tmp:
            keys = self.trusted(tmp)
            path = os.path.join(tmp, "receipt.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(honest["receipts"][0])
            for c, want in ((honest, 0), (older, 1)):
                args = ("--public-key", c["public_key"], "--signature", c["signature"], "--trusted-keys", keys)
                code, out = self.run_cli(*args, "--receipt", path, stdin=c["reveal"].encode())
                self.assertEqual(code, want, out)
                # The Settle signature alone cannot tell the branches apart, and says so.
                code, out = self.run_cli(*args, stdin=c["reveal"].encode())
                self.assertEqual(code, 0, out)
                self.assertIn("not that it is the round played", out)
            self.assertIn("does not descend from this step", self.run_cli(
                "--public-key", older["public_key"], "--receipt", path, "--trusted-keys", keys,
                stdin=older["reveal"].encode())[1])
            self.assertEqual(self.run_cli("--receipt", path, stdin=honest["reveal"].encode())[0], 2)
            code, out = self.run_cli("--public-key", honest["public_key"], "--receipt", path, "--trusted-keys", keys,
                                     stdin=honest["reveal"].encode())
            self.assertEqual(code, 0, out)
            self.assertIn("a trusted key ('s1' in --trusted-keys)", out)
            with open(keys, "w", encoding="utf-8") as f:
                f.write("[{}]")
            self.assertEqual(self.run_cli("--public-key", honest["public_key"], "--receipt", path, "--trusted-keys",
                                          keys, stdin=honest["reveal"].encode())[0], 2)
        self.assertEqual(doc["receipt_version"], 2)

    def test_a_receipt_naming_the_face_down_card_is_refused_and_says_so(self):
        c = self.cases()["step/start-receipt-naming-the-face-down-card"]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "receipt.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(c["receipts"][0])
            code, out = self.run_cli("--public-key", c["public_key"], "--receipt", path, "--trusted-keys",
                                     self.trusted(tmp), stdin=c["reveal"].encode())
        self.assertEqual(code, 1, out)
        self.assertIn("leaked the face-down card", out)
        # The version-1 StartRound receipt of the frozen vectors names it too: refused.
        old = self.cases("receipt-v1.json")["step/settle-older-with-the-start-receipt-only"]
        self.assertEqual(old["verdict"], "not_verified")
        self.assertEqual(v.receipt_case_verdict(old), "not_verified")

    def test_the_commit_receipt_messages_are_section_4_7s(self):
        for name, label in (("receipt-v2.json", b"reddog/receipt/commit/v2"), ("receipt-v1.json",
                                                                               b"reddog/receipt/commit/v1")):
            doc = self.vectors(name)
            c = doc["commit"]
            m = v.commit_receipt_message(bytes.fromhex(c["commitment"]), c["round_id"], c["nonce"], c["table_id"],
                                         c["decks"], bytes.fromhex(c["rules_digest"]), c["expires_at_unix_ms"],
                                         c["algorithm"], c["sandbox"],
                                         doc["key_id"] if doc["receipt_version"] == 2 else None)
            self.assertEqual(m.hex(), c["message_hex"])
            self.assertTrue(m.startswith(bytes.fromhex("00000018") + label))

    def test_only_one_trailing_line_feed_is_ignored(self):
        self.assertEqual(v.receipt_bytes(b"{}\n"), b"{}")
        self.assertEqual(v.receipt_bytes(b"{}\n\n"), b"{}\n")
        self.assertEqual(v.receipt_bytes(b"{}"), b"{}")


class PlayersRecord(unittest.TestCase):
    """The player's record (FAIRNESS.md 4.5): --expect-transcript and the other options."""

    def run_cli(self, *args, stdin=b""):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "verify", "verify.py")] + list(args),
                           input=stdin, capture_output=True)
        return p.returncode, p.stdout.decode("utf-8", "replace")

    def test_a_forged_reveal_with_a_recomputed_transcript_is_refused_given_the_players_record(self):
        b = mk.bases()
        for base in ("raised-win", "raised-win-v3"):
            genuine = b[base]
            forged = mk.forge(genuine)
            text = mk.render(forged).encode()
            self.assertEqual(self.run_cli(stdin=text)[0], 0, "the forgery verifies alone")
            given = [("--expect-transcript", genuine["transcript"]),
                     ("--expect-transcript", genuine["transcript"].upper()),
                     ("--expect-decisions", "0:raise"), ("--expect-returned", "4000")]
            if "rules_digest" in genuine:
                given.append(("--expect-rules-digest", genuine["rules_digest"]))
            for option, value in given:
                code, out = self.run_cli(option, value, stdin=text)
                self.assertEqual(code, 1, (base, option))
                self.assertIn("NOT VERIFIED", out)
            genuine_text = mk.render(genuine).encode()
            self.assertEqual(self.run_cli("--expect-transcript", genuine["transcript"], "--expect-decisions", "0:raise",
                                          "--expect-returned", "4000", "--expect-bets", "1000",
                                          stdin=genuine_text)[0], 0)

    def test_seats_within_a_call_in_any_order_and_hex_in_either_case(self):
        with open(os.path.join(ROOT, "tests", "vectors", "reveal-v3.json"), encoding="utf-8") as f:
            case = next(c for c in json.load(f)["cases"] if c["name"] == "7-seats/three-steps/one-stands-by-default")
        text = case["reveal"].encode()
        r = json.loads(text)
        self.assertEqual(self.run_cli("--expect-decisions", "3:raise,0:stand;1:raise;5:stand,2:raise,4:raise",
                                      stdin=text)[0], 0)
        self.assertEqual(self.run_cli("--expect-decisions", "1:raise;3:raise,0:stand;5:stand,2:raise,4:raise",
                                      stdin=text)[0], 1)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "record.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"transcript": r["transcript"], "decisions": [list(reversed(c)) for c in r["decisions"]]}, f)
            self.assertEqual(self.run_cli("--expect", path, "--expect-transcript", r["transcript"].upper(),
                                          "--expect-decisions", "3:raise,0:stand;1:raise;5:stand,2:raise,4:raise",
                                          stdin=text)[0], 0)

    def test_expectation_integers_with_a_sign_or_a_leading_zero_are_malformed_input(self):
        r = mk.bases()["win-v3"]
        text = mk.render(r).encode()
        for option, value in (("--expect-nonce", "007"), ("--expect-nonce", "+0"), ("--expect-nonce", "00"),
                              ("--expect-nonce", " 0"), ("--expect-nonce", "0.0"), ("--expect-decks", "+1"),
                              ("--expect-decks", "01"), ("--expect-decks", "0x1"), ("--expect-bets", "500,"),
                              ("--expect-bets", "+500"), ("--expect-bets", "0500"), ("--expect-returned", "1 2"),
                              ("--expect-decisions", "0:fold"), ("--expect-decisions", "0:raise;"),
                              ("--expect-decisions", "00:raise"), ("--expect-decisions", "7:raise"),
                              ("--expect-transcript", "abc"), ("--expect-rules-digest", "zz"),
                              ("--expect-nonce", "\u0667")):
            self.assertEqual(self.run_cli(option, value, stdin=text)[0], 2, (option, value))
        decisions = ";".join(",".join("%d:%s" % (d["seat"], d["action"]) for d in call) for call in r["decisions"])
        self.assertEqual(decisions, "0:raise;1:stand,2:raise")
        code, out = self.run_cli("--expect-nonce", str(r["nonce"]), "--expect-decks", str(r["decks"]),
                                 "--expect-decisions", decisions, "--expect-rules-digest", r["rules_digest"],
                                 "--expect-bets", ",".join(str(s["bet"]) for s in r["seats"]),
                                 "--expect-returned", ",".join(str(s["returned"]) for s in r["seats"]), stdin=text)
        self.assertEqual(code, 0, out)


class Vectors(unittest.TestCase):
    def test_every_vector_passes(self):
        passed, failed = v.check_vectors(os.path.join(ROOT, "tests", "vectors"), out=io.StringIO())
        self.assertEqual(failed, 0)
        self.assertGreaterEqual(passed, 26 + 200)

    def test_the_negative_vector_file_is_what_the_generator_writes(self):
        with open(mk.OUT, encoding="utf-8") as f:
            self.assertEqual(f.read(), mk.document())

    def test_a_verifier_that_accepts_too_much_fails_the_negative_vectors(self):
        # Mutations of this verifier, each dropping one rule: the negative vectors must notice.
        with open(mk.OUT, encoding="utf-8") as f:
            doc = json.load(f)

        def failures():
            failed = []
            for case in doc["cases"]:
                try:
                    got = v.check_text(case["reveal"], v._case_expect(case))
                except Exception:  # a mutated verifier may crash: that is not the verdict either
                    got = "crash"
                if got != case["verdict"]:
                    failed.append(case["name"])
            return failed

        self.assertEqual(failures(), [])
        mutations = {
            "card count": ("cards_for", lambda cls: 3, "v2/cards/extra-card-consecutive"),
            "t_0 only, no chain": ("transcript_chain", lambda t0, decides: t0, "verify/transcript/start-hash-only"),
            "standard odds": ("settle_seat", lambda codes, pt, bet, raised: self.standard(codes, bet, raised),
                              "verify/returned/standard-paytable"),
        }
        for label, (attr, fake, expected) in mutations.items():
            old = getattr(v, attr)
            setattr(v, attr, fake)
            try:
                failed = failures()
            finally:
                setattr(v, attr, old)
            self.assertTrue(any(n.startswith(expected) for n in failed), (label, failed[:5]))

    @staticmethod
    def standard(codes, bet, raised):
        return v.settle_seat(codes, mk.STANDARD, bet, raised)

if __name__ == "__main__":
    unittest.main()
