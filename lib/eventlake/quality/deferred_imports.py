"""Modules that Great Expectations imports and eventlake's checks never use, loaded at
their first use instead of at GX's import.

Why: ``great_expectations.expectations`` imports every core expectation, and one of them
(``expect_column_kl_divergence_to_be_less_than``) imports altair and scipy.stats at
module level: ~1 s of one core in ``eventlake check``'s start, for modules that none of
eventlake's checks touches (docs/benchmarks.md, ninth session). A process that does use
them (a suite with that expectation, a user's own ``import altair``) gets the real
module at its first attribute access, so nothing changes for it but when it loads.

Example:
    >>> defer_unused_gx_imports()
    ('altair', 'scipy.stats')
    >>> import great_expectations  # altair and scipy.stats not loaded
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import Any, Final

#: Imported by GX at import time, used by none of eventlake's checks.
UNUSED_BY_CHECKS: Final = ("altair", "scipy.stats")

# Re-entrant: loading one module may import another deferred one.
_loading = threading.RLock()


class DeferredModule(types.ModuleType):
    """Stands in ``sys.modules`` for a module until an attribute of it is first read;
    then imports the real module, takes its attributes and hands it over in
    ``sys.modules``. ``import name`` finds the stand-in (its ``__spec__`` is None, so the
    import system takes it as loaded); ``from name import x`` and ``name.x`` load it."""

    def __getattr__(self, attribute: str) -> Any:
        # Only attributes the stand-in lacks get here: all of them until it has loaded.
        if attribute.startswith("__") and attribute not in {"__path__", "__file__", "__all__"}:
            raise AttributeError(attribute)
        return getattr(self._load(), attribute)

    def _load(self) -> types.ModuleType:
        name = self.__name__
        with _loading:
            if sys.modules.get(name) is self:
                del sys.modules[name]
                self.__dict__.update(importlib.import_module(name).__dict__)
            # Loaded (here or by another thread): the real module is the one in sys.modules.
            return importlib.import_module(name)


def defer_imports(names: tuple[str, ...]) -> tuple[str, ...]:
    """Put a :class:`DeferredModule` in ``sys.modules`` for each of ``names`` not imported
    yet; returns the names deferred.

    Example:
        >>> defer_imports(("colorsys",))
        ('colorsys',)
        >>> import colorsys  # not loaded yet
        >>> colorsys.rgb_to_hsv(1, 0, 0)  # loads it now
        (0.0, 1.0, 1)
    """
    deferred = tuple(name for name in names if name not in sys.modules)
    for name in deferred:
        sys.modules[name] = DeferredModule(name)
    return deferred


def defer_unused_gx_imports() -> tuple[str, ...]:
    """Defer :data:`UNUSED_BY_CHECKS`; call before great_expectations is first imported."""
    return defer_imports(UNUSED_BY_CHECKS)
