#!/usr/bin/env python3
"""Where one engine call's instructions go, from callgrind files (docs/BENCHMARKS.md).

    scripts/callgrind-split.py DIR [N1 N2]

reads DIR/callgrind.engine.RPC.N1 and .N2 (written by `grpc_ratio --callgrind N1,N2 --out DIR`,
default 2000 and 6000) and prints, per RPC, instructions per call ((N2 run - N1 run) / (N2 - N1))
split into:

- transport: everything outside the RPC's handler future (tonic, hyper, h2, the engine's
  guard and codec, the runtime);
- token seal/open: `KeyRing::seal` and `KeyRing::open_checked` (src/service/round/token.rs, kept
  out of line for this): the payload's protobuf encoding or decoding, the HMAC-SHA-256
  synthetic nonce and AES-256-GCM-SIV;
- audit record: `AuditSink::record` (serialising the record, its chaining SHA-256, queueing);
- handler, the rest: validating the request, dealing or revealing, building the answer.

Costs are callgrind_annotate's inclusive costs (`--inclusive=yes`). Inlined code appears as
its own (file, function) entry, and the entry of a function's own body includes it, so a
function's inclusive cost is the largest of its entries. Without a signing key (the
benchmark's ring) no receipt is signed; with one, Ed25519 falls in "the rest".
"""
import re
import subprocess
import sys

RPCS = ["GetRules", "CommitSeed", "StartRound", "Decide", "Settle"]
SNAKE = {"GetRules": "get_rules", "CommitSeed": "commit_seed", "StartRound": "start_round",
         "Decide": "decide", "Settle": "settle"}
TOKEN_FN = re.compile(r"^reddog::service::token::KeyRing::(seal|open_checked)\b")
LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+?):(.*?)(?: \[[^\]]*\])?$")


def entries(path):
    """(total, [(cost, file, function)]) of one callgrind file, inclusive costs."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         check=True, capture_output=True, text=True).stdout
    total, rows = None, []
    for line in out.splitlines():
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
            continue
        m = LINE.match(line)
        if m:
            rows.append((int(m.group(1).replace(",", "")), m.group(2), m.group(3)))
    if total is None:
        sys.exit(f"{path}: no PROGRAM TOTALS in callgrind_annotate's output")
    return total, rows


def split(path, rpc):
    total, rows = entries(path)
    handler_fn = f"<reddog::service::api::RedDogService as reddog::proto::red_dog_server::RedDog>::{SNAKE[rpc]}::{{{{closure}}}}"
    largest = {}
    for cost, _, fn in rows:
        largest[fn] = max(largest.get(fn, 0), cost)
    if handler_fn not in largest:
        sys.exit(f"{path}: no {handler_fn} (renamed? a build without symbols?)")
    handler = largest[handler_fn]
    audit = largest.get("reddog::service::audit_sink::AuditSink::record", 0)
    # Each monomorphised seal or open is a function of its own; neither calls the other.
    sealing = sum(cost for fn, cost in largest.items() if TOKEN_FN.search(fn))
    if rpc != "GetRules" and not (audit and sealing):
        # Every round RPC seals or opens a token and writes an audit record: a zero here means
        # the functions were renamed or inlined, and the split would be wrong without a word.
        sys.exit(f"{path}: no AuditSink::record or KeyRing::seal/open_checked found")
    return {"total": total, "transport": total - handler, "sealing": sealing, "audit": audit,
            "rest": handler - sealing - audit}


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__)
    d = sys.argv[1]
    n1, n2 = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) == 4 else (2000, 6000)
    print("| RPC | engine Ir/call | transport | token seal/open | audit record | handler, the rest |")
    print("|---|---:|---:|---:|---:|---:|")
    for rpc in RPCS:
        try:
            a, b = split(f"{d}/callgrind.engine.{rpc}.{n1}", rpc), split(f"{d}/callgrind.engine.{rpc}.{n2}", rpc)
        except FileNotFoundError:
            continue
        per = {k: (b[k] - a[k]) / (n2 - n1) for k in a}
        if min(per.values()) < -1:
            print(f"warning: {rpc}: a negative share ({per}); the runs differ in more than their calls",
                  file=sys.stderr)
        cells = " | ".join(f"{max(per[k], 0):,.0f} ({max(per[k], 0) / per['total']:.0%})"
                           for k in ("transport", "sealing", "audit", "rest"))
        print(f"| {rpc} | {per['total']:,.0f} | {cells} |")


if __name__ == "__main__":
    main()
