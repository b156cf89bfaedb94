"""Deprecated alias of :mod:`scheduler_emulator.service` (the target-side helpers' old name),
kept for one release.

``import scheduler_emulator.target`` and ``from scheduler_emulator.target.guard import …`` still
work and warn (``DeprecationWarning``): change them to ``scheduler_emulator.service``. The
package was renamed because ``target/`` is a build-output folder in many ``.gitignore``
templates (Rust, Maven), which hid it from ``git add``, ruff and the wheel.

This is a module, not a ``target/`` folder, for the same reason; it makes the old submodule
names resolve to the new modules.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings

from . import service as _service

warnings.warn(
    "scheduler_emulator.target is now scheduler_emulator.service; the old name goes away in "
    "the next release.",
    DeprecationWarning,
    stacklevel=2,
)

for _module in pkgutil.iter_modules(_service.__path__):
    sys.modules[f"{__name__}.{_module.name}"] = importlib.import_module(
        f"{_service.__name__}.{_module.name}"
    )

__path__: list[str] = []  # a package to the import system, so the submodule names resolve
__all__ = list(_service.__all__)
globals().update({name: getattr(_service, name) for name in __all__})
