#!/usr/bin/env bash
# Starts a Spark standalone daemon (master or worker) of docker-compose.yml with its RPC
# authenticated and encrypted: the secret goes from EVENTLAKE_SPARK_AUTH_SECRET into a
# spark-defaults.conf readable by this user only (never onto a command line, where `ps`
# would show it), then the daemon replaces this shell. `eventlake cluster start` does
# the same from Python (eventlake.local.spark_standalone).
#
# Usage: spark-daemon.sh org.apache.spark.deploy.master.Master --host ... (spark-class args)
set -euo pipefail
: "${EVENTLAKE_SPARK_AUTH_SECRET:?set EVENTLAKE_SPARK_AUTH_SECRET, see .env.example}"
export SPARK_CONF_DIR="${SPARK_CONF_DIR:-${HOME}/spark-conf}"
python -m eventlake.spark.auth "$SPARK_CONF_DIR"
# The daemon reads the file; its executors get the secret from it, not from here.
unset EVENTLAKE_SPARK_AUTH_SECRET
exec spark-class "$@"
