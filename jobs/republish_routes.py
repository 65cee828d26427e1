"""spark-submit entry point of the republish DAG's run: the configured routes in one
application; same arguments as `eventlake republish-routes`.

    EVENTLAKE_REPUBLISH_ROUTES='[{"source": "raw", "target": "orders"}]' \
    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/republish_routes.py --route 'raw>orders'
"""

import sys

from eventlake.cli import command

if __name__ == "__main__":
    command(["republish-routes", *sys.argv[1:]])
