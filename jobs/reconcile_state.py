"""spark-submit entry point of the state rebuild; same arguments as `eventlake reconcile`.

    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/reconcile_state.py --topic customers
"""

import sys

from eventlake.cli import command

if __name__ == "__main__":
    command(["reconcile", *sys.argv[1:]])
