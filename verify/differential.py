#!/usr/bin/env python3
"""Differential test of two reveal verifiers: random variations of genuine reveals (the bases
of make_negative_vectors.py and the engine's tests/vectors/reveal-v2.json) go to verify.py and
to another verifier command; their exit statuses must be equal. Two kinds of variation:

- text: a character dropped, inserted or changed, a key duplicated or dropped, a value
  replaced by another JSON type, whitespace added, seats or decisions changed;
- money: well-formed rounds with random seats, bets (0, 1, MAX_BET, MAX_BET + 1, random up to
  2^64 - 1), decisions and paytables, amounts by the rules (sometimes off by one or wrapped),
  the transcript recomputed — so most differences lie in checks 3 and 4, not in the grammar.

    python3 verify/differential.py 'target/debug/reddog verify' [CASES] [SEED]

Prints every disagreement and a tally; exit status 1 if there is any.
"""

import copy
import json
import os
import random
import shlex
import subprocess
import sys

import make_negative_vectors as mk
import verify as v

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATUS = {"verified": 0, "not_verified": 1, "malformed": 2}


def text_variation(rnd, t):
    k = rnd.randrange(9)
    i = rnd.randrange(len(t))
    if k == 0:
        return t[:i] + t[i + 1:]
    if k == 1:
        return t[:i] + rnd.choice('0123456789abcdefABCDEF"{}[],:-. \\eE') + t[i:]
    if k == 2:
        return t[:i] + rnd.choice("0123456789abcdef") + t[i + 1:]
    if k == 5:
        return t.replace(":", " : ", 1) if rnd.random() < 0.5 else "\n" + t + "\n"
    o = json.loads(t)
    if not isinstance(o, dict) or not o:
        return t + " "
    key = rnd.choice(list(o))
    if k == 3:
        return t[:-1] + "," + json.dumps(key) + ":" + json.dumps(o[key]) + "}"
    if k == 4:
        del o[key]
    elif k == 6:
        o[key] = rnd.choice([None, True, 0, -1, 1.5, "", "x", [], {}, 2**64, 2**64 - 1])
    elif k == 7 and isinstance(o.get("seats"), list) and o["seats"] and isinstance(o["seats"][0], dict):
        s = rnd.choice(o["seats"])
        f = rnd.choice(list(s))
        s[f] = rnd.choice([0, 1, 2**64 - 1, True, False, s[f] + 1 if v.is_int(s[f]) else None])
    elif isinstance(o.get("decisions"), list):
        o["decisions"] = rnd.choice([[], [[{"seat": 0, "action": "raise"}]], o["decisions"][::-1],
                                     [[{"seat": 0, "action": "stand"}], [{"seat": 1, "action": "raise"}]]])
    return json.dumps(o, ensure_ascii=rnd.random() < 0.5)


def money_variation(rnd, bases):
    r = copy.deepcopy(bases[rnd.choice(["win", "loss", "pair", "trips", "consecutive"])])
    codes = [v.card_code(c) for c in r["cards"]]
    cls, _ = v.hand_class(codes[0], codes[1])
    n = rnd.randint(1, 7)
    if rnd.random() < 0.5:
        r["paytable"] = {"spread": [rnd.choice([1, 2, 5, 10000]) for _ in range(11)],
                         "three_of_a_kind": rnd.choice([1, 11, 10000])}
    decides = []
    if cls == v.NON_CONSECUTIVE:
        seats = list(range(n))
        rnd.shuffle(seats)
        seats = seats[:rnd.randint(0, n)]
        while seats:
            k = rnd.randint(1, len(seats))
            decides.append([{"seat": s, "action": rnd.choice(["raise", "stand"])} for s in sorted(seats[:k])])
            seats = seats[k:]
    r["decisions"] = decides
    decision = {d["seat"]: d["action"] for step in decides for d in step}
    r["seats"] = []
    for i in range(n):
        bet = rnd.choice([0, 1, 5, v.MAX_BET, v.MAX_BET + 1, rnd.randint(1, v.MAX_BET), rnd.randint(1, v.U64_MAX)])
        stake, returned = v.settle_seat(codes, r["paytable"], bet, decision.get(i) == "raise")
        stake, returned = stake % 2**64, returned % 2**64
        if rnd.random() < 0.1:
            returned = (returned + rnd.choice([1, -1])) % 2**64
        r["seats"].append({"bet": bet, "raised": decision.get(i) == "raise", "stake": stake, "returned": returned})
    return mk.render(mk.retranscript(r))


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    command = shlex.split(argv[0])
    cases = int(argv[1]) if len(argv) > 1 else 1000
    rnd = random.Random(int(argv[2]) if len(argv) > 2 else 1)
    bases = mk.bases()
    texts = [mk.render(r) for r in bases.values()]
    with open(os.path.join(ROOT, "tests", "vectors", "reveal-v2.json"), encoding="utf-8") as f:
        texts += [c["reveal"] for c in json.load(f)["cases"]]
    tally = {}
    disagreements = 0
    for i in range(cases):
        if i % 2:
            text = money_variation(rnd, bases)
        else:
            try:
                text = text_variation(rnd, rnd.choice(texts))
                if rnd.random() < 0.3:
                    text = text_variation(rnd, text)
            except (ValueError, IndexError, TypeError, KeyError):  # a variation of text that is no longer a reveal
                pass
        ours = STATUS[v.check_text(text)]
        theirs = subprocess.run(command + ["-"], input=text.encode("utf-8", "surrogatepass"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        tally[ours] = tally.get(ours, 0) + 1
        if ours != theirs:
            disagreements += 1
            print("DISAGREE verify.py %d, %s %d: %r" % (ours, " ".join(command), theirs, text[:300]))
    print("differential: %d reveals (verify.py: %d verified, %d not verified, %d malformed), %d disagreements"
          % (cases, tally.get(0, 0), tally.get(1, 0), tally.get(2, 0), disagreements))
    return 0 if disagreements == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
