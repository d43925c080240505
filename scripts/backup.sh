#!/usr/bin/env bash
# Back up svc's PostgreSQL database in pg_dump's compressed custom format (docs/operations.md, Backup).
#
#   DATABASE_URL=postgres://user:pass@host:5432/db scripts/backup.sh [output-file | directory]
#
# Default output: ./svc-YYYYmmdd-HHMMSS.dump (UTC); a directory gets that name inside it. The dump is
# written under a temporary name in the same directory and renamed when complete, so a half-written
# file never looks like a backup. The file is created with mode 0600: it holds every account, token
# hash and (encrypted) secret. On success it prints "<path> (<size> bytes)" on stdout.
#
# The password is never printed and never put on pg_dump's command line (where `ps` shows it): it is
# taken out of the URL and handed over in PGPASSWORD. pg_dump must be of the server's major version or
# newer (compose: `docker compose run --rm tools /scripts/backup.sh`, which uses postgres:16's).
#
# APP_ENCRYPTION_KEY is NOT in the dump. Keep it separately: without it the stored secrets cannot be
# decrypted, and a dump without it reveals none of them.
set -euo pipefail

die() {
  printf 'backup: %s\n' "$*" >&2
  exit 1
}

# split_url and show_masked (the same for backup and restore).
# shellcheck source=pg-url.sh
source "$(dirname "${BASH_SOURCE[0]}")/pg-url.sh"

if [[ -z ${DATABASE_URL:-} ]]; then
  cat >&2 <<'MSG'
backup: DATABASE_URL is not set. Set it to the PostgreSQL database to back up:
backup:   DATABASE_URL=postgres://user:pass@host:5432/db scripts/backup.sh [output-file]
backup: Without DATABASE_URL svc uses its embedded database (PGlite), which pg_dump cannot read.
backup: To back that up, stop the server and copy its data directory (PGLITE_DATA_DIR, default
backup: ./data/pglite), e.g. cp -a data/pglite backups/pglite-YYYYmmdd; see docs/operations.md.
MSG
  exit 1
fi
command -v pg_dump >/dev/null 2>&1 || die "pg_dump is not installed (Debian: apt-get install postgresql-client)"
[[ $# -le 1 ]] || die "usage: DATABASE_URL=postgres://… scripts/backup.sh [output-file]"

split_url "$DATABASE_URL"

name="svc-$(date -u +%Y%m%d-%H%M%S).dump"
out=${1:-$name}
if [[ -d $out ]]; then
  out="${out%/}/$name"
fi
dir=$(dirname -- "$out")
[[ -d $dir ]] || die "no such directory: $dir"
[[ -w $dir ]] || die "cannot write to directory: $dir"

umask 077
tmp=$(mktemp "$dir/.svc-backup.XXXXXX") || die "cannot create a temporary file in $dir"
errors=$(mktemp "${TMPDIR:-/tmp}/svc-backup-err.XXXXXX") || die "cannot create a temporary file"
trap 'rm -f -- "$tmp" "$errors"' EXIT
trap 'exit 130' INT TERM

printf 'backup: dumping %s\n' "$SHOWN_URL" >&2
if ! pg_dump --format=custom --compress=6 --no-owner --file="$tmp" --dbname="$CONN_URL" 2>"$errors"; then
  show_masked "$errors"
  if grep -q 'version mismatch' "$errors"; then
    die "pg_dump failed: its version is older than the server's; use a pg_dump of the server's major version or newer"
  fi
  die "pg_dump failed; no backup was written"
fi
show_masked "$errors"
[[ -s $tmp && $(head -c 5 -- "$tmp") == PGDMP ]] || die "pg_dump produced no custom-format dump; no backup was written"

mv -f -- "$tmp" "$out"
size=$(wc -c <"$out")
printf '%s (%s bytes)\n' "$out" "${size//[[:space:]]/}"
