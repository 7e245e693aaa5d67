#!/usr/bin/env python3
"""Offline validation of the Kubernetes manifests under a deploy/ directory.

For every kustomization (deploy/base, deploy/overlays/*, deploy/monitoring):
  1. render it with `kubectl kustomize`;
  2. validate every rendered document with `kubernetes-validate --strict` for each stated
     Kubernetes version (a kind without a schema fails, except the CRDs listed in
     CRD_SCHEMAS, which are checked against the JSON schemas in scripts/deploy/schemas/);
  3. check the hardening policy (policy() below) on the rendered objects;
  4. check the manifests against the binary: every REDDOG_* variable and every --flag
     named in the pod spec is one `reddog serve --help` lists, the listen addresses use the
     container's ports, the probes use the numeric grpc port and health service names the
     running binary serves (scripts/deploy/health_names.py).

Prints one line per check and exits non-zero if any failed. Used by
scripts/ci.d/40-deploy.sh, on the real deploy/ and on deliberately broken copies.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import yaml

HERE = Path(__file__).resolve().parent
# Oldest Kubernetes minor we support (lifecycle.preStop.sleep is on by default from 1.30,
# matchLabelKeys from 1.27) and the newest the validator knows.
K8S_VERSIONS = ["1.31", "1.37"]
CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "PrometheusRule"): HERE / "schemas" / "prometheusrule.json",
    ("monitoring.coreos.com/v1", "PodMonitor"): HERE / "schemas" / "podmonitor.json",
}
GRPC_PORT_NAME = "grpc"
METRICS_PORT_NAME = "metrics"
HEALTH_PORT_NAME = "health"


class Checker:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def ok(self, cond: bool, what: str, detail: str = "") -> bool:
        if cond:
            self.passed += 1
            print(f"  ok    {what}")
        else:
            self.failed += 1
            print(f"  FAIL  {what}" + (f": {detail}" if detail else ""))
        return cond

    def skip(self, what: str, why: str) -> None:
        self.skipped += 1
        print(f"  skip  {what}: {why}")


def kustomizations(deploy: Path) -> list[Path]:
    return sorted(p.parent for p in deploy.rglob("kustomization.yaml"))


def render(kubectl: str, kdir: Path) -> tuple[bool, str]:
    r = subprocess.run([kubectl, "kustomize", str(kdir)], capture_output=True, text=True)
    return r.returncode == 0, (r.stdout if r.returncode == 0 else r.stderr.strip())


def schema_validate(c: Checker, validator: str, name: str, text: str, docs: list[dict]) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        for ver in K8S_VERSIONS:
            r = subprocess.run([validator, "--strict", "-k", ver, path],
                               capture_output=True, text=True)
            out = (r.stdout + r.stderr).strip().replace(path, f"<{name}>")
            lines = out.splitlines()
            bad = [ln for ln in lines if ln.startswith(("ERROR", "FAIL", "CRITICAL"))]
            missing = [ln for ln in lines if "Couldn't find schema" in ln]
            unknown = [ln for ln in missing
                       if not any(f"kind {k} with api version {a}" in ln for (a, k) in CRD_SCHEMAS)]
            passed = len([ln for ln in lines if " passed for resource " in ln])
            c.ok(r.returncode == 0 and not bad and not unknown,
                 f"{name}: kubernetes-validate --strict -k {ver} ({passed} resources)",
                 "; ".join(bad + unknown)[:400] or out[-600:])
    finally:
        os.unlink(path)
    for d in docs:
        key = (d.get("apiVersion"), d.get("kind"))
        if key in CRD_SCHEMAS:
            schema = json.loads(CRD_SCHEMAS[key].read_text())
            try:
                jsonschema.validate(d, schema)
                c.ok(True, f"{name}: {key[1]}/{d['metadata']['name']} against its CRD schema")
            except jsonschema.ValidationError as e:
                c.ok(False, f"{name}: {key[1]}/{d['metadata'].get('name')} against its CRD schema",
                     e.message)


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d and d.get("kind") == kind]


def port_of(addr: str) -> int | None:
    m = re.fullmatch(r"(?:\[[^\]]*\]|[^:]*):(\d+)", addr)
    return int(m.group(1)) if m else None


def policy(c: Checker, name: str, docs: list[dict]) -> dict | None:
    """The hardening policy (non-root, read-only root filesystem, no capabilities, probes,
    drain and disruption budgets as checked below), on one rendered kustomization."""
    deps = by_kind(docs, "Deployment")
    if not deps:
        return None
    c.ok(len(deps) == 1, f"{name}: one Deployment", f"{len(deps)}")
    dep = deps[0]
    spec = dep["spec"]
    pod = spec["template"]["spec"]
    # The HPA owns the replica count: a `replicas` in the manifests would reset it to that
    # number on every `kubectl apply` (a scale-down in the middle of a peak).
    hpa_owned = any(h["spec"]["scaleTargetRef"].get("kind") == "Deployment"
                    and h["spec"]["scaleTargetRef"].get("name") == dep["metadata"]["name"]
                    for h in by_kind(docs, "HorizontalPodAutoscaler"))
    c.ok(hpa_owned and "replicas" not in spec,
         f"{name}: no replicas in the Deployment, the HPA owns the count",
         f"replicas: {spec.get('replicas')!r}" if "replicas" in spec else "no HPA targets the Deployment")
    # `kubectl delete -k` of the app must not take the namespace or the key ring with it.
    kept = [f"{d['kind']}/{d['metadata']['name']}" for d in docs if d.get("kind") in ("Namespace", "Secret")]
    c.ok(not kept, f"{name}: renders no Namespace or Secret (kubectl delete -k keeps them)", ", ".join(kept))
    ru = spec.get("strategy", {}).get("rollingUpdate", {})
    c.ok(spec.get("strategy", {}).get("type") == "RollingUpdate" and ru.get("maxUnavailable") == 1,
         f"{name}: RollingUpdate with maxUnavailable 1", str(spec.get("strategy")))
    ctr = next((x for x in pod["containers"] if x["name"] == "reddog"), None)
    if not c.ok(ctr is not None, f"{name}: container 'reddog'"):
        return None
    if name.startswith("overlays/"):
        image = ctr.get("image", "")
        c.ok(":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest") or "@sha256:" in image,
             f"{name}: image pinned by tag or digest (not latest)", image)
    ports = {p.get("name"): p.get("containerPort") for p in ctr.get("ports", [])}
    c.ok(GRPC_PORT_NAME in ports and METRICS_PORT_NAME in ports,
         f"{name}: container ports named grpc and metrics", str(ports))
    grpc_port = ports.get(GRPC_PORT_NAME)
    # The probes' port: the health-only listener when the pod has one (RedDog clients cannot
    # fill it), else the gRPC port.
    health_port = ports.get(HEALTH_PORT_NAME, grpc_port)

    # Probes: native grpc, numeric port equal to the health port, different service names.
    probe_services = {}
    for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
        pr = ctr.get(kind)
        if kind == "startupProbe" and pr is None:
            continue
        g = (pr or {}).get("grpc")
        if not c.ok(g is not None, f"{name}: {kind} is a native grpc probe", str(pr)):
            continue
        c.ok(isinstance(g.get("port"), int) and g.get("port") == health_port,
             f"{name}: {kind} port is the numeric health port {health_port}", str(g.get("port")))
        probe_services[kind] = g.get("service", "")
    if "readinessProbe" in probe_services and "livenessProbe" in probe_services:
        c.ok(probe_services["readinessProbe"] != probe_services["livenessProbe"],
             f"{name}: liveness and readiness ask different health services",
             str(probe_services))

    rp = ctr.get("readinessProbe") or {}
    c.ok(rp.get("failureThreshold", 3) >= 2,
         f"{name}: readiness failureThreshold >= 2 (one slow probe does not pull the pod)",
         str(rp.get("failureThreshold")))

    env = {e["name"]: e for e in ctr.get("env", [])}
    # Security context: pod and container.
    psc = pod.get("securityContext", {})
    csc = ctr.get("securityContext", {})
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    c.ok(psc.get("runAsNonRoot") is True and csc.get("runAsNonRoot", True) is True,
         f"{name}: runAsNonRoot")
    c.ok(isinstance(uid, int) and uid > 0, f"{name}: numeric non-root runAsUser", str(uid))
    c.ok(csc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem")
    c.ok(csc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation false")
    c.ok(csc.get("capabilities", {}).get("drop") == ["ALL"] and not csc.get("capabilities", {}).get("add"),
         f"{name}: all capabilities dropped, none added")
    seccomp = csc.get("seccompProfile", psc.get("seccompProfile", {})).get("type")
    c.ok(seccomp == "RuntimeDefault", f"{name}: seccomp RuntimeDefault", str(seccomp))

    sa_name = pod.get("serviceAccountName")
    sas = [s for s in by_kind(docs, "ServiceAccount") if s["metadata"]["name"] == sa_name]
    c.ok(bool(sa_name) and sa_name != "default" and len(sas) == 1
         and sas[0].get("automountServiceAccountToken") is False
         and pod.get("automountServiceAccountToken") is False,
         f"{name}: dedicated ServiceAccount, no token automount", str(sa_name))

    tsc = pod.get("topologySpreadConstraints", [])
    keys = {t.get("topologyKey") for t in tsc}
    c.ok({"topology.kubernetes.io/zone", "kubernetes.io/hostname"} <= keys,
         f"{name}: topology spread across zones and nodes", str(keys))
    # Honor: nodes whose taints the pod does not tolerate are not counted as spread domains
    # (otherwise a tainted node "owed" a pod blocks scheduling with DoNotSchedule).
    c.ok(bool(tsc) and all(t.get("nodeTaintsPolicy") == "Honor" for t in tsc),
         f"{name}: topology spread honours node taints (nodeTaintsPolicy: Honor)",
         str([t.get("nodeTaintsPolicy") for t in tsc]))

    # Drain: grace period > preStop sleep + the server's drain bound.
    drain = env.get("REDDOG_DRAIN_TIMEOUT_SECS", {}).get("value")
    sleep = ctr.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    grace = pod.get("terminationGracePeriodSeconds", 30)
    c.ok(drain is not None and str(drain).isdigit() and grace > int(drain) + sleep,
         f"{name}: terminationGracePeriodSeconds {grace} > preStop {sleep} + drain {drain}")

    # During a drain the server accepts no new connections, so kubelet's liveness probes fail
    # (connection refused) until exit: they must not add up to a kill before the drain ends.
    lp = ctr.get("livenessProbe", {})
    lp_window = lp.get("periodSeconds", 10) * lp.get("failureThreshold", 3)
    c.ok(drain is not None and str(drain).isdigit() and lp_window > int(drain),
         f"{name}: liveness failure window {lp_window} s > drain {drain} s")

    res = ctr.get("resources", {})
    c.ok(all(k in res.get("requests", {}) for k in ("cpu", "memory"))
         and "memory" in res.get("limits", {}),
         f"{name}: cpu/memory requests and a memory limit", str(res))

    # The key ring: a Secret volume mounted read-only, its path in REDDOG_KEY_RING_FILE; no
    # inline key ring in the environment.
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["name"]: m for m in ctr.get("volumeMounts", [])}
    kr = env.get("REDDOG_KEY_RING_FILE", {}).get("value", "")
    secret_mounts = [m for n, m in mounts.items() if "secret" in vols.get(n, {})]
    c.ok(any(m.get("readOnly") is True and kr.startswith(m["mountPath"].rstrip("/") + "/")
             for m in secret_mounts),
         f"{name}: REDDOG_KEY_RING_FILE is in a read-only Secret mount", kr)
    c.ok("REDDOG_KEY_RING" not in env
         and not any("secretKeyRef" in e.get("valueFrom", {}) for e in env.values())
         and not ctr.get("envFrom"),
         f"{name}: no key material in environment variables")
    tc = env.get("REDDOG_TABLE_CONFIG", {}).get("value", "")
    cm_mounts = [m for n, m in mounts.items() if "configMap" in vols.get(n, {})]
    c.ok(any(tc.startswith(m["mountPath"].rstrip("/") + "/") for m in cm_mounts),
         f"{name}: REDDOG_TABLE_CONFIG is in a ConfigMap mount", tc)

    # Listen addresses use the container ports.
    c.ok(port_of(env.get("REDDOG_LISTEN", {}).get("value", "")) == grpc_port
         and env["REDDOG_LISTEN"]["value"].startswith("0.0.0.0:"),
         f"{name}: REDDOG_LISTEN is 0.0.0.0:<grpc port>")
    if HEALTH_PORT_NAME in ports:
        c.ok(port_of(env.get("REDDOG_HEALTH_LISTEN", {}).get("value", "")) == health_port
             and env["REDDOG_HEALTH_LISTEN"]["value"].startswith("0.0.0.0:"),
             f"{name}: REDDOG_HEALTH_LISTEN is 0.0.0.0:<health port>")
    metrics_port = ports.get(METRICS_PORT_NAME)
    c.ok(port_of(env.get("REDDOG_METRICS_LISTEN", {}).get("value", "")) == metrics_port,
         f"{name}: REDDOG_METRICS_LISTEN uses the metrics port")
    # One scrape mechanism: the PodMonitor (deploy/monitoring). Annotations as well would make
    # an annotation-based scrape config count every pod twice.
    ann = spec["template"]["metadata"].get("annotations", {})
    c.ok(not any(k.startswith("prometheus.io/") for k in ann),
         f"{name}: no prometheus.io/* scrape annotations (the PodMonitor is the one scrape)",
         ", ".join(k for k in ann if k.startswith("prometheus.io/")))

    labels = spec["selector"]["matchLabels"]

    def selects(sel: dict) -> bool:
        return bool(sel) and all(labels.get(k) == v for k, v in sel.items()) \
            and all(spec["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items())

    svcs = [s for s in by_kind(docs, "Service") if s["spec"].get("clusterIP") != "None"]
    c.ok(any(selects(s["spec"].get("selector", {}))
             and {p.get("name") for p in s["spec"]["ports"]} >= {"grpc", "metrics"}
             for s in svcs), f"{name}: Service with ports grpc and metrics selects the pods")
    hpas = by_kind(docs, "HorizontalPodAutoscaler")
    c.ok(any(h["apiVersion"] == "autoscaling/v2"
             and h["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
             and h["spec"].get("minReplicas", 1) >= 2 for h in hpas),
         f"{name}: HPA autoscaling/v2 on the Deployment, minReplicas >= 2")
    pdbs = by_kind(docs, "PodDisruptionBudget")
    c.ok(any(p["apiVersion"] == "policy/v1" and selects(p["spec"]["selector"].get("matchLabels", {}))
             for p in pdbs), f"{name}: PodDisruptionBudget policy/v1 selects the pods")
    nps = by_kind(docs, "NetworkPolicy")
    c.ok(any(set(n["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}
             and not n["spec"].get("ingress") and not n["spec"].get("egress") for n in nps),
         f"{name}: a default-deny NetworkPolicy (ingress and egress)")
    allowed_in = sorted({p.get("port") for n in nps for r in n["spec"].get("ingress", [])
                         for p in r.get("ports", [])}, key=str)
    c.ok(allowed_in == sorted({grpc_port, metrics_port}, key=str),
         f"{name}: NetworkPolicy lets in only the grpc and metrics ports", str(allowed_in))
    egress_ports = sorted({p.get("port") for n in nps for r in n["spec"].get("egress", [])
                           for p in r.get("ports", [])}, key=lambda x: (str(type(x)), x))
    c.ok(all(r.get("ports") for n in nps for r in n["spec"].get("egress", [])) and egress_ports == [53, 4317],
         f"{name}: NetworkPolicy egress only DNS and OTLP", str(egress_ports))
    # OTLP egress reaches collectors however they are run: the Helm chart labels its pods
    # app.kubernetes.io/name=opentelemetry-collector; the OpenTelemetry Operator labels the
    # collectors it runs app.kubernetes.io/component=opentelemetry-collector (their name
    # label is "<name>-collector").
    otlp_peers = [p.get("podSelector", {}).get("matchLabels", {}) for n in nps
                  for r in n["spec"].get("egress", []) if any(x.get("port") == 4317 for x in r.get("ports", []))
                  for p in r.get("to", [])]
    for label, how in (({"app.kubernetes.io/component": "opentelemetry-collector"}, "OpenTelemetry Operator"),
                       ({"app.kubernetes.io/name": "opentelemetry-collector"}, "Helm chart")):
        c.ok(any(peer and all(label.get(k) == v for k, v in peer.items()) for peer in otlp_peers),
             f"{name}: OTLP egress matches collectors run by the {how} ({label})", str(otlp_peers))
    sandbox_checks(c, name, ctr, env, docs)
    return {"container": ctr, "env": env, "probe_services": probe_services,
            "grpc_port": grpc_port, "metrics_port": metrics_port}


def sandbox_checks(c: Checker, name: str, ctr: dict, env: dict, docs: list[dict]) -> None:
    """Sandbox tables (requested deals, never fair rounds) stay out of every deployment:
    no `--allow-sandbox` in the container's command or arguments, and no table marked
    `"sandbox": true` in a rendered ConfigMap."""
    words = [str(w) for w in list(ctr.get("command", [])) + list(ctr.get("args", []))]
    words += [str(e.get("value", "")) for e in env.values()]
    c.ok(not any(w.split("=", 1)[0] == "--allow-sandbox" for w in words),
         f"{name}: no --allow-sandbox (sandbox tables never in this deployment)",
         " ".join(w for w in words if "allow-sandbox" in w))
    marked = []
    for cm in by_kind(docs, "ConfigMap"):
        for key, text in (cm.get("data") or {}).items():
            try:
                config = json.loads(text)
            except ValueError:
                continue
            tables = config.get("tables", {"default": config}) if isinstance(config, dict) else {}
            if not isinstance(tables, dict):  # certified-rules.json: a list of pinned digests, not tables
                continue
            marked += [f"{cm['metadata']['name']}/{key}: {tid}" for tid, t in tables.items()
                       if isinstance(t, dict) and t.get("sandbox") is True]
    c.ok(not marked, f"{name}: no table marked \"sandbox\": true in a ConfigMap", ", ".join(marked))


def serve_help(binary: str) -> str | None:
    r = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def against_binary(c: Checker, name: str, info: dict, binary: str | None,
                   health: dict | None) -> None:
    if not binary:
        c.skip(f"{name}: flags and env vars against `reddog serve --help`", "no binary given")
        return
    text = serve_help(binary)
    if text is None or "--listen" not in text:
        c.skip(f"{name}: flags and env vars against `reddog serve --help`",
               "`reddog serve` has no options yet (the service is not built)")
        return
    flags = set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", text))
    envs = set(re.findall(r"\[env: ([A-Z0-9_]+)[=\]]", text))
    ctr = info["container"]
    for e in sorted(info["env"]):
        if e.startswith("REDDOG_"):
            c.ok(e in envs, f"{name}: env {e} is accepted by `reddog serve`",
                 f"help lists {sorted(envs)}")
    words = list(ctr.get("command", [])[1:]) + list(ctr.get("args", []))
    for w in words:
        if w.startswith("--"):
            flag = w.split("=", 1)[0]
            c.ok(flag in flags, f"{name}: flag {flag} is accepted by `reddog serve`")
        elif w != "serve" and not words[words.index(w) - 1].startswith("--"):
            c.ok(False, f"{name}: argument {w!r} is a known subcommand or flag value")
    if health is None:
        c.skip(f"{name}: probe health services", "no running binary to ask")
        return
    for kind, svc in sorted(info["probe_services"].items()):
        st = health.get(svc)
        c.ok(st == "SERVING", f"{name}: {kind} service {svc!r} is SERVING on a running binary",
             f"the binary answers SERVING for {sorted(k for k, v in health.items() if v == 'SERVING')}"
             + (f", {st} for {svc!r}" if st else ""))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deploy-dir", default="deploy")
    ap.add_argument("--kubectl", required=True)
    ap.add_argument("--validator", required=True, help="the kubernetes-validate executable")
    ap.add_argument("--binary", help="a built reddog binary, for the consistency checks")
    ap.add_argument("--health-json", help="health statuses from health_names.py, as a JSON file")
    ap.add_argument("--out", help="directory to write the rendered manifests to")
    a = ap.parse_args()
    deploy = Path(a.deploy_dir)
    health = json.loads(Path(a.health_json).read_text()) if a.health_json else None
    c = Checker()
    kdirs = kustomizations(deploy)
    c.ok(bool(kdirs), f"kustomizations under {deploy}", "none found")
    for kdir in kdirs:
        name = str(kdir.relative_to(deploy))
        print(f"-- {name}")
        ok, text = render(a.kubectl, kdir)
        if not c.ok(ok, f"{name}: kubectl kustomize renders", text[-800:]):
            continue
        if a.out:
            out = Path(a.out) / (name.replace("/", "_") + ".yaml")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text)
        try:
            docs = [d for d in yaml.safe_load_all(text) if d]
        except yaml.YAMLError as e:
            c.ok(False, f"{name}: rendered YAML parses", str(e))
            continue
        schema_validate(c, a.validator, name, text, docs)
        info = policy(c, name, docs)
        if info:
            against_binary(c, name, info, a.binary, health)
    print(f"validate: {c.passed} passed, {c.failed} failed, {c.skipped} skipped")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
