# syntax=docker/dockerfile:1.7
# Red Dog engine image: a release build of the one binary `reddog` on a distroless base
# (glibc + CA certificates, no shell, no package manager), running as a numeric non-root
# user. Build with BuildKit (the default builder of current Docker):
#
#   docker build -t reddog:dev \
#     --build-arg VERSION=$(git describe --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#
# Dependencies are cached across builds by BuildKit cache mounts (the cargo registry and
# the target directory), so a source-only change recompiles only this crate. build.rs
# compiles the .proto files with protox (pure Rust): the builder needs no protoc.
#
# For reproducible production builds pin both images by digest (…@sha256:…).
#
# Build arguments choose the base images and where the binary comes from:
#   RUST_IMAGE     the builder (default rust:1.95-slim-trixie)
#   RUNTIME_IMAGE  the runtime base (default distroless cc-debian13:nonroot: glibc, libgcc,
#                  CA certificates, no shell)
#   BINARY         `build` (default: compile in the builder stage) or `prebuilt` (copy a
#                  `reddog` binary from the root of the build context; nothing is compiled)
#   VERSION        the version label and, with BINARY=build, the binary's version string
#                  (REDDOG_VERSION at build time); a prebuilt binary states the version it
#                  was built with (build it with REDDOG_VERSION=<the same VERSION>)
# Production uses the defaults. CI (scripts/ci.d/50-container.sh), where no base image can
# be pulled, builds the release binary once on the host and runs
#   podman build --build-arg BINARY=prebuilt --build-arg RUNTIME_IMAGE=<local base> \
#     -f Dockerfile <directory holding only reddog>
# on a base assembled from Debian's libc6 and libgcc-s1 packages (docs/OPERATIONS.md,
# "The image in CI"). The builder stage is then never run.

ARG RUST_IMAGE=rust:1.95-slim-trixie
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian13:nonroot
ARG BINARY=build

FROM ${RUST_IMAGE} AS build
WORKDIR /src
# jemalloc (the binary's allocator) is built with the C compiler the image has and `make`,
# which the slim image lacks. make's version is the one of the builder image's Debian
# release (pin the image by digest to fix it): it runs in this stage only and never reaches
# the runtime image, and a version string here would break the build at Debian's next point
# release.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
ENV CARGO_TERM_COLOR=never \
    CARGO_INCREMENTAL=0
# Manifests first, then the sources the crate needs (see .dockerignore: an allow-list).
# The workspace's other members (core/, the engine's core crate; demo/, the reference
# platform; tools/, the developer tools; bench/plain-tonic, the gRPC benchmark's baseline)
# must be present for cargo to read the workspace; only their manifests are needed to
# fetch, with empty stand-in targets.
COPY Cargo.toml Cargo.lock ./
COPY core/Cargo.toml core/Cargo.toml
COPY demo/Cargo.toml demo/Cargo.toml
COPY tools/Cargo.toml tools/Cargo.toml
COPY bench/plain-tonic/Cargo.toml bench/plain-tonic/Cargo.toml
RUN --mount=type=cache,id=reddog-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=reddog-cargo-git,target=/usr/local/cargo/git \
    mkdir -p core/src demo/src tools/src bench/plain-tonic/src \
    && touch core/src/lib.rs demo/src/main.rs tools/src/lib.rs bench/plain-tonic/src/main.rs \
    && cargo fetch --locked
COPY . .
# The commit and the version go into the binary (`--version`, GetRules, reddog_build_info):
# the context has no .git. The version label below and the binary's version are one string.
ARG REVISION=unknown
ARG VERSION=0.1.0
RUN --mount=type=cache,id=reddog-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=reddog-cargo-git,target=/usr/local/cargo/git \
    --mount=type=cache,id=reddog-target,target=/src/target \
    REDDOG_GIT_COMMIT="${REVISION}" REDDOG_VERSION="${VERSION}" cargo build --release --locked --bin reddog \
    && install -D -m 0755 target/release/reddog /out/reddog \
    && /out/reddog --version

# A binary built elsewhere (CI: `cargo build --release --locked` on the host), copied from
# the build context.
FROM scratch AS prebuilt
COPY reddog /out/reddog

# The stage the runtime takes the binary from: `build` or `prebuilt` (build argument BINARY).
FROM ${BINARY} AS binary

FROM ${RUNTIME_IMAGE} AS runtime
ARG RUNTIME_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="reddog" \
      org.opencontainers.image.description="Red Dog game engine: exact rules, provably fair deals, stateless gRPC service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="docs/OPERATIONS.md" \
      org.opencontainers.image.base.name="${RUNTIME_IMAGE}"
COPY --from=binary --chown=0:0 --chmod=0555 /out/reddog /usr/local/bin/reddog
# 65532 is distroless' "nonroot"; numeric, so Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
# gRPC (h2c), gRPC health alone for the probes, and Prometheus /metrics. The binary's
# defaults bind 127.0.0.1 (and no health-only port): in a container listen on all interfaces
# (the pod spec sets the same through REDDOG_LISTEN and friends).
ENV REDDOG_LISTEN=0.0.0.0:50051 \
    REDDOG_HEALTH_LISTEN=0.0.0.0:50052 \
    REDDOG_METRICS_LISTEN=0.0.0.0:9464 \
    REDDOG_LOG_FORMAT=json
EXPOSE 50051 50052 9464
# No HEALTHCHECK: the image is distroless (nothing to run it with) and Kubernetes ignores it;
# the pod uses native grpc probes on the grpc.health.v1 service instead.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/reddog"]
CMD ["serve"]
