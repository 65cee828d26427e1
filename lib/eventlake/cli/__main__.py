"""``python -m eventlake.cli``: the ``eventlake`` command line."""

from eventlake.cli import command

command()
