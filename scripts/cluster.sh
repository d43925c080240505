#!/usr/bin/env bash
# A test topology: 3 replicas on one PostgreSQL behind HAProxy, with real runners (scripts/cluster.mjs).
#   scripts/cluster.sh up [--runners N] | kill <n> | stop <n> | start <n> | status | down
set -euo pipefail
exec node "$(dirname "$0")/cluster.mjs" "$@"
