"""spark-submit entry point of the data-quality job; same arguments as `eventlake check`.

    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/check_quality.py --topic orders

Exit code 1 when a check of severity error failed.
"""

import sys

from eventlake.cli import command

if __name__ == "__main__":
    command(["check", *sys.argv[1:]])
