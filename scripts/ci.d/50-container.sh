#!/usr/bin/env bash
# A real container: builds the image with podman (runc) from the repository's Dockerfile and
# runs it the way the Deployment does — user 65532, read-only root filesystem, every
# capability dropped, no new privileges, key ring and table mounted read-only — then, from
# outside the container (published ports on 127.0.0.1):
#   - gRPC health SERVING for "" and "liveness";
#   - full rounds with the Python client (examples/python), every reveal checked by the
#     independent verifier, and the server's /metrics agreeing on the rounds started;
#   - the process really runs as 65532 with no capabilities on a read-only root;
#   - `podman stop` (SIGTERM) with calls in flight: health turns NOT_SERVING, the calls
#     complete OK, exit code 0, and the JSON log has the drain's lines.
#
# No base image can be pulled here, so the image is built with BINARY=prebuilt (the release
# binary built once on the host) on a local base from Debian packages
# (scripts/container/base.sh); production builds keep the distroless default. Installs podman
# and runc from Debian if missing; podman is configured through CONTAINERS_CONF (a file under
# .tools/), never /etc. Prints the time of each part; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
START=$(date +%s%N)
TOOLS=$ROOT/.tools
mkdir -p "$TOOLS/container"
now() { date +%s%N; }
lap() { local ms=$(( ($(now) - $2) / 1000000 )); printf '   (%s: %d.%01d s)\n' "$1" $((ms / 1000)) $((ms % 1000 / 100)); }

echo "-- tools"
t=$(now)
need_apt=()
command -v podman >/dev/null || need_apt+=(podman)
command -v runc >/dev/null || need_apt+=(runc)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
if ((${#need_apt[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
lap "apt: ${need_apt[*]:-nothing to install}" "$t"
# The two settings that make podman work on this kind of machine (docs/OPERATIONS.md).
export CONTAINERS_CONF=$TOOLS/container/containers.conf
printf '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\n' > "$CONTAINERS_CONF"
PODMAN=(podman --runtime runc)
source scripts/ci.d/tools/pip.sh && pip_tools "$TOOLS/venv" grpcio grpcio-tools grpcio-health-checking grpcio-status
PY=$TOOLS/venv/bin/python
echo "$(podman --version), runc $(runc --version | head -1 | cut -d' ' -f3)"

echo "-- release binary (shared with the soak step)"
t=$(now)
cargo build --release --locked --quiet --bin reddog
BIN=$ROOT/target/release/reddog
lap "cargo build --release" "$t"

echo "-- image"
t=$(now)
BASE=$(bash scripts/container/base.sh)
WORK=$(mktemp -d)
NAME=reddog-ci-$$
IMAGE=localhost/reddog:ci-$$
cleanup() {
  "${PODMAN[@]}" rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
  "${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir "$WORK/context"
cp "$BIN" "$WORK/context/reddog"
"${PODMAN[@]}" build --quiet -f Dockerfile \
  --build-arg BINARY=prebuilt --build-arg RUNTIME_IMAGE="$BASE" \
  --build-arg VERSION="$("$BIN" --version | awk '{print $2}')" \
  --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -t "$IMAGE" "$WORK/context" >/dev/null
echo "built $IMAGE on $BASE ($("${PODMAN[@]}" image inspect "$IMAGE" --format '{{.Size}}') bytes)"
user=$("${PODMAN[@]}" image inspect "$IMAGE" --format '{{.Config.User}}')
[ "$user" = "65532:65532" ] || { echo "FAIL image USER is $user"; exit 1; }
lap "base + podman build" "$t"

echo "-- run: --user 65532 --read-only --cap-drop ALL"
t=$(now)
# The engine refuses a ring others may read: owned by the container's user, 0400.
"$BIN" keygen --id ci --out "$WORK/key-ring.json"
chmod 0400 "$WORK/key-ring.json"
if [ "$(id -u)" = 0 ]; then chown 65532:65532 "$WORK/key-ring.json"
else "${PODMAN[@]}" unshare chown 65532:65532 "$WORK/key-ring.json"; fi
"${PODMAN[@]}" run -d --name "$NAME" \
  --user 65532:65532 --read-only --cap-drop ALL --security-opt no-new-privileges \
  --stop-timeout 30 \
  -p 127.0.0.1::50051 -p 127.0.0.1::9464 \
  -v "$WORK/key-ring.json:/etc/reddog/keys/key-ring.json:ro" \
  -v "$ROOT/deploy/base/table.json:/etc/reddog/table/table.json:ro" \
  -e REDDOG_KEY_RING_FILE=/etc/reddog/keys/key-ring.json \
  -e REDDOG_TABLE_CONFIG=/etc/reddog/table/table.json \
  -e REDDOG_DRAIN_TIMEOUT_SECS=20 \
  "$IMAGE" >/dev/null
port() { "${PODMAN[@]}" port "$NAME" "$1/tcp" | head -1 | sed 's/.*://'; }
GRPC=127.0.0.1:$(port 50051)
METRICS=127.0.0.1:$(port 9464)
echo "published: gRPC $GRPC, metrics $METRICS"
"$PY" scripts/container/probe.py health "$GRPC" --bound 30
lap "start to SERVING" "$t"

PASS=0; FAIL=0
check() { local what=$1; shift; if "$@"; then PASS=$((PASS + 1)); echo "  ok    $what"; else FAIL=$((FAIL + 1)); echo "  FAIL  $what"; fi; }

pid=$("${PODMAN[@]}" inspect "$NAME" --format '{{.State.Pid}}')
status=/proc/$pid/status
check "the engine runs as uid/gid 65532" \
  sh -c "grep -Eq '^Uid:\s+65532\s+65532\s+65532\s+65532' $status && grep -Eq '^Gid:\s+65532\s+65532\s+65532\s+65532' $status"
check "no capabilities (CapEff, CapPrm, CapBnd all 0)" \
  sh -c "grep -Eq '^CapEff:\s+0+$' $status && grep -Eq '^CapPrm:\s+0+$' $status && grep -Eq '^CapBnd:\s+0+$' $status"
check "no new privileges" grep -Eq '^NoNewPrivs:\s+1$' "$status"
check "root filesystem mounted read-only" \
  sh -c "awk '\$5 == \"/\" { print \$6 }' /proc/$pid/mountinfo | grep -q '^ro'"
check "the image has no shell" sh -c "! ${PODMAN[*]} exec $NAME /bin/sh -c true >/dev/null 2>&1"

echo "-- full rounds from outside (Python client, independent verifier)"
t=$(now)
ROUNDS=20
check "python client: $ROUNDS rounds settled and verified" \
  sh -c "'$PY' examples/python/reddog_client.py --target '$GRPC' --rounds $ROUNDS > '$WORK/client.log' 2>&1 || { tail -20 '$WORK/client.log'; exit 1; }"
tail -1 "$WORK/client.log"
started=$("$PY" - "$METRICS" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode()
print(int(sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith("reddog_rounds_started_total"))))
PY
)
# Every StartRound answer counts one start (docs/OPERATIONS.md). The client's summary says how
# many rounds it dealt: its rounds, plus the deals it needs until one asks for a decision it
# can refuse on purpose (examples/python/reddog_client.py), so the number varies run to run.
dealt=$(sed -n 's/^rounds [0-9]*, dealt \([0-9]*\),.*/\1/p' "$WORK/client.log")
check "/metrics: reddog_rounds_started_total = $started, the client dealt ${dealt:-?} rounds" \
  [ "${dealt:-none}" = "$started" ]
lap "rounds + metrics" "$t"

echo "-- podman stop (SIGTERM) with calls in flight"
t=$(now)
check "drain: NOT_SERVING, in-flight calls complete OK" \
  sh -c "'$PY' scripts/container/probe.py drain '$GRPC' --held 4 -- ${PODMAN[*]} stop -t 30 $NAME > '$WORK/drain.json' && cat '$WORK/drain.json'"
state=$("${PODMAN[@]}" inspect "$NAME" --format '{{.State.Status}} {{.State.ExitCode}}')
check "exited with code 0 after SIGTERM (state: $state)" [ "$state" = "exited 0" ]
"${PODMAN[@]}" logs "$NAME" > "$WORK/container.log" 2>&1
check "JSON log: SIGTERM received, shutting down, drained; stopped — in that order, no ERROR" \
  "$PY" - "$WORK/container.log" <<'PY'
import json, sys
msgs, levels = [], set()
for line in open(sys.argv[1], encoding="utf-8"):
    try:
        e = json.loads(line)
    except ValueError:
        continue  # the plain `listening on` lines on stdout
    msgs.append(e.get("fields", {}).get("message", ""))
    levels.add(e.get("level"))
want = ["SIGTERM received", "shutting down", "drained; stopped"]
at = [next((i for i, m in enumerate(msgs) if m.startswith(w)), -1) for w in want]
ok = -1 not in at and at == sorted(at) and "ERROR" not in levels
if not ok:
    print(msgs[-6:], levels)
sys.exit(0 if ok else 1)
PY
lap "drain" "$t"

lap "container checks, total" "$START"
echo "container: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
