# intake-relay's container image: the self-contained executable of `npm run package` (no Node.js,
# no npm, no shell in the image) on distroless glibc, run by tini as PID 1 as the numeric
# non-root user 10001. test/unit/dockerfile.test.ts checks these rules; test/integration/container.test.ts
# builds it with podman and runs it.
#   docker build --build-arg REVISION="$(git rev-parse HEAD)" -t intake-relay .
#   docker run -d -e INTAKE_KEY=... -p 1514:1514/udp -p 1514:1514 intake-relay
# The base images are build arguments, pinned by digest (update both with the release): build from
# a mirror or an internal registry with --build-arg BUILD_IMAGE=... --build-arg RUNTIME_IMAGE=...
# Behind a TLS-intercepting proxy, give its CA to the build as a secret (never left in the image):
#   docker build --secret id=build_ca,src=/path/to/proxy-ca.pem ...   (podman build: the same)
# Multi-arch without emulation: the build stage runs on the builder's own platform and packages
# the target's executable (scripts/package.ts fetches that architecture's Node.js binary):
#   docker buildx build --platform linux/amd64,linux/arm64 -t intake-relay .
# podman keeps the HEALTHCHECK in the image only with --format docker (OCI images have none).

ARG BUILD_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12@sha256:b7550f0b15838de14c564337eef2b804ba593ae55d81ca855421bd52f19bb480

FROM --platform=$BUILDPLATFORM ${BUILD_IMAGE} AS build
ARG TARGETARCH
ARG REVISION=unknown
WORKDIR /src
# tini for the target architecture, from Debian 12 (the package the tests' stand-in base has too);
# its static build needs no library. /skel/intake-relay is an empty directory, copied below as the
# state directory. gcc builds the native addon (native/, at npm ci: the UDP batched receive, the
# memory trim and the state locks), which the executable carries when the target is the builder's
# own architecture (otherwise it receives with dgram, does not trim, and locks with flock(1)).
RUN dpkg --add-architecture "$TARGETARCH" \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null \
 && cd /tmp && apt-get download "tini:$TARGETARCH" \
 && dpkg-deb -x /tmp/tini_*.deb /tini \
 && rm -rf /var/lib/apt/lists/* /tmp/tini_*.deb \
 && mkdir -p /skel/intake-relay
COPY package.json package-lock.json ./
COPY native ./native
# A CA given as the secret build_ca (a proxy that intercepts TLS) is trusted by npm for this step only.
RUN --mount=type=secret,id=build_ca \
    if [ -s /run/secrets/build_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build_ca npm_config_cafile=/run/secrets/build_ca; fi \
 && npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
# The revision reaches `intake-relay --version` (a build context has no .git) and the labels.
RUN --mount=type=secret,id=build_ca \
    if [ -s /run/secrets/build_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build_ca npm_config_cafile=/run/secrets/build_ca; fi \
 && arch="$(echo "$TARGETARCH" | sed 's/^amd64$/x64/')" \
 && INTAKE_RELAY_COMMIT="$REVISION" npm run package -- --arch "$arch" \
 && install -D -m 0755 "build/intake-relay-linux-$arch" /out/intake-relay

FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=""
LABEL org.opencontainers.image.title="intake-relay" \
      org.opencontainers.image.description="Log-forwarding daemon: syslog, HTTP and log files in, RFC 5424 over TLS (or HTTPS) to a security platform's intake, with bounded queues, retries and Prometheus metrics." \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /tini/usr/bin/tini-static /usr/bin/tini
COPY --from=build /out/intake-relay /usr/bin/intake-relay
COPY LICENSE /usr/share/doc/intake-relay/LICENSE
COPY --from=build /src/build/intake-relay-THIRD-PARTY-LICENSES.txt /usr/share/doc/intake-relay/THIRD-PARTY-LICENSES.txt
# The state directory belongs to the daemon's user (a named volume starts as a copy of it); the
# configuration stays root's, so the daemon cannot rewrite it.
COPY --from=build --chown=10001:10001 /skel/ /var/lib/
COPY config/intake-relay.yaml /etc/intake-relay/intake-relay.yaml
# `run` and `healthcheck` read /etc/intake-relay/intake-relay.yaml (mount yours there, or set
# INTAKE_RELAY_CONFIG), unless the official forwarder's /intakes.yaml is mounted and no
# configuration was given (INTAKE_RELAY_FORWARDER_LAYOUT=auto: its queues in /var/spool/rsyslog,
# its certificates in /certs), so that its compose file runs this image with only the image line
# changed.
# INTAKE_RELAY_EMULATOR=never: without INTAKE_KEY the shipped configuration exits 78 with one line
# (=no_intake_key forwards to a local emulator instead, to try the image out).
# In a container the inputs and /metrics listen on every address: -p and Kubernetes probes reach them.
ENV INTAKE_RELAY_FORWARDER_LAYOUT=auto \
    INTAKE_RELAY_USER=10001:10001 \
    INTAKE_RELAY_EMULATOR=never \
    LISTEN_ADDRESS=0.0.0.0 \
    METRICS_ADDRESS=0.0.0.0
# Started as root only to prepare (a host directory mounted for the state belongs to root; a TLS key
# made by root is root's): the daemon gives user 10001 its state directories, copies the TLS files
# that user cannot read into a private directory, and becomes 10001:10001 (INTAKE_RELAY_USER)
# before it opens anything. `--user 10001:10001` or Kubernetes' runAsUser start it as that user.
USER 0:0
# The state (disk queues, file checkpoints) outlives the container; the configuration is mounted
# (a file or a ConfigMap), not a volume of its own.
VOLUME ["/var/lib/intake-relay"]
# Syslog in (the shipped configuration's ports), and /metrics, /healthz, /readyz.
EXPOSE 1514/udp 1514/tcp 9750/tcp
# Ready means taking events (docs/guides/monitoring.md); the executable asks /readyz itself.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/bin/intake-relay", "healthcheck"]
# tini as PID 1 forwards SIGTERM to the daemon, which stops within the engines' default 10 s: a
# memory queue drains for shutdown_timeout_ms (8 s by default), a disk queue keeps what is not
# delivered (fsynced) and exits at once. -s keeps it quiet under `docker run --init`.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/usr/bin/intake-relay"]
CMD ["run"]
