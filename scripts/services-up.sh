#!/usr/bin/env bash
# Starts private test servers on their own ports under one directory and prints the
# environment to eval:   eval "$(scripts/services-up.sh)"
# Stop them with scripts/services-down.sh "$SVC_DIR".
set -euo pipefail
ROOT=${SVC_DIR:-$(mktemp -d /tmp/cortado-svc.XXXXXX)}
mkdir -p "$ROOT" && chmod 755 "$ROOT"

port_busy() { (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
# a random port in [base, base+1000) that nothing listens on yet
free_port() { local p; for _ in $(seq 1 50); do p=$(($1 + RANDOM % 1000)); port_busy "$p" || { echo "$p"; return 0; }; done; echo "no free port near $1" >&2; return 1; }
wait_port() { for _ in $(seq 1 200); do port_busy "$1" && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; return 1; }

PG_PORT=${PG_PORT:-$(free_port 15432)}
MYSQL_PORT=${MYSQL_PORT:-$(free_port 13306)}

# MariaDB (or MySQL's binaries under the same names): a throwaway data directory, small logs,
# no flushing; the test user comes from an init file the server runs before it listens.
# Initialised in the background while PostgreSQL starts.
MYSQLD=$(command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -1 || true)
INSTALL_DB=$(command -v mariadb-install-db || command -v mysql_install_db || true)
mysql_pid=
if [ -n "$MYSQLD" ] && [ -n "$INSTALL_DB" ]; then
  M="$ROOT/mysql"
  install -d -o mysql -g mysql "$M"
  (
    "$INSTALL_DB" --no-defaults --user=mysql --datadir="$M/data" --skip-test-db --auth-root-authentication-method=socket \
      --skip-name-resolve --innodb-log-file-size=8M --innodb-buffer-pool-size=32M >"$M/install.log" 2>&1 \
      || { echo "mariadb-install-db failed (see $M/install.log)" >&2; exit 1; }
    cat >"$M/init.sql" <<'SQL'
CREATE USER IF NOT EXISTS 'cortado'@'127.0.0.1' IDENTIFIED BY 'cortado';
GRANT ALL PRIVILEGES ON *.* TO 'cortado'@'127.0.0.1' WITH GRANT OPTION;
SQL
    chown mysql:mysql "$M/init.sql"
    # setsid without -f execs in place (a background job is no group leader): $! is the server
    setsid "$MYSQLD" --no-defaults --user=mysql --datadir="$M/data" --socket="$M/sock" --pid-file="$M/mariadbd.pid" \
      --port="$MYSQL_PORT" --bind-address=127.0.0.1 --skip-name-resolve --init-file="$M/init.sql" \
      --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=32M --innodb-log-file-size=8M --innodb-fast-shutdown=2 \
      --max-connections=300 --log-error="$M/error.log" </dev/null >/dev/null 2>&1 &
    pid=$!
    echo "$pid" >"$M/pid"
    # ready when its own socket exists and the port answers (not some other server on the port)
    for _ in $(seq 1 200); do
      kill -0 "$pid" 2>/dev/null || { echo "mariadbd exited:" >&2; tail -5 "$M/error.log" >&2; exit 1; }
      [ -S "$M/sock" ] && port_busy "$MYSQL_PORT" && exit 0
      sleep 0.05
    done
    echo "MariaDB did not open port $MYSQL_PORT" >&2; tail -5 "$M/error.log" >&2; exit 1
  ) &
  mysql_pid=$!
else
  echo "MariaDB server binaries not found (apt-get install mariadb-server): no private MariaDB, MySQL tests use 127.0.0.1:3306" >&2
fi

# PostgreSQL: a throwaway cluster (trust auth, no fsync)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$PGBIN" ]; then echo "PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; fi
install -d -o postgres -g postgres "$ROOT/pg"
runuser -u postgres -- "$PGBIN/initdb" -D "$ROOT/pg/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$ROOT/pg/data" -l "$ROOT/pg/log" -w -o \
  "-p $PG_PORT -k $ROOT/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" start >/dev/null
wait_port "$PG_PORT"

mysql_env=
if [ -n "$mysql_pid" ]; then
  wait "$mysql_pid"
  mysql_env="export MYSQL_URL=mysql://cortado:cortado@127.0.0.1:$MYSQL_PORT/"
fi

cat > "$ROOT/env" <<ENV
export SVC_DIR=$ROOT
export DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/postgres
$mysql_env
ENV
cat "$ROOT/env"
