"""spark-submit entry point of the ingest job; same arguments as `eventlake ingest`.

    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/ingest_cloudevents.py --topic orders --trigger available-now
"""

import sys

from eventlake.cli import command

if __name__ == "__main__":
    command(["ingest", *sys.argv[1:]])
