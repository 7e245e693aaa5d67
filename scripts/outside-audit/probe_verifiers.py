"""Probe 6: the two verifiers must give the same verdict (FAIRNESS §4: "so that two verifiers
always give the same answer"). Genuine reveals from the probe_max run, mutated at the text and
the value level; `reddog verify` (exit 0/1/2) against verify.py's check_text. Where the right
verdict is clear from FAIRNESS §4 alone, it is checked too."""

import glob
import json
import os
import random
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("REDDOG", os.path.join(ROOT, "target", "release", "reddog"))
sys.path.insert(0, os.path.join(ROOT, "verify"))
import verify as V  # noqa: E402

src = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
reveals = [open(f, "rb").read() for f in sorted(glob.glob(os.path.join(src, "reveal-*.json")))[:40]]
rng = random.Random(11)
codes = {0: "verified", 1: "not_verified", 2: "malformed"}


def rust(data):
    r = subprocess.run([BIN, "verify", "-"], input=data, capture_output=True)
    return codes.get(r.returncode, f"rc{r.returncode}"), r.stderr.decode(errors="replace")[-200:]


def mutate_value(obj):
    o = json.loads(json.dumps(obj))
    k = rng.choice(list(o))
    choices = [
        lambda: o.__setitem__(k, None),
        lambda: o.pop(k),
        lambda: o.__setitem__(k, 0),
        lambda: o.__setitem__(k, ""),
        lambda: o.__setitem__(k, True),
        lambda: o.__setitem__(k, [o[k]]),
        lambda: o.__setitem__("extra", 1),
    ]
    if k == "seats" and o["seats"]:
        i = rng.randrange(len(o["seats"]))
        f = rng.choice(["bet", "stake", "returned", "raised"])
        choices += [
            lambda: o["seats"][i].__setitem__(f, rng.choice([0, 1, 2**64 - 1, 2**64, o["seats"][i][f] + 1
                                                             if not isinstance(o["seats"][i][f], bool) else 0])),
            lambda: o["seats"].append(dict(o["seats"][i])),
            lambda: o["seats"].pop(i),
            lambda: o["seats"][i].__setitem__("raised", not o["seats"][i]["raised"]),
        ]
    if k == "decisions":
        choices += [
            lambda: o["decisions"].append([{"seat": 0, "action": "raise"}]),
            lambda: o["decisions"].append([]),
            lambda: o["decisions"] and o["decisions"][0].append({"seat": 9, "action": "stand"}),
            lambda: o["decisions"] and o["decisions"].insert(0, o["decisions"].pop()),
            lambda: o["decisions"] and o["decisions"][0][0].__setitem__("action", "RAISE"),
        ]
    if k == "cards":
        choices += [lambda: o["cards"].pop(), lambda: o["cards"].append("2c"),
                    lambda: o["cards"].__setitem__(0, o["cards"][0].lower()),
                    lambda: o["cards"].reverse()]
    if k in ("nonce", "decks"):
        choices += [lambda: o.__setitem__(k, rng.choice([-1, 0, 9, 2**64 - 1, 2**64, 1.0, "1"]))]
    if k in ("round_id", "table_id", "client_seed"):
        choices += [lambda: o.__setitem__(k, o[k] + rng.choice(["\u0000", "\u0085", "x" * 1100, " ", "é", "\ud83c\udfb2"])),
                    lambda: o.__setitem__(k, o[k][:-1])]
    if k == "paytable":
        choices += [lambda: o["paytable"]["spread"].pop(), lambda: o["paytable"].__setitem__("three_of_a_kind", 10001),
                    lambda: o["paytable"]["spread"].__setitem__(0, 0)]
    if k in ("server_seed", "commitment", "transcript"):
        choices += [lambda: o.__setitem__(k, o[k].upper()), lambda: o.__setitem__(k, o[k][:-1]),
                    lambda: o.__setitem__(k, o[k][:-1] + ("0" if o[k][-1] != "0" else "1"))]
    rng.choice(choices)()
    return json.dumps(o, ensure_ascii=rng.random() < 0.5).encode("utf-8", errors="surrogatepass")


def mutate_text(data):
    t = data.decode()
    ops = [
        lambda: t.replace('"nonce":', '"nonce":0', 1),
        lambda: t.replace(",", ", ", 3),
        lambda: t + " ",
        lambda: t + "\n{}",
        lambda: "\ufeff" + t,
        lambda: t.replace('{"format"', '{"format":"reddog-reveal-v2","format"', 1),
        lambda: t.replace('"decks":', '"decks":1e0,"x":', 1),
        lambda: t.replace('"raised":false', '"raised":0', 1),
        lambda: t.replace('"client_seed":"', '"client_seed":"\\u0000', 1),
        lambda: t.replace('"round_id":"', '"round_id":"\\ud800', 1),
        lambda: t[:rng.randrange(len(t))],
        lambda: t.replace('"bet":', '"bet":-', 1),
        lambda: t.replace('"bet":', '"bet":0', 1),
        lambda: t.replace("}", ",}", 1),
        lambda: t.replace('"transcript"', '"transcript":"x","transcript"', 1),
    ]
    return rng.choice(ops)().encode("utf-8", errors="surrogatepass")


disagree = []
counts = {}
for i in range(N):
    base = rng.choice(reveals)
    data = mutate_value(json.loads(base)) if rng.random() < 0.6 else mutate_text(base)
    r, err = rust(data)
    try:
        p = V.check_text(data)
    except Exception as e:  # a crash is a finding
        p = f"crash {type(e).__name__}: {e}"
    counts[(r, p)] = counts.get((r, p), 0) + 1
    if r != p:
        disagree.append((data[:300], r, p, err))
print("verdict pairs (reddog verify, verify.py):", counts)
print("disagreements:", len(disagree))
for d in disagree[:15]:
    print(" ", d)
sys.exit(1 if disagree else 0)
