#!/usr/bin/env python3
"""Heap allocations counted in callgrind output files (docs/BENCHMARKS.md).

    scripts/callgrind-allocs.py FILE_AFTER_N1 FILE_AFTER_N2 N2-N1

prints the calls of malloc/calloc/realloc (and the callers that made them) per call between
two runs of `grpc_ratio --callgrind N1,N2 --out DIR` (files DIR/callgrind.engine.RPC.N):
(count in the N2 file - count in the N1 file) / (N2 - N1). With one file, the raw counts.
"""
import collections
import re
import sys

ALLOC = {"malloc", "calloc", "realloc", "__libc_malloc", "__libc_calloc", "__libc_realloc"}


def counts(path):
    """{(caller, allocator): calls} from the `calls=` lines of a callgrind file."""
    names = {}
    fn = cfn = None
    out = collections.Counter()
    name_re = re.compile(r"^\((\d+)\)(?: (.*))?$")

    def resolve(v):
        m = name_re.match(v)
        if not m:
            return v
        i, name = m.group(1), m.group(2)
        if name is not None:
            names[i] = name
        return names.get(i, v)

    pending = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                fn = resolve(line[3:])
            elif line.startswith("cfn="):
                cfn = resolve(line[4:])
            elif line.startswith("cfi=") or line.startswith("cfl="):
                pass
            elif line.startswith("calls="):
                pending = int(line[6:].split()[0])
                if cfn in ALLOC:
                    out[(fn, cfn)] += pending
    return out


def main():
    if len(sys.argv) == 2:
        c = counts(sys.argv[1])
        for (caller, a), n in c.most_common(40):
            print(f"{n:>10} {a:<8} {caller}")
        print(f"{sum(c.values()):>10} in all")
        return
    a, b, n = counts(sys.argv[1]), counts(sys.argv[2]), int(sys.argv[3])
    diff = collections.Counter({k: b[k] - a.get(k, 0) for k in b})
    total = sum(diff.values())
    print(f"allocations per call: {total / n:.2f}")
    for (caller, alloc), k in diff.most_common(30):
        if k / n >= 0.05:
            print(f"  {k / n:6.2f}  {alloc:<8} from {caller}")


if __name__ == "__main__":
    main()
