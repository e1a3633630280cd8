# syntax=docker/dockerfile:1
# intake-relay: small, non-root, multi-arch (no architecture-specific step).
#   docker build -t intake-relay .
#   docker run -e INTAKE_KEY=... -e LISTEN_ADDRESS=0.0.0.0 -p 1514:1514/udp -p 1514:1514 intake-relay
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the image already has Node 24, the `node` dev dependency is not needed here.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev --ignore-scripts

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json README.md ./
COPY config ./config
# State (file input checkpoints) belongs to the unprivileged user; a named volume inherits this.
RUN mkdir -p /var/lib/intake-relay && chown node:node /var/lib/intake-relay
USER node
# /etc/intake-relay: your configuration (run -c /etc/intake-relay/intake-relay.yaml);
# /var/lib/intake-relay: state (file input checkpoints; the disk queue, when configured).
VOLUME ["/etc/intake-relay", "/var/lib/intake-relay"]
# Syslog in (the shipped config's ports), and /metrics, /healthz, /readyz.
EXPOSE 1514/udp 1514/tcp 9750/tcp
# Ready means: running, and no intake stalled (a backlog with no delivery for stall_timeout_ms).
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.METRICS_PORT||9750)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "--max-semi-space-size=4", "dist/main.js"]
CMD ["run", "-c", "/app/config/intake-relay.yaml"]
