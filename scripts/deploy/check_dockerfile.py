#!/usr/bin/env python3
"""Static checks of the Dockerfile and .dockerignore (no Docker engine on CI machines).

- multi-stage; dependencies cached (BuildKit cache mounts or cargo-chef); a locked release
  build; no protoc installed (build.rs uses protox);
- the final stage is distroless or scratch (no shell), runs as a numeric non-root USER, has
  the OCI labels, an exec-form ENTRYPOINT, and EXPOSEs the ports the Deployment uses;
- .dockerignore keeps every file the build needs (the manifests, build.rs, proto/, src/, any
  target Cargo.toml names, any file the sources include_str!/include_bytes!) and drops
  target/ and .git/.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
REQUIRED_LABELS = ["title", "description", "version", "revision", "created", "licenses"]

failures: list[str] = []


def check(cond: bool, what: str) -> None:
    print(f"    {'ok  ' if cond else 'FAIL'}  {what}")
    if not cond:
        failures.append(what)


def instructions(text: str) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", text)
    out = []
    for ln in text.splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        word, _, rest = ln.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; '!' re-includes; a pattern matching a
    parent directory matches everything under it."""
    result = False
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for p in patterns:
        neg = p.startswith("!")
        pat = p[1:] if neg else p
        pat = pat.strip("/")
        globs = [pat] + ([pat[3:]] if pat.startswith("**/") else [])
        if any(fnmatch.fnmatchcase(pre, g) for pre in prefixes for g in globs) or \
                (pat.startswith("**/") and any(fnmatch.fnmatchcase(seg, pat[3:]) for seg in parts)):
            result = not neg
    return result


def main() -> int:
    df = (ROOT / "Dockerfile").read_text()
    ins = instructions(df)
    args = {}
    for w, rest in ins:
        if w == "ARG" and "=" in rest:
            k, v = rest.split("=", 1)
            args.setdefault(k, v)
    froms = [i for i, (w, _) in enumerate(ins) if w == "FROM"]
    check(len(froms) >= 2, "multi-stage build")
    final = ins[froms[-1]:]
    image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)),
                   final[0][1].split()[0])
    check("distroless" in image or image == "scratch",
          f"final image has no shell (distroless or scratch): {image}")
    run_text = " ".join(r for w, r in ins if w == "RUN")
    check("--mount=type=cache" in run_text or "cargo chef cook" in run_text,
          "dependency caching (BuildKit cache mounts or cargo-chef)")
    check(re.search(r"cargo build[^&;]*--release", run_text) is not None and "--locked" in run_text,
          "locked release build")
    check("protoc" not in run_text and "protobuf-compiler" not in run_text, "no protoc installed")
    users = [r for w, r in final if w == "USER"]
    uid = users[-1].split(":")[0] if users else ""
    check(uid.isdigit() and int(uid) != 0, f"final stage USER is numeric and non-root: {uid!r}")
    labels = " ".join(r for w, r in final if w == "LABEL")
    missing = [k for k in REQUIRED_LABELS if f"org.opencontainers.image.{k}=" not in labels]
    check(not missing, f"OCI labels present (missing: {missing})")
    ep = [r for w, r in final if w == "ENTRYPOINT"]
    check(bool(ep) and ep[-1].startswith("["), "exec-form ENTRYPOINT")
    exposed = {int(p.split("/")[0]) for w, r in final if w == "EXPOSE" for p in r.split()}
    dep = next(d for d in yaml.safe_load_all((ROOT / "deploy/base/deployment.yaml").read_text())
               if d and d.get("kind") == "Deployment")
    ports = {p["containerPort"] for c in dep["spec"]["template"]["spec"]["containers"]
             for p in c.get("ports", [])}
    check(exposed == ports, f"EXPOSE {sorted(exposed)} equals the Deployment's ports {sorted(ports)}")

    di = ROOT / ".dockerignore"
    check(di.exists(), ".dockerignore exists")
    patterns = [ln.strip() for ln in di.read_text().splitlines()
                if ln.strip() and not ln.startswith("#")] if di.exists() else []
    check(ignored("target/release/reddog", patterns) and ignored(".git/HEAD", patterns),
          ".dockerignore drops target/ and .git/")
    needed = ["Cargo.toml", "Cargo.lock"]
    needed += [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*") if p.is_file()]
    for extra in ("build.rs",):
        if (ROOT / extra).exists():
            needed.append(extra)
    if (ROOT / "proto").exists():
        needed += [str(p.relative_to(ROOT)) for p in (ROOT / "proto").rglob("*") if p.is_file()]
    cargo = (ROOT / "Cargo.toml").read_text()
    needed += re.findall(r'^\s*path\s*=\s*"([^"]+)"', cargo, re.M)
    # Workspace members: cargo reads each member's manifest even to build one package.
    members = re.search(r'^members\s*=\s*\[([^\]]*)\]', cargo, re.M)
    for m in re.findall(r'"([^"]+)"', members.group(1)) if members else []:
        if m != ".":
            needed.append(f"{m}/Cargo.toml")
    for src in (ROOT / "src").rglob("*.rs"):
        for inc in re.findall(r'include_(?:str|bytes)!\(\s*"([^"]+)"', src.read_text()):
            p = (src.parent / inc).resolve()
            if p.is_relative_to(ROOT):
                needed.append(str(p.relative_to(ROOT)))
    build_rs = ROOT / "build.rs"
    if build_rs.exists():
        for inc in re.findall(r'"((?:proto|src)/[^"]+)"', build_rs.read_text()):
            needed.append(inc)
    dropped = sorted({n for n in needed if ignored(n, patterns)})
    check(not dropped, f".dockerignore keeps the {len(set(needed))} files the build needs"
          + (f" (drops {dropped[:5]})" if dropped else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
