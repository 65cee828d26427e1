"""Great Expectations' import made quiet: loggers that print hundreds of INFO lines
("Skipping registering function ...") while great_expectations is imported, once logging
is configured (Airflow configures it), are set to WARNING before it loads.

Example:
    >>> quiet_gx_import_logs()
    >>> import great_expectations  # no INFO lines
"""

from __future__ import annotations

import logging
from typing import Final

NOISY_GX_LOGGERS: Final = (
    "great_expectations._docs_decorators",
    "great_expectations.expectations.registry",
)


def quiet_gx_import_logs() -> None:
    """Set GX's import-time loggers to WARNING, unless a level was set on purpose."""
    for name in NOISY_GX_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
