#!/usr/bin/env bash
# Installs Debian 12's PostgreSQL 15 and builds pgvector for it from Debian's own source package
# of a newer release (Debian 12 ships no pgvector package, not in backports either): the
# `trixie` source list is used for that one download only, in a temp folder, and the system's
# apt configuration is left as it was. Skipped when PostgreSQL 15 and pgvector are installed.
# The package's own cluster service is stopped: the tests start their own server on loopback.
set -euo pipefail
pg_config=/usr/lib/postgresql/15/bin/pg_config
sudo_cmd=""
if [ "$(id -u)" != "0" ]; then sudo_cmd="sudo"; fi
if [ ! -x /usr/lib/postgresql/15/bin/postgres ] || [ ! -x "$pg_config" ]; then
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq postgresql-15 postgresql-server-dev-15 dpkg-dev >/dev/null
  $sudo_cmd service postgresql stop >/dev/null 2>&1 || true
fi
if [ ! -f "$("$pg_config" --sharedir)/extension/vector.control" ]; then
  conf=$(mktemp -d); lists=$(mktemp -d); work=$(mktemp -d)
  trap 'rm -rf "$conf" "$lists" "$work"' EXIT
  mkdir -p "$lists/partial"; chmod 755 "$conf" "$lists" "$work"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" > "$conf/src.list"
  opts=(-o "Dir::Etc::SourceList=$conf/src.list" -o "Dir::Etc::SourceParts=-" -o "Dir::State::Lists=$lists" -o "APT::Sandbox::User=root")
  $sudo_cmd apt-get "${opts[@]}" update -qq
  (cd "$work" && $sudo_cmd apt-get "${opts[@]}" source --download-only pgvector >/dev/null 2>&1 && dpkg-source -x pgvector_*.dsc src >/dev/null 2>&1)
  make -s -C "$work/src" PG_CONFIG="$pg_config" OPTFLAGS="" >/dev/null 2>&1
  $sudo_cmd make -s -C "$work/src" PG_CONFIG="$pg_config" install >/dev/null
fi
echo "postgresql $("$pg_config" --version | cut -d' ' -f2), pgvector $(sed -n "s/default_version = '\(.*\)'/\1/p" "$("$pg_config" --sharedir)/extension/vector.control")"
