#!/usr/bin/env python3
"""Prints each function's length in lines (signature to closing brace), longest first.

Usage: scripts/fn-lengths.py FILE... [--max N]  (exit 1 if a function is longer than N).
Relies on rustfmt's layout: a body ends at the first `}` line indented like its `fn`.
"""
import re
import signal
import sys

FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")


def lengths(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        indent = m.group(1)
        for j in range(i, len(lines)):
            if lines[j].rstrip().endswith(";") and j == i:
                break  # a declaration without a body
            if lines[j] == indent + "}" or (j == i and lines[j].rstrip().endswith("}")):
                yield j - i + 1, f"{path}:{i + 1}", m.group(2)
                break


def main(argv):
    limit = None
    if "--max" in argv:
        k = argv.index("--max")
        limit = int(argv[k + 1])
        argv = argv[:k] + argv[k + 2 :]
    found = sorted((f for p in argv for f in lengths(p)), reverse=True)
    for n, at, name in found:
        print(f"{n:4} {name} {at}")
    over = [f for f in found if limit is not None and f[0] > limit]
    return 1 if over else 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
