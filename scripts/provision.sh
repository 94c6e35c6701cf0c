#!/usr/bin/env bash
# Make sure the database servers the test suite starts privately are on this machine:
# PostgreSQL (initdb, pg_ctl) and MariaDB (mariadb-install-db, mariadbd).
# Missing ones are installed with apt-get when this runs as root on a machine that has it;
# otherwise ONE line on stderr says exactly what to run, and the exit status is 3.
# Usage: scripts/provision.sh   (scripts/test.sh runs it before the tests)
#
# Where the binaries are looked for is where tests/support/pg_server.py and tests/support/mysql_server.py
# look: $PG_BIN, /usr/lib/postgresql/*/bin, then PATH; $MARIADB_BIN, PATH, /usr/sbin, /usr/bin.
# SERDE_KIT_SYSROOT (default: empty, i.e. /) prefixes those system directories, so a test can
# act out a fresh machine by pointing it at an empty directory (tests/test_fresh_machine.py).
set -euo pipefail
sysroot="${SERDE_KIT_SYSROOT:-}"

# In a directory of $1 (a space-separated list) holding every name in the rest.
has_all() {
    local dirs="$1" dir name found
    shift
    for name in "$@"; do
        found=""
        for dir in $dirs; do
            if [ -x "$dir/$name" ]; then found=1; break; fi
        done
        [ -n "$found" ] || return 1
    done
}

path_dirs() { local IFS=:; echo ${PATH:-}; }

have_postgres() {
    if [ -n "${PG_BIN:-}" ]; then
        has_all "$PG_BIN" initdb pg_ctl
        return
    fi
    local dir
    for dir in "$sysroot"/usr/lib/postgresql/*/bin; do
        if has_all "$dir" initdb pg_ctl; then return 0; fi
    done
    has_all "$(path_dirs)" initdb pg_ctl
}

have_mariadb() {
    has_all "${MARIADB_BIN:-} $(path_dirs) $sysroot/usr/sbin $sysroot/usr/bin" mariadb-install-db mariadbd
}

missing_packages() {
    local packages=()
    have_postgres || packages+=(postgresql)
    have_mariadb || packages+=(mariadb-server)
    echo "${packages[*]}"
}

packages="$(missing_packages)"
[ -z "$packages" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "provision: installing $packages (the test suite starts private servers from them)" >&2
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086  # one word per package
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $packages >&2 || true
    packages="$(missing_packages)"
    [ -z "$packages" ] && exit 0
fi

as_root="sudo "
[ "$(id -u)" = 0 ] && as_root=""
echo "error: the tests need the server binaries of: $packages; run: ${as_root}apt-get install -y $packages  (or set PG_BIN / MARIADB_BIN to the directories that hold them), then run ./scripts/test.sh again" >&2
exit 3
