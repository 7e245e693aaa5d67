#!/usr/bin/env python3
"""Prints each function's length in lines (signature to closing brace), longest first.

Usage: scripts/fn-lengths.py FILE... [--max N] [--skip-tests]
  --max N       exit 1 if a function is longer than N lines (each one is printed with FAIL:).
  --skip-tests  leave out test code: functions inside an item marked `#[cfg(test)]` (the
                `mod tests` of a file) and functions marked `#[test]` or `#[tokio::test]`.
Relies on rustfmt's layout: a body ends at the first `}` line indented like its `fn`.
"""
import re
import signal
import sys

FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")
ATTR = re.compile(r"^\s*#\[")
TEST_ATTR = re.compile(r"^\s*#\[(?:cfg\(test\)|test|tokio::test\b[^\]]*)\]\s*$")


def end_of(lines, i, indent):
    """The index of the line closing the item that starts on line `i`, or None."""
    if lines[i].rstrip().endswith(";"):
        return None  # a declaration without a body
    if lines[i].rstrip().endswith("}"):
        return i
    for j in range(i + 1, len(lines)):
        if lines[j] == indent + "}":
            return j
    return None


def test_lines(lines):
    """The set of line indexes that belong to test code (see --skip-tests)."""
    out = set()
    for i, line in enumerate(lines):
        if not TEST_ATTR.match(line):
            continue
        k = i + 1
        while k < len(lines) and ATTR.match(lines[k]):
            k += 1
        if k == len(lines):
            continue
        indent = re.match(r"^(\s*)", lines[k]).group(1)
        end = end_of(lines, k, indent)
        if end is not None:
            out.update(range(k, end + 1))
    return out


def lengths(path, skip_tests=False):
    lines = open(path, encoding="utf-8").read().splitlines()
    tests = test_lines(lines) if skip_tests else set()
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or i in tests:
            continue
        end = end_of(lines, i, m.group(1))
        if end is not None:
            yield end - i + 1, f"{path}:{i + 1}", m.group(2)


def main(argv):
    limit = None
    if "--max" in argv:
        k = argv.index("--max")
        limit = int(argv[k + 1])
        argv = argv[:k] + argv[k + 2 :]
    skip_tests = "--skip-tests" in argv
    argv = [a for a in argv if a != "--skip-tests"]
    found = sorted((f for p in argv for f in lengths(p, skip_tests)), reverse=True)
    over = [f for f in found if limit is not None and f[0] > limit]
    if limit is None:
        for n, at, name in found:
            print(f"{n:4} {name} {at}")
    for n, at, name in over:
        print(f"FAIL: {n:4} {name} {at} is over {limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
