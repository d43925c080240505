# svc API: one container serving the API, the background jobs and the admin pages.
#   docker build -t svc-api .      run it with compose.yaml; see docs/operations.md
#   podman build --format docker -t svc-api .    podman/buildah: --format docker, or the default OCI
#                                                format drops the HEALTHCHECK below
#   docker run: give it --stop-timeout 20, longer than SHUTDOWN_TIMEOUT_SECONDS (10) and closing the
#   database (the default 10 s SIGKILLs a stop that uses its whole timeout); compose.yaml does that
# Behind a TLS-inspecting proxy or a private npm mirror, hand npm its config or the proxy's CA as build
# secrets (mounted for `npm ci` only, never in a layer): --secret id=npmrc,src=$HOME/.npmrc and/or
# --secret id=npm_ca,src=/path/to/ca.pem. scripts/image-test.sh builds and runs this file for real.
# No image is published: an upgrade rebuilds from the checkout (a commit pins a version).

# --- build: install everything, bundle dist/, then pick the few packages the bundle loads --------
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The secrets are files under /run/secrets during this RUN only; without them npm uses its defaults.
RUN --mount=type=secret,id=npmrc --mount=type=secret,id=npm_ca \
  if [ -s /run/secrets/npmrc ]; then export NPM_CONFIG_USERCONFIG=/run/secrets/npmrc; fi; \
  if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
  npm ci --no-audit --no-fund
COPY . .
# The commit this image is built from, baked into the server (esbuild.config.mjs; X-Svc-Version's build).
ARG SVC_BUILD_COMMIT=unknown
# esbuild bundles the pure-JS dependencies; runtime/node_modules gets only what dist/ still loads by name
# (the database drivers, ws's optional add-on): scripts/runtime-deps.mjs.
RUN SVC_BUILD_COMMIT=$SVC_BUILD_COMMIT npm run build && node scripts/runtime-deps.mjs /app/runtime

# --- runtime: only what the server needs; code owned by root, read-only for the node user --------
FROM node:22-bookworm-slim
ENV NODE_ENV=production PORT=8080 PGLITE_DATA_DIR=/data/pglite AUDIT_ANCHOR_PATH=/data/audit-anchor.json
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/runtime/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/sql ./sql
# /data holds the embedded database (PGlite) when DATABASE_URL is unset; the node user owns it.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
# The server listens only after migrations and the seed succeeded, so a failed migration keeps the
# container unhealthy. /health does not query the database. Node itself probes: no curl in slim images.
# It probes the address the server listens on (HOST; loopback when that is every address).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "const h=process.env.HOST||'0.0.0.0',a=h==='0.0.0.0'||h==='::'?'127.0.0.1':h;fetch('http://'+(a.includes(':')?'['+a+']':a)+':'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "--enable-source-maps", "dist/server.mjs"]
