#!/usr/bin/env bash
# Back up svc's PostgreSQL database in pg_dump's compressed custom format (spec: What to back up).
#   DATABASE_URL=postgres://… scripts/backup.sh [output-file]
# Default output: ./svc-YYYYmmdd-HHMMSS.dump. The file is written under a temporary name and renamed
# when complete, so a half-written dump never looks like a backup. APP_ENCRYPTION_KEY is NOT in the
# dump: keep it separately (without it the stored secrets cannot be decrypted).
set -euo pipefail

die() { echo "backup: $*" >&2; exit 1; }

if [ -z "${DATABASE_URL:-}" ]; then
  die "DATABASE_URL is not set. For the embedded database (PGlite) stop the server and copy its data directory (PGLITE_DATA_DIR, default ./data/pglite) instead; see docs/operations.md."
fi
command -v pg_dump >/dev/null || die "pg_dump is not installed (Debian: apt-get install postgresql-client)"

out="${1:-svc-$(date -u +%Y%m%d-%H%M%S).dump}"
dir=$(dirname -- "$out")
[ -d "$dir" ] || die "no such directory: $dir"
tmp=$(mktemp "$dir/.svc-backup.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT

masked=$(printf '%s' "$DATABASE_URL" | sed -E 's#(://[^:/@]*):[^@]*@#\1:***@#')
echo "backup: dumping $masked" >&2
pg_dump --format=custom --compress=6 --no-owner --file="$tmp" --dbname="$DATABASE_URL" 2> >(sed -E 's#(://[^:/@]*):[^@]*@#\1:***@#g' >&2) \
  || die "pg_dump failed"
mv -- "$tmp" "$out"
trap - EXIT
size=$(wc -c < "$out" | tr -d ' ')
echo "$out ($size bytes)"
