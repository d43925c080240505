#!/usr/bin/env bash
# Restore a dump made by scripts/backup.sh into an EMPTY PostgreSQL database (docs/operations.md, Restore).
#
#   DATABASE_URL=postgres://user:pass@host:5432/new_db scripts/restore.sh <dump-file>
#
# - The API must be stopped while this runs (docker compose stop api): nothing else may write.
# - It refuses a database that already has tables, views or sequences, and then changes nothing.
# - pg_restore runs with --single-transaction: the restore lands whole or not at all.
#   --no-owner and --no-privileges: the objects belong to DATABASE_URL's user, whatever role owned them
#   at the source (the roles of the source server need not exist here).
# - Afterwards start the API on this database with the SAME APP_ENCRYPTION_KEY as the source; it
#   applies any migrations newer than the dump at start.
#
# Exit codes: 0 restored, 1 refused or failed (nothing restored), 2 usage.
set -euo pipefail

die() {
  printf 'restore: %s\n' "$*" >&2
  exit 1
}

# split_url and show_masked (the same for backup and restore).
# shellcheck source=pg-url.sh
source "$(dirname "${BASH_SOURCE[0]}")/pg-url.sh"

if [[ $# -ne 1 ]]; then
  echo "usage: DATABASE_URL=postgres://user:pass@host:5432/empty_db scripts/restore.sh <dump-file>" >&2
  exit 2
fi
dump=$1
[[ -n ${DATABASE_URL:-} ]] || die "DATABASE_URL is not set: set it to the new, empty PostgreSQL database to restore into (for the embedded PGlite database, stop the server and put the copied data directory back instead; see docs/operations.md)"
[[ -f $dump && -r $dump ]] || die "no such file (or not readable): $dump"
[[ $(head -c 5 -- "$dump") == PGDMP ]] || die "$dump is not a pg_dump custom-format file (make one with scripts/backup.sh)"
command -v pg_restore >/dev/null 2>&1 || die "pg_restore is not installed (Debian: apt-get install postgresql-client)"
command -v psql >/dev/null 2>&1 || die "psql is not installed (Debian: apt-get install postgresql-client)"

split_url "$DATABASE_URL"
errors=$(mktemp "${TMPDIR:-/tmp}/svc-restore-err.XXXXXX") || die "cannot create a temporary file"
trap 'rm -f -- "$errors"' EXIT
trap 'exit 130' INT TERM

# Empty = no table, view, materialized view, foreign table or sequence outside the system schemas.
# (A database the API ever started on has its migrations' tables, so this also catches a live one.)
check="select count(*) || ' ' || coalesce(string_agg(name, ', ' order by name) filter (where rn <= 5), '')
  from (select n.nspname || '.' || c.relname as name, row_number() over (order by n.nspname, c.relname) as rn
          from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')
           and n.nspname not in ('pg_catalog', 'information_schema')
           and n.nspname !~ '^pg_(toast|temp_|toast_temp_)') objects"
if ! found=$(psql --no-psqlrc --quiet --tuples-only --no-align --set=ON_ERROR_STOP=1 \
  --dbname="$CONN_URL" --command="$check" 2>"$errors"); then
  show_masked "$errors"
  die "cannot query the target database $SHOWN_URL; nothing was restored"
fi
count=${found%% *}
if [[ $count != 0 ]]; then
  die "the target database $SHOWN_URL is not empty: it has $count tables, views or sequences (${found#* }). Nothing was restored.
restore: Restore only into a new, empty database: create one (createdb <name>, or ALTER DATABASE … RENAME the old one and createdb),
restore: then point DATABASE_URL at it."
fi

printf 'restore: restoring %s into %s\n' "$dump" "$SHOWN_URL" >&2
printf 'restore: the API must be stopped until this is done (docker compose stop api).\n' >&2
if ! pg_restore --no-owner --no-privileges --exit-on-error --single-transaction \
  --dbname="$CONN_URL" -- "$dump" 2>"$errors"; then
  show_masked "$errors"
  die "pg_restore failed; the transaction was rolled back and nothing was restored"
fi
show_masked "$errors"

cat >&2 <<'MSG'
restore: done.
restore: Now start the API on this database with the SAME APP_ENCRYPTION_KEY as the source of the dump
restore: (with another key it starts, but every stored secret must be entered again and everyone signs in again).
restore: At start it applies any migrations newer than the dump, then the seed (edited prices and settings stay).
MSG
