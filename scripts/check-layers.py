#!/usr/bin/env python3
"""Fails on an import loop between the top-level modules of the engine's crates.

For each crate (src/ without the binary's cli/, and core/src), every module is a node
(`service`, `service::app`, ...). A module depends on another when its code (comments and
doc links aside) names it through `crate::`, `super::` or `self::` paths, `use` groups
included. The crate root's children are the layers (`service`, `audit`, `game`, ...): their
dependencies (each module's whole subtree counted) must form no cycle; a loop between them
fails the check. Loops between the children of a deeper module (`service::app` and
`service::server`) are listed too, and fail only with `--strict`. Exits 1 on a failing loop.

    python3 scripts/check-layers.py            # the repository
    python3 scripts/check-layers.py --strict   # also fail on loops inside a module
    python3 scripts/check-layers.py --root DIR # another checkout (CI plants a loop in a copy)
"""
import argparse
import re
import sys
from pathlib import Path

CRATES = [("src", {"main.rs", "cli"}), ("core/src", set())]
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def modules(src: Path, skip: set):
    """Module path (tuple) -> source file, for a crate rooted at src/lib.rs."""
    out = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src)
        if rel.parts[0] in skip:
            continue
        parts = list(rel.with_suffix("").parts)
        if parts == ["lib"]:
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        out[tuple(parts)] = f
    return out


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def expand(path: str):
    """`a::{b, c::d}` -> [`a::b`, `a::c::d`] (one level of braces is enough for module names)."""
    m = re.match(r"^(.*?)::\{(.*)\}$", path, flags=re.S)
    if not m:
        return [path]
    head, body = m.groups()
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    return [p for i in items if i.strip() for p in expand(f"{head}::{i.strip()}")]


def references(module: tuple, text: str, known: set):
    """The known modules `module`'s code names."""
    code = strip_comments(text)
    paths = [p for u in re.findall(r"\buse\s+([^;]+);", code) for p in expand(re.sub(r"\s+", "", u))]
    paths += re.findall(rf"\b(?:crate|super|self)(?:::{IDENT})+", code)
    found = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "crate":
            base, rest = (), parts[1:]
        elif parts[0] in ("super", "self"):
            base = module
            while parts and parts[0] in ("super", "self"):
                base = base[:-1] if parts[0] == "super" else base
                parts = parts[1:]
            rest = parts
        else:
            continue
        target = base
        for name in rest:
            if target + (name,) in known:
                target = target + (name,)
            else:
                break
        if target != module and target:
            found.add(target)
    return found


def cycles(nodes, edges):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check(root: Path, strict: bool) -> int:
    failures = 0
    notes = 0
    for crate, skip in CRATES:
        src = root / crate
        if not (src / "lib.rs").exists():
            continue
        mods = modules(src, skip)
        known = set(mods)
        deps = {m: references(m, f.read_text(encoding="utf-8"), known) for m, f in mods.items()}
        parents = {m[:-1] for m in mods if m}
        for parent in sorted(parents):
            children = sorted(m for m in mods if len(m) == len(parent) + 1 and m[: len(parent)] == parent)
            edges = {}
            for m, targets in deps.items():
                if m[: len(parent)] != parent or len(m) <= len(parent):
                    continue
                child = m[: len(parent) + 1]
                for t in targets:
                    if t[: len(parent)] == parent and len(t) > len(parent) and t[: len(parent) + 1] != child:
                        edges.setdefault(child, set()).add(t[: len(parent) + 1])
            for comp in cycles(children, edges):
                enforced = strict or parent == ()
                failures += enforced
                notes += not enforced
                names = [("::".join(c)) for c in comp]
                kind = "import loop" if enforced else "note: import loop inside a module"
                print(f"{kind} in {crate} ({'::'.join(parent) or 'crate root'}): {' <-> '.join(names)}")
                for c in comp:
                    inside = sorted("::".join(t) for t in edges.get(c, ()) if t in comp)
                    print(f"  {'::'.join(c)} imports {', '.join(inside)}")
        top = sorted("::".join(m) for m in mods if len(m) == 1)
        print(f"{crate}: {len(mods)} modules, top level: {' '.join(top)}")
    if failures:
        print(f"FAIL: {failures} import loop(s)")
        return 1
    print(f"ok: no import loop between top-level modules ({notes} inside modules, listed above)")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--strict", action="store_true", help="also fail on loops inside a module")
    args = ap.parse_args()
    sys.exit(check(args.root, args.strict))
