#!/usr/bin/env bash
# Start a throw-away PostgreSQL server for the `postgres` tests and the cache benchmark.
# Idempotent and non-interactive; run as root. Installs Debian's postgresql when its binaries are
# missing, keeps the cluster in $CACHEEVAL_PG_DIR (default /tmp/cacheeval-pg, outside the project),
# listens on 127.0.0.1:$CACHEEVAL_PG_PORT (default 55432) as the postgres user, creates the
# database cacheeval_test, and prints the line to eval:
#   eval "$(bash .ci/postgres.sh)"   # sets CACHEEVAL_TEST_PG_URL
# Progress goes to stderr so that stdout is only the export line.
set -euo pipefail

PGDIR="${CACHEEVAL_PG_DIR:-/tmp/cacheeval-pg}"
PORT="${CACHEEVAL_PG_PORT:-55432}"
DB=cacheeval_test
URL="postgresql://postgres@127.0.0.1:${PORT}/${DB}"
log() { echo "postgres.sh: $*" >&2; }

find_bin() {
  local dir
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return 0; fi
  done
  return 1
}

BIN="$(find_bin || true)"
if [ -z "$BIN" ]; then
  log "installing postgresql (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  BIN="$(find_bin)"
fi
id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres

as_pg() { runuser -u postgres -- "$@"; }

if as_pg "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
  log "already running on 127.0.0.1:$PORT"
else
  mkdir -p "$PGDIR"
  chown postgres: "$PGDIR"
  chmod 700 "$PGDIR"
  if [ ! -s "$PGDIR/data/PG_VERSION" ]; then
    log "initdb in $PGDIR/data"
    as_pg "$BIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >&2 \
      || as_pg "$BIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust --encoding=UTF8 --locale=C >&2
  fi
  # a stale pid file from a killed server would stop pg_ctl start
  if [ -f "$PGDIR/data/postmaster.pid" ] && ! kill -0 "$(head -1 "$PGDIR/data/postmaster.pid")" 2>/dev/null; then
    rm -f "$PGDIR/data/postmaster.pid"
  fi
  log "starting on 127.0.0.1:$PORT"
  as_pg "$BIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $PGDIR" start >&2
fi

if ! as_pg "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
  as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DB" >&2 || true  # a concurrent call may win
fi
echo "export CACHEEVAL_TEST_PG_URL=$URL"
