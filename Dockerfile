# svc API: one container serving the API, the background jobs and the admin pages.
# Build:  docker build -t svc-api .        Run: see compose.yaml and docs/operations.md
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
ENV NODE_ENV=production PORT=8080 PGLITE_DATA_DIR=/data/pglite
WORKDIR /app
# pg_dump/pg_restore for scripts/backup.sh and restore.sh from inside the container.
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-client && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown node:node /data
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/sql ./sql
COPY --from=build --chown=node:node /app/scripts ./scripts
USER node
VOLUME ["/data"]
EXPOSE 8080
# /health answers only once migrations and the seed succeeded; node itself probes (no curl in slim).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "--enable-source-maps", "dist/server.mjs"]
