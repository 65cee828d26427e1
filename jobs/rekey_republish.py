"""spark-submit entry point of the re-key/republish job; same arguments as `eventlake republish`.

    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/rekey_republish.py --source orders.raw --target orders \
        --key-mapper partitionkey --cleanup-policy compact
"""

import sys

from eventlake.cli import command

if __name__ == "__main__":
    command(["republish", *sys.argv[1:]])
