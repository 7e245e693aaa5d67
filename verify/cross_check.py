#!/usr/bin/env python3
"""Cross-checks two verifiers on the shared reveal vectors: every case of
tests/vectors/reveal-negative.json (and of reveal-v2.json, reveal-v3.json, receipt-v1.json and
receipt-v2.json when present; a receipt case with its --public-key, --key-id, --signature,
--receipt files, --trusted-keys and --allow-untrusted) is written to a file and given to
each verifier command; each must exit with the case's status (0 verified, 1 not verified,
2 malformed). Prints every disagreement; exit status 1 if there is any.

    python3 verify/cross_check.py VECTOR_DIR 'target/debug/reddog verify' 'python3 verify/verify.py'
"""

import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import tempfile

STATUS = {"verified": 0, "not_verified": 1, "malformed": 2}


def cases(directory, tmp):
    """(name, reveal text, expectations or None, verdict, extra arguments) of every case; step
    receipts are written to files in tmp."""
    with open(os.path.join(directory, "reveal-negative.json"), encoding="utf-8") as f:
        for c in json.load(f)["cases"]:
            yield "reveal-negative.json/" + c["name"], c["reveal"], c.get("expect"), c["verdict"], []
    for name in ("reveal-v2.json", "reveal-v3.json"):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            for c in json.load(f)["cases"]:
                r = c["reveal"]
                text = r if isinstance(r, str) else json.dumps(r, ensure_ascii=False, separators=(",", ":"))
                yield name + "/" + c["name"], text, c.get("expect"), c.get("verdict", "verified"), []
    # Signed receipts (FAIRNESS.md 4.7): each case with its public key, key id, Settle
    # signature, receipt files, trusted keys and --allow-untrusted.
    for name in ("receipt-v1.json", "receipt-v2.json"):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for n, c in enumerate(doc["cases"]):
            extra = ["--public-key", c["public_key"]]
            extra += ["--key-id", c["key_id"]] if c["key_id"] else []
            extra += ["--signature", c["signature"]] if c["signature"] else []
            for i, r in enumerate(c["receipts"]):
                receipt = os.path.join(tmp, "%s-receipt-%d-%d.json" % (name, n, i))
                with open(receipt, "w", encoding="utf-8", newline="") as f:
                    f.write(r)
                extra += ["--receipt", receipt]
            if c["trusted_keys"] is not None:
                keys = os.path.join(tmp, "%s-trusted-%d.json" % (name, n))
                with open(keys, "w", encoding="utf-8") as f:
                    json.dump(c["trusted_keys"], f)
                extra += ["--trusted-keys", keys]
            extra += ["--allow-untrusted"] if c["allow_untrusted"] else []
            yield name + "/" + c["name"], c["reveal"], None, c["verdict"], extra


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    directory, commands = argv[0], [shlex.split(c) for c in argv[1:]]
    checked = disagreements = 0
    with tempfile.TemporaryDirectory() as tmp:
        # Each case in files of its own, so the runs (a process each) can go side by side.
        runs = []
        for n, (name, text, expect, verdict, extra) in enumerate(cases(directory, tmp)):
            reveal_path = os.path.join(tmp, "reveal-%d.json" % n)
            with open(reveal_path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            extra = list(extra)
            if expect is not None:
                expect_path = os.path.join(tmp, "expect-%d.json" % n)
                with open(expect_path, "w", encoding="utf-8") as f:
                    json.dump(expect, f, ensure_ascii=False)
                extra += ["--expect", expect_path]
            runs += [(name, verdict, cmd + [reveal_path] + extra) for cmd in commands]

        def run(r):
            return subprocess.run(r[2], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for (name, verdict, cmd), got in zip(runs, pool.map(run, runs)):
                checked += 1
                if got != STATUS[verdict]:
                    disagreements += 1
                    print("DISAGREE %s: %s exits %d, the vector says %s (%d)"
                          % (name, " ".join(cmd), got, verdict, STATUS[verdict]))
    print("cross-check: %d runs, %d disagreements" % (checked, disagreements))
    return 0 if disagreements == 0 and checked > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
