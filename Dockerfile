# syntax=docker/dockerfile:1
# intake-relay's container image: the self-contained executable of `npm run package` (no Node.js,
# no npm, no shell in the image) on distroless glibc, run by tini as PID 1 as the numeric
# non-root user 10001. test/unit/dockerfile.test.ts checks these rules; test/integration/image.test.ts
# runs this layout without a container engine.
#   docker build --build-arg REVISION="$(git rev-parse HEAD)" -t intake-relay .
#   docker run -d --stop-timeout 45 -e INTAKE_KEY=... -p 1514:1514/udp -p 1514:1514 intake-relay
# Multi-arch without emulation: the build stage runs on the builder's own platform and packages
# the target's executable (scripts/package.ts fetches that architecture's Node.js binary):
#   docker buildx build --platform linux/amd64,linux/arm64 -t intake-relay .

FROM --platform=$BUILDPLATFORM node:24-bookworm-slim AS build
ARG TARGETARCH
WORKDIR /src
# tini for the target architecture, from Debian 12 (the package the smoke test uses); its static
# build needs no library. /skel/intake-relay is an empty directory, copied below as the volumes.
# gcc builds the native addon (native/, at npm ci: the UDP batched receive and the memory trim),
# which the executable carries when the target is the builder's own architecture (otherwise it
# receives with dgram and does not trim).
RUN dpkg --add-architecture "$TARGETARCH" \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null \
 && cd /tmp && apt-get download "tini:$TARGETARCH" \
 && dpkg-deb -x /tmp/tini_*.deb /tini \
 && rm -rf /var/lib/apt/lists/* /tmp/tini_*.deb \
 && mkdir -p /skel/intake-relay
COPY package.json package-lock.json ./
COPY native ./native
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN arch="$(echo "$TARGETARCH" | sed 's/^amd64$/x64/')" \
 && npm run package -- --arch "$arch" \
 && install -D -m 0755 "build/intake-relay-linux-$arch" /out/intake-relay

FROM gcr.io/distroless/cc-debian12
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
# The two volumes belong to the daemon's user (a named volume starts as a copy of them); the
# shipped configuration stays root's, so the daemon cannot rewrite it.
COPY --from=build --chown=10001:10001 /skel/ /etc/
COPY --from=build --chown=10001:10001 /skel/ /var/lib/
COPY config/intake-relay.yaml /etc/intake-relay/intake-relay.yaml
# INTAKE_RELAY_CONFIG: `run` and `healthcheck` read the same file (mount yours there, or set this).
# INTAKE_RELAY_EMULATOR=never: without INTAKE_KEY the shipped configuration exits 78 with one line
# (=no_intake_key forwards to a local emulator instead, to try the image out).
# In a container the inputs and /metrics listen on every address: -p and Kubernetes probes reach them.
ENV INTAKE_RELAY_CONFIG=/etc/intake-relay/intake-relay.yaml \
    INTAKE_RELAY_EMULATOR=never \
    LISTEN_ADDRESS=0.0.0.0 \
    METRICS_ADDRESS=0.0.0.0
USER 10001:10001
VOLUME ["/etc/intake-relay", "/var/lib/intake-relay"]
# Syslog in (the shipped configuration's ports), and /metrics, /healthz, /readyz.
EXPOSE 1514/udp 1514/tcp 9750/tcp
# Ready means taking events (README, "Metrics and health"); the executable asks /readyz itself.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/bin/intake-relay", "healthcheck"]
# tini as PID 1 forwards SIGTERM to the daemon, which drains its queues (shutdown_timeout_ms,
# 30 s: give `docker stop -t 45` / terminationGracePeriodSeconds: 45), and reaps. -s keeps it
# quiet under `docker run --init`, where it is not PID 1.
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/usr/bin/intake-relay"]
CMD ["run"]
