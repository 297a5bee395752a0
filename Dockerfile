# syntax=docker/dockerfile:1
# The `convoy` image: the release binary, the scenarios, probe catalogues and
# tracks that ship, on Debian 12 (bookworm), run as a non-root user.
#
#   docker build -t convoy .
#   docker run --rm convoy --version
#   docker run --rm --ulimit nofile=65536:65536 --user "$(id -u):$(id -g)" \
#     -v "$PWD/results:/opt/convoy/results" convoy run scenarios/smoke.yaml
#
# How it is used for runs split over machines: docs/distributed.md and
# deploy/kubernetes/README.md.

ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---- build: the Swift toolchain and the C libraries' headers --------------
FROM ${SWIFT_IMAGE} AS build

# What the system-library targets link (Package.swift: CSodium, CCurl, CGPS,
# found through pkg-config), SQLite (GRDB links the system's libsqlite3) and
# libxml2's headers for FoundationXML. Versions
# are bookworm's, with its security updates, rather than pinned.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsodium-dev libcurl4-openssl-dev libgps-dev libsqlite3-dev pkg-config libxml2-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# The manifest first, so the dependencies' checkouts are a layer of their own.
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift package resolve

# --static-swift-stdlib links the Swift runtime and Foundation into the binary,
# so the runtime image needs no toolchain, only the C libraries. SwiftPM puts
# the targets' resources (the battery profiles, the PostgreSQL schema) in
# *.resources folders beside the binary, where Bundle.module looks for them:
# they are copied with it.
RUN swift build -c release --product convoy --static-swift-stdlib \
 && bin="$(swift build -c release --show-bin-path)" \
 && mkdir -p /out/bin \
 && cp "$bin/convoy" /out/bin/ \
 && cp -R "$bin"/*.resources /out/bin/

# ---- runtime ---------------------------------------------------------------
FROM ${RUNTIME_IMAGE}

# Run-time halves of what the builder linked (the binary's NEEDED entries,
# `readelf -d`): libsodium, libcurl (the HTTP engine), libgps (bookworm's
# libgps-dev 3.22 depends on libgps28), libsqlite3 (GRDB: convoy serve's and
# the embedded backend's store), libxml2 (FoundationXML, the GPX reader);
# libstdc++6, libgcc-s1 and libc6 are in the base image. CA certificates for
# TLS to a real project; tzdata for time zones. Not pinned, as above.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsodium23 libcurl4 libgps28 libsqlite3-0 libxml2 ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/*

# A fixed numeric id, so Kubernetes' runAsNonRoot can check it.
RUN groupadd --system --gid 10001 convoy \
 && useradd --system --uid 10001 --gid convoy --home-dir /home/convoy --create-home \
      --shell /usr/sbin/nologin convoy

# The scenarios refer to catalogues and tracks by relative paths
# (../probes/greenbox.yaml, ../gpx/*.gpx), so the three folders stay siblings
# under /opt/convoy; a scenario mounted at /opt/convoy/<dir>/ finds them too.
COPY --from=build /out/bin /opt/convoy/bin
COPY scenarios /opt/convoy/scenarios
COPY probes /opt/convoy/probes
COPY gpx /opt/convoy/gpx
RUN install -d -o convoy -g convoy /opt/convoy/results

ENV PATH=/opt/convoy/bin:$PATH
WORKDIR /opt/convoy
USER 10001:10001
# convoy serve's default port (docs/server.md), for `convoy serve --host 0.0.0.0`.
EXPOSE 3010
ENTRYPOINT ["convoy"]
CMD ["--help"]
