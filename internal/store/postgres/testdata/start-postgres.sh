#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for the shared store suite
# (internal/store/postgres) and prints, on stdout, the line to eval:
#
#   export FERRY_TEST_POSTGRES='postgres://postgres@127.0.0.1:PORT/ferry_test?sslmode=disable'
#
# Use it so that a failure stops the caller under `set -e`:
#
#   pg_env=$(bash internal/store/postgres/testdata/start-postgres.sh)
#   eval "$pg_env"
#
# It installs Debian's postgresql package when no server is found (as
# root: `apt-get update && apt-get install -y postgresql`), creates a
# cluster in a new temporary directory (trust auth, listening on 127.0.0.1
# only, on a free port, its socket in that directory), starts it as the
# postgres user when run as root (initdb refuses root) or as the current
# user otherwise, and creates the database ferry_test. The tests create
# and drop their own schemas in it. Progress goes to stderr, with the
# command that stops the cluster, which it also exports as
# FERRY_TEST_POSTGRES_STOP (.ci/run runs it on exit).
set -euo pipefail

log() { printf 'start-postgres: %s\n' "$*" >&2; }

find_bin() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
		printf '%s\n' "$d"
	fi
}

bin=$(find_bin)
if [ -z "$bin" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		log "no PostgreSQL server under /usr/lib/postgresql and not root: install the postgresql package"
		exit 1
	fi
	log "installing postgresql"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql >&2
	bin=$(find_bin)
	if [ -z "$bin" ]; then
		log "postgresql installed but no server binaries under /usr/lib/postgresql/*/bin"
		exit 1
	fi
fi
log "server binaries: $bin"

as_owner() { "$@"; }
run_as=
base=${TMPDIR:-/tmp}
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || { log "no postgres user (the package creates it)"; exit 1; }
	as_owner() { runuser -u postgres -- "$@"; }
	run_as="runuser -u postgres -- "
	base=/tmp # the postgres user must be able to reach it
fi

dir=$(mktemp -d "$base/ferry-pg.XXXXXX")
chmod 0700 "$dir"
[ -z "$run_as" ] || chown postgres "$dir"

as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 1; }

# A port nothing listens on; pg_ctl start fails if another process takes it
# in between, and then the next candidate is tried.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	port=$((20000 + RANDOM % 40000))
	port_free "$port" || continue
	if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >&2; then
		started=1
		break
	fi
done
if [ -z "$started" ]; then
	cat "$dir/server.log" >&2 || true
	log "could not start PostgreSQL"
	exit 1
fi

"$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres ferry_test >&2
log "running on 127.0.0.1:$port, data in $dir; stop with: ${run_as}$bin/pg_ctl -D $dir/data stop -m fast"
printf "export FERRY_TEST_POSTGRES='postgres://postgres@127.0.0.1:%s/ferry_test?sslmode=disable'\n" "$port"
# The command that stops this cluster, for the caller's exit trap.
printf "export FERRY_TEST_POSTGRES_STOP=%q\n" "${run_as}$bin/pg_ctl -D $dir/data stop -m fast"
