#!/bin/sh
# postgres.sh start|stop DIR: a PostgreSQL server of Debian's package for the
# DBOS agent (targets/dbos.yaml), its cluster in DIR/data, listening on a unix
# socket in DIR/sock only (no TCP port), trust authentication, superuser
# postgres. start creates the cluster when DIR/data does not exist, starts it,
# waits until it accepts connections and prints the socket directory (the
# PGHOST to export); stop stops it. As root it runs the server as the
# postgres user (PostgreSQL refuses to run as root), which must be able to
# reach DIR.
set -eu
cmd=${1:?usage: postgres.sh start|stop DIR}
dir=${2:?usage: postgres.sh start|stop DIR}
bin=$(dirname "$(command -v pg_ctl || ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)")
[ -x "$bin/pg_ctl" ] || { echo "postgres.sh: pg_ctl not found (make engines installs Debian's postgresql)" >&2; exit 1; }
as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case $cmd in
start)
  mkdir -p "$dir/sock"
  [ "$(id -u)" = 0 ] && chown postgres "$dir" "$dir/sock"
  if [ ! -d "$dir/data" ]; then
    as "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync --no-instructions >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  as "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-c listen_addresses='' -k $dir/sock -c fsync=off -c max_connections=200" start >/dev/null \
    || { cat "$dir/postgres.log" >&2; exit 1; }
  echo "$dir/sock"
  ;;
stop)
  as "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
  ;;
*)
  echo "postgres.sh: unknown command $cmd (start or stop)" >&2
  exit 2
  ;;
esac
