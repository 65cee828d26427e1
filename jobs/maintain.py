"""spark-submit entry point of the maintenance job; same arguments as `eventlake maintain`.

    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/maintain.py --retention-hours 168 --auto-reconcile

Prints one line per state topic and per table, then a summary line. Exit codes: 0 done,
2 refused arguments (nothing ran), 1 the compaction sweep failed (OPTIMIZE/VACUUM still
ran, e.g. with the broker down).
"""

import sys

from eventlake.cli import command

if __name__ == "__main__":
    command(["maintain", *sys.argv[1:]])
