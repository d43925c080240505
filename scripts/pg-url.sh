# Shared by scripts/backup.sh and scripts/restore.sh (sourced; the caller defines die()).

# Split DATABASE_URL the way libpq does (credentials end at the first "@" before any "/"):
# CONN_URL = the URL without its password, SHOWN_URL = the URL with the password as ***, and the
# percent-decoded password exported as PGPASSWORD (so it is on no command line and in no message).
split_url() {
  local url=$1 scheme rest head userinfo user pw
  [[ $url =~ ^postgres(ql)?:// ]] || die "DATABASE_URL must start with postgres:// or postgresql://"
  scheme=${url%%://*}://
  rest=${url#*://}
  head=${rest%%/*}
  CONN_URL=$url
  SHOWN_URL=$url
  if [[ $head == *@* ]]; then
    userinfo=${head%%@*}
    if [[ $userinfo == *:* ]]; then
      user=${userinfo%%:*}
      pw=${userinfo#*:}
      CONN_URL="$scheme$user@${rest#*@}"
      SHOWN_URL="$scheme$user:***@${rest#*@}"
      if [[ -n $pw ]]; then
        pw=${pw//\\/\\\\}
        printf -v PGPASSWORD '%b' "${pw//%/\\x}"
        export PGPASSWORD
      fi
    fi
  fi
  # A password given as a query parameter (?password=…) is masked in what is shown, too.
  SHOWN_URL=$(printf '%s' "$SHOWN_URL" | sed -E 's/([?&]password=)[^&]*/\1***/g')
}

# Print a file to stderr with every occurrence of the password replaced by ***.
show_masked() {
  local line
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -n ${PGPASSWORD:-} ]] && line=${line//"$PGPASSWORD"/***}
    printf '%s\n' "$line" >&2
  done <"$1"
}
