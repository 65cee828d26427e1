"""spark-submit entry point of the state rebuild; same arguments as `eventlake reconcile`.

    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/reconcile_state.py --topic customers
"""

import sys

from eventlake.cli import app

if __name__ == "__main__":
    app(["reconcile", *sys.argv[1:]])
