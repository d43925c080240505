#!/usr/bin/env bash
# Restore a backup made by scripts/backup.sh into an EMPTY database (spec: What to back up).
#   DATABASE_URL=postgres://…/empty_db scripts/restore.sh <file.dump>
# Stop the API first. The restore runs in one transaction: it lands whole or not at all. Start the API
# afterwards: it applies any newer migrations at start. Use the same APP_ENCRYPTION_KEY as the source,
# or every stored secret will have to be entered again.
set -euo pipefail

die() { echo "restore: $*" >&2; exit 1; }

[ $# -eq 1 ] || { echo "usage: DATABASE_URL=postgres://… scripts/restore.sh <file.dump>" >&2; exit 2; }
dump=$1
[ -n "${DATABASE_URL:-}" ] || die "DATABASE_URL is not set (the database to restore into)"
[ -f "$dump" ] || die "no such file: $dump"
[ "$(head -c 5 -- "$dump")" = "PGDMP" ] || die "$dump is not a pg_dump custom-format file"
command -v pg_restore >/dev/null || die "pg_restore is not installed (Debian: apt-get install postgresql-client)"
command -v psql >/dev/null || die "psql is not installed (Debian: apt-get install postgresql-client)"

tables=$(psql --dbname="$DATABASE_URL" --no-psqlrc --tuples-only --no-align --quiet --command \
  "select count(*) from pg_tables where schemaname not in ('pg_catalog', 'information_schema')") \
  || die "cannot connect to the target database"
if [ "$tables" != "0" ]; then
  die "the target database is not empty ($tables tables). Restore only into a new, empty database: createdb, then point DATABASE_URL at it."
fi

masked=$(printf '%s' "$DATABASE_URL" | sed -E 's#(://[^:/@]*):[^@]*@#\1:***@#')
echo "restore: restoring $dump into $masked (the API must be stopped)" >&2
pg_restore --no-owner --no-privileges --exit-on-error --single-transaction --dbname="$DATABASE_URL" "$dump" \
  || die "pg_restore failed; nothing was restored"
echo "restore: done. Start the API with the same APP_ENCRYPTION_KEY as the source; it applies newer migrations at start." >&2
