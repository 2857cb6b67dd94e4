#!/usr/bin/env bash
# Stops what services-up.sh started and removes its directory.
set -u
ROOT=${1:-${SVC_DIR:?pass the directory or set SVC_DIR}}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

# MariaDB: by the PID services-up.sh recorded; SIGKILL when it has not stopped after 10 s
mysql_pid=$(cat "$ROOT/mysql/pid" 2>/dev/null || true)
if [ -n "$mysql_pid" ] && kill -0 "$mysql_pid" 2>/dev/null; then
  kill "$mysql_pid" 2>/dev/null
fi

[ -d "$ROOT/pg/data" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$ROOT/pg/data" -m immediate -w stop >/dev/null 2>&1

if [ -n "$mysql_pid" ]; then
  for _ in $(seq 1 100); do kill -0 "$mysql_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$mysql_pid" 2>/dev/null && kill -9 "$mysql_pid" 2>/dev/null
fi
rm -rf "$ROOT"
