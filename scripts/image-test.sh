#!/bin/bash
# The container image, built from the Dockerfile and run for real with podman (docs/operations.md, "The
# image built and run with podman"). One line per assertion (`ok - …` / `not ok - …`), figures as `# …`
# lines, and a last line `N passed, N failed`; exit 1 if any failed.
#   usage: scripts/image-test.sh          (npm run test:image); IMAGE_TEST_COLD=1 builds without cache
# Needs podman (installed here when root on Debian), the npm registry (the build's npm ci) and the
# PostgreSQL server of the tests (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test),
# where it makes a database and drops it. Without podman and no way to install it, it says why and
# exits 0 ("1 skipped") — but fails under CI=true, where it must run. Containers, volumes and the
# database it made are removed on exit, failure included; the images are kept (the next build's cache).
set -uo pipefail
cd "$(dirname "$0")/.."
PASS=0 FAIL=0
ok() { echo "ok - $*"; PASS=$((PASS + 1)); }
notok() { echo "not ok - $*"; FAIL=$((FAIL + 1)); }
check() { local what=$1; shift; if "$@" >>"$WORK/checks.log" 2>&1; then ok "$what"; else notok "$what"; fi; }
figure() { echo "# $*"; }
now() { echo $(($(date +%s%N) / 1000000)); }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; exit $?; }

# --- podman: installed when missing and possible ------------------------------------------------------
if ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "# installing podman and debootstrap (apt-get)"
    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      podman runc debootstrap uidmap slirp4netns fuse-overlayfs containernetworking-plugins catatonit iptables) >/tmp/svc-image-apt.log 2>&1 ||
      { tail -n 20 /tmp/svc-image-apt.log; echo "not ok - podman could not be installed"; echo "0 passed, 1 failed"; exit 1; }
  else
    echo "# image test skipped: podman is not installed and cannot be here (not root, or no apt-get); install podman and debootstrap"
    if [ "${CI:-}" = true ]; then echo "0 passed, 1 failed"; exit 1; fi
    echo "0 passed, 0 failed, 1 skipped"; exit 0
  fi
fi

WORK=$(mktemp -d /var/tmp/svc-image-test.XXXXXX)
RUN_ID=$$
NAME=svc-image-test-$RUN_ID
IMAGE=localhost/svc-api:image-test
BASE=docker.io/library/node:22-bookworm-slim
PGURL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
DB=svc_image_test_$RUN_ID
DBURL="${PGURL%/*}/$DB"
: >"$WORK/checks.log"

# podman's settings for this machine, in files of our own (CONTAINERS_CONF replaces every containers.conf):
# runc where the cgroups are v1 or hybrid (crun wants cgroup v2), cgroupfs and a file event log without
# systemd, and explicit nofile/nproc limits no higher than this process's own: podman's default (1048576)
# cannot be set by a root without CAP_SYS_RESOURCE, and nproc never above pid_max (what conmon runs with).
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu); pidmax=$(cat /proc/sys/kernel/pid_max)
[ "$nofile" = unlimited ] && nofile=1048576
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pidmax" ]; } && nproc=$pidmax
runtime=crun
{ [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] || ! command -v crun >/dev/null; } && runtime=runc
manager=cgroupfs; [ -d /run/systemd/system ] && manager=systemd
cat >"$WORK/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "$runtime"
cgroup_manager = "$manager"
events_logger = "file"
EOF
export CONTAINERS_CONF=$WORK/containers.conf
pod() { podman "$@" 2>>"$WORK/podman.log"; }

cleanup() {
  for c in $(podman ps -aq --filter "label=svc-image-test=$RUN_ID" 2>/dev/null); do podman rm -f -t 0 "$c" >/dev/null 2>&1; done
  podman volume rm -f "$NAME-data" >/dev/null 2>&1
  podman image unmount "$IMAGE" >/dev/null 2>&1
  psql -q "$PGURL" -c "drop database if exists $DB with (force)" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the base image: the real one when a registry answers, else the stand-in (scripts/image-base.sh) ---
if ! pod image exists "$BASE" || [ "$(pod image inspect -f '{{index .Labels "svc.stand-in"}}' "$BASE")" = true ]; then
  if timeout 30 podman pull -q "$BASE" >>"$WORK/podman.log" 2>&1; then figure "base: $BASE pulled"
  elif pod image exists "$BASE"; then figure "base: no registry answers; the stand-in made before"
  else
    t=$(now)
    scripts/image-base.sh || { notok "the stand-in base image could not be made"; finish; }
    figure "base: no registry answers; stand-in made in $(secs $(($(now) - t))) s"
  fi
fi

# --- build, as docs/operations.md says: --format docker keeps the HEALTHCHECK ---------------------------
# Behind a TLS-inspecting proxy or a private mirror this machine's npm settings go in as build secrets.
secrets=()
cafile=$(npm config get cafile 2>/dev/null || true)
[ -f "$cafile" ] && secrets+=(--secret "id=npm_ca,src=$cafile")
userconfig=$(npm config get userconfig 2>/dev/null || true)
[ -f "$userconfig" ] && secrets+=(--secret "id=npmrc,src=$userconfig")
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
build() { podman build --format docker "${secrets[@]}" --build-arg "SVC_BUILD_COMMIT=$commit" -t "$IMAGE" "$@" . >"$WORK/build.log" 2>&1; }
nocache=(); [ "${IMAGE_TEST_COLD:-}" = 1 ] && nocache=(--no-cache)
t=$(now)
if build "${nocache[@]}"; then
  ok "podman build --format docker ($(grep -c 'Using cache' "$WORK/build.log") steps from cache)"
  figure "build: $(secs $(($(now) - t))) s$([ "${IMAGE_TEST_COLD:-}" = 1 ] && echo ' (cold: --no-cache)')"
else
  tail -n 30 "$WORK/build.log"; notok "podman build --format docker"; finish
fi
t=$(now); build && figure "build again, nothing changed: $(secs $(($(now) - t))) s"
check "the image keeps its HEALTHCHECK (docker format)" test -n "$(pod image inspect -f '{{json .Config.Healthcheck}}' "$IMAGE" | grep -F '/health')"

# --- what is in it ----------------------------------------------------------------------------------
base_size=$(pod image inspect -f '{{.Size}}' "$BASE"); size=$(pod image inspect -f '{{.Size}}' "$IMAGE")
mnt=$(pod image mount "$IMAGE")
nm_kb=$(du -sk "$mnt/app/node_modules" | cut -f1)
figure "image: $((size / 1000000)) MB, base $((base_size / 1000000)) MB (+$(((size - base_size) / 1000000)) MB); /app/node_modules $((nm_kb / 1000)) MB: $(cd "$mnt/app/node_modules" && echo @*/* [!@]* | tr ' ' ',')"
pod history --format '{{.Size}}	{{.CreatedBy}}' "$IMAGE" | awk -F'\t' '$1 != "0 B" { print "# layer: " $1 "\t" substr($2, 1, 90) }'
check "/app/node_modules is at most 35 MB ($((nm_kb / 1000)) MB)" test "$nm_kb" -le 35000
check "the image is at most the base + 60 MB" test "$size" -le $((base_size + 60000000))
check "only what the server loads: no zod, preact, @xterm, jose, @parcel/watcher, no empty scope" \
  sh -c "cd '$mnt/app/node_modules' && for p in zod preact @xterm jose itty-router @parcel @whatwg-node @bufbuild; do [ ! -e \$p ] || exit 1; done; for s in @*; do [ -n \"\$(ls -A \$s)\" ] || exit 1; done"
check "no build secret in the image (npmrc, CA bundle)" sh -c "[ ! -e '$mnt/run/secrets/npmrc' ] && [ ! -e '$mnt/run/secrets/npm_ca' ] && [ ! -e '$mnt/root/.npmrc' ]"
# esbuild.config.mjs bakes SVC_BUILD_COMMIT into the server (a build from before that change has no such line).
if grep -q SVC_BUILD_COMMIT esbuild.config.mjs; then
  check "the build commit is baked in (SVC_BUILD_COMMIT=$commit)" grep -qF "${commit:0:12}" "$mnt/app/dist/server.mjs" "$mnt"/app/dist/server-*.mjs
fi
pod image unmount "$IMAGE" >/dev/null

# --- helpers for the containers -------------------------------------------------------------------------
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
# Every container on the host's network (no port mapping needed; it reaches PostgreSQL on 127.0.0.1).
run() { pod run -d --label "svc-image-test=$RUN_ID" --network host "$@" >/dev/null; }
healthy() { # url, seconds → 0 once /health answers 200
  local until=$(($(date +%s) + $2))
  while [ "$(date +%s)" -lt "$until" ]; do curl -fsS -m 2 "$1/health" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
count() { pod logs "$1" 2>&1 | grep -c "$2"; }
# As the engine judges it: unhealthy only after the HEALTHCHECK's 3 retries (its 3 s timeout includes
# starting node, which a loaded machine can exceed once).
healthcheck() { local i; for i in 1 2 3; do pod healthcheck run "$1" && return 0; sleep 1; done; return 1; }
exit_code() { pod inspect -f '{{.State.ExitCode}}' "$1"; }
admin() { podman run --rm --label "svc-image-test=$RUN_ID" --network host -v "$NAME-data:/data" "$IMAGE" node dist/server.mjs admin create --email admin@example.test --name Admin >"$WORK/admin.out" 2>&1; }

# --- an extra CA for the server's own HTTPS calls (webhooks, the code host): a mounted file ------------
# Only where this machine's npm needs one (a TLS-inspecting proxy): the npm registry is the one HTTPS host
# reachable here, and without the proxy's CA the image's Node refuses it.
if [ -f "$cafile" ]; then
  registry=$(npm config get registry)
  probe="fetch('$registry').then(r=>process.exit(r.status<500?0:1),e=>{console.error(e.cause?.code??e);process.exit(1)})"
  check "NODE_EXTRA_CA_CERTS and a mounted CA file: the server's Node trusts the proxy ($registry)" \
    pod run --rm --label "svc-image-test=$RUN_ID" --network host -v "$cafile:/etc/svc/ca.pem:ro" -e NODE_EXTRA_CA_CERTS=/etc/svc/ca.pem "$IMAGE" node -e "$probe"
fi

# --- PGlite in /data, on a --read-only root --------------------------------------------------------------
P1=$(free_port); U1=http://127.0.0.1:$P1
t=$(now)
run --name "$NAME-pglite" --read-only -e PORT="$P1" -e HOST=127.0.0.1 -v "$NAME-data:/data" "$IMAGE"
if healthy "$U1" 120; then
  ok "PGlite: /health answers 200 on a --read-only root"; figure "run to healthy, PGlite (new /data): $(secs $(($(now) - t))) s"
else
  notok "PGlite: /health answers 200 on a --read-only root"; pod logs "$NAME-pglite" 2>&1 | tail -n 20
fi
check "healthcheck: healthy (PGlite)" healthcheck "$NAME-pglite"
check "the server runs as node (uid 1000), not root" test "$(pod exec "$NAME-pglite" id -u)" = 1000
key=$(pod exec "$NAME-pglite" sha256sum /data/encryption.key)
check "first start: one key generated and the template copied into /data" test "$(count "$NAME-pglite" 'generated an encryption key')$(count "$NAME-pglite" "copied from the build's template")" = 11
pod stop -t 30 "$NAME-pglite" >/dev/null
check "podman stop: exit status 0 (PGlite)" test "$(exit_code "$NAME-pglite")" = 0
pod start "$NAME-pglite" >/dev/null
check "stop/start: /health again" healthy "$U1" 120
check "stop/start: no second key, no second template copy, the same key file" \
  test "$(count "$NAME-pglite" 'generated an encryption key')$(count "$NAME-pglite" "copied from the build's template")$(pod exec "$NAME-pglite" sha256sum /data/encryption.key)" = "11$key"
pod stop -t 30 "$NAME-pglite" >/dev/null
run --name "$NAME-pglite2" -e PORT="$P1" -e HOST=127.0.0.1 -v "$NAME-data:/data" "$IMAGE"
check "a new container on the same volume: /health" healthy "$U1" 120
check "a new container on the same volume: no key generated, no template copy, the same key file" \
  test "$(count "$NAME-pglite2" 'generated an encryption key')$(count "$NAME-pglite2" "copied from the build's template")$(pod exec "$NAME-pglite2" sha256sum /data/encryption.key)" = "00$key"
check "/app is not writable by the server's user" sh -c "! podman exec '$NAME-pglite2' touch /app/x && ! podman exec '$NAME-pglite2' touch /app/dist/server.mjs"
pod stop -t 30 "$NAME-pglite2" >/dev/null # PGlite is one process: the CLI opens /data once the server is gone
if admin && grep -q 'set-password?token=' "$WORK/admin.out"; then ok "admin create (podman run --rm … admin create): a password link"; else notok "admin create: a password link"; cat "$WORK/admin.out"; fi
admin; rc=$?
if [ $rc -ne 0 ] && grep -qi 'exists' "$WORK/admin.out"; then ok "admin create again: says the user exists (exit $rc)"; else notok "admin create again: says the user exists (exit $rc)"; cat "$WORK/admin.out"; fi

# --- PostgreSQL: a database made for this run; HOST=::1, so the healthcheck must probe that address ----
psql -q "$PGURL" -c "create database $DB" >/dev/null || notok "create database $DB"
host=127.0.0.1; ip -6 addr show lo 2>/dev/null | grep -q '::1' && host=::1
P2=$(free_port); U2=http://$([ "$host" = ::1 ] && echo '[::1]' || echo 127.0.0.1):$P2
t=$(now)
# On the PGlite containers' /data: a new database meets the anchor file of the old one (docs/operations.md).
run --name "$NAME-pg" -e PORT="$P2" -e HOST="$host" -e DATABASE_URL="$DBURL" -e SHUTDOWN_TIMEOUT_SECONDS=10 -v "$NAME-data:/data" "$IMAGE"
if healthy "$U2" 120; then
  ok "PostgreSQL: /health answers 200"; figure "run to healthy, PostgreSQL (new database): $(secs $(($(now) - t))) s"
else
  notok "PostgreSQL: /health answers 200"; pod logs "$NAME-pg" 2>&1 | tail -n 20
fi
check "healthcheck: healthy (PostgreSQL, HOST=$host)" healthcheck "$NAME-pg"
check "migrations applied in $DB" test "$(psql -tA "$DBURL" -c 'select count(*) > 0 from schema_migrations')" = t
logged() { # container, pattern, count, seconds → 0 once the log has at least count lines matching
  local until=$(($(date +%s) + $4))
  while [ "$(date +%s)" -lt "$until" ]; do [ "$(count "$1" "$2")" -ge "$3" ] && return 0; sleep 0.5; done
  return 1
}
audit_error='ERROR.*audit'
check "a new database with the old /data: the audit check reports the anchor file's checkpoint missing" logged "$NAME-pg" "$audit_error" 1 60
errors=$(count "$NAME-pg" "$audit_error"); checkpoints=$(count "$NAME-pg" 'INFO audit checkpoint')
pod exec "$NAME-pg" mv /data/audit-anchor.json /data/audit-anchor.before-reset.json
pod stop -t 30 "$NAME-pg" >/dev/null && pod start "$NAME-pg" >/dev/null
reset_ok() { logged "$NAME-pg" 'INFO audit checkpoint' $((checkpoints + 1)) 60 && [ "$(count "$NAME-pg" "$audit_error")" = "$errors" ]; }
check "anchor file moved aside (the documented reset): a new checkpoint, no new audit error" reset_ok
check "the restarted container: /health" healthy "$U2" 120

# podman stop under steady requests: every request sent is answered, the process exits 0 in time.
node scripts/image-load.mjs "$U2" >"$WORK/load.out" 2>&1 &
load=$!
for _ in $(seq 150); do grep -q started "$WORK/load.out" && break; sleep 0.2; done
line=$(head -n 1 "$WORK/load.out")
t=$(now)
pod stop -t 30 "$NAME-pg" >/dev/null; stop_rc=$?
stop_ms=$(($(now) - t))
wait "$load"
stats=$(tail -n 1 "$WORK/load.out")
figure "stop under load: $(secs "$stop_ms") s; requests: $stats"
check "podman stop under load: exits 0 (stop $stop_rc, container $(exit_code "$NAME-pg"))" test "$line/$stop_rc/$(exit_code "$NAME-pg")" = started/0/0
check "podman stop under load: every request answered" node -e "const s=JSON.parse(process.argv[1]); process.exit(s.sent > 0 && s.lost === 0 && s.answered === s.sent ? 0 : 1)" "$stats"
check "podman stop under load: within SHUTDOWN_TIMEOUT_SECONDS (10 s) and before podman's SIGKILL" test "$stop_ms" -lt 12000
check "stopped by its own shutdown (log 'stopped'), not killed" sh -c "podman logs '$NAME-pg' 2>&1 | grep -q 'stopped\$'"

finish
