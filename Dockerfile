# svc API: one container serving the API, the background jobs and the admin pages.
#   docker build -t svc-api .      run it with compose.yaml; see docs/operations.md
# No image is published: an upgrade rebuilds from the checkout (a commit pins a version).

# --- build: install everything, bundle dist/, then drop the dev dependencies ----------------------
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# --- runtime: only what the server needs; code owned by root, read-only for the node user --------
FROM node:22-bookworm-slim
ENV NODE_ENV=production PORT=8080 PGLITE_DATA_DIR=/data/pglite AUDIT_ANCHOR_PATH=/data/audit-anchor.json
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/sql ./sql
# /data holds the embedded database (PGlite) when DATABASE_URL is unset; the node user owns it.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
# The server listens only after migrations and the seed succeeded, so a failed migration keeps the
# container unhealthy. /health does not query the database. Node itself probes: no curl in slim images.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "--enable-source-maps", "dist/server.mjs"]
