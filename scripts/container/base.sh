#!/usr/bin/env bash
# Builds a local runtime base image for the engine from Debian packages, for machines that
# cannot pull gcr.io/distroless/cc-debian13 (CI here). Like distroless/cc it holds glibc
# (libc6) and libgcc (libgcc-s1), /etc/passwd and /etc/group with `nonroot` = 65532 and a
# world-writable /tmp, and nothing else: no shell, no package manager.
#
#   scripts/container/base.sh     # prints the image name, localhost/reddog-ci-base:<hash of the versions>
#
# The packages are the host's own versions (`apt-get download`), so a binary built on the
# host runs on this base. The .debs are cached under .tools/container/debs; an existing image
# with the same tag is reused. Needs podman (and CONTAINERS_CONF from the caller, see
# scripts/ci.d/50-container.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=$PWD/.tools/container
PKGS=(libc6 libgcc-s1)

pins=()
for p in "${PKGS[@]}"; do pins+=("$p=$(dpkg-query -W -f='${Version}' "$p")"); done
key=$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-12)
tag="localhost/reddog-ci-base:$key"
if podman image exists "$tag"; then echo "$tag"; exit 0; fi

debs="$CACHE/debs/$key"
if ! ls "$debs"/*.deb >/dev/null 2>&1; then
  mkdir -p "$debs"
  chmod 0777 "$debs" # apt-get download drops privileges to _apt
  (cd "$debs" && apt-get download -qq "${pins[@]}" >&2)
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$root"; done
rm -rf "$root/usr/share/doc" "$root/usr/share/lintian" "$root/usr/lib/x86_64-linux-gnu/gconv"
mkdir -p "$root/etc" "$root/tmp" "$root/home/nonroot"
chmod 1777 "$root/tmp"
chown 65532:65532 "$root/home/nonroot"
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
  'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
  'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' > "$root/etc/group"
tar -C "$root" -c . | podman import --quiet \
  --change 'USER 65532:65532' --change 'WORKDIR /home/nonroot' \
  --message "Debian ${pins[*]}" - "$tag" >/dev/null
echo "$tag"
