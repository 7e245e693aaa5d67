#!/usr/bin/env python3
"""One `podman kube play` file per replica, from the rendered manifests
(scripts/ci.d/47-fleet-kube.sh).

    pods.py replicas RENDERED.yaml
        prints the Deployment's replica count.
    pods.py pod RENDERED.yaml SLOT GRPC HEALTH METRICS > pod-SLOT.yaml
        every rendered object unchanged, except the Deployment: named `<name>-<SLOT>`, one
        replica, and its container ports published on 127.0.0.1 at the given host ports.

Why: podman 4.3 makes N pods of `replicas: N` but publishes every containerPort on the host
even without a hostPort, so the second pod cannot bind its ports; and it has no Deployment
controller to replace pods one at a time. The step therefore plays one file per replica and
replaces them in turn, as the RollingUpdate strategy would (docs/OPERATIONS.md).
"""

import sys

import yaml


def deployment(docs):
    found = [d for d in docs if d.get("kind") == "Deployment"]
    if len(found) != 1:
        raise SystemExit("expected one Deployment in the rendered manifests, found %d" % len(found))
    return found[0]


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    dep = deployment(docs)
    if cmd == "replicas":
        print(dep["spec"].get("replicas", 1))
        return 0
    slot, host_ports = sys.argv[3], [int(p) for p in sys.argv[4:7]]
    dep["metadata"]["name"] = "%s-%s" % (dep["metadata"]["name"], slot)
    dep["spec"]["replicas"] = 1
    ports = dep["spec"]["template"]["spec"]["containers"][0]["ports"]
    by_name = {p["name"]: p for p in ports}
    for name, host_port in zip(("grpc", "health", "metrics"), host_ports):
        by_name[name].update(hostIP="127.0.0.1", hostPort=host_port)
    yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
