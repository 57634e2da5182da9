#!/bin/sh
# As the official image does: a redis-server started without a configuration file listens on every
# interface and, without protected mode, answers the other containers.
set -e
if [ "$1" = redis-server ]; then
  shift
  set -- redis-server --bind '* -::*' --protected-mode no "$@"
fi
exec "$@"
