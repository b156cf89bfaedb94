"""pytest plugin for cloud-scheduler-emulator (registered through the ``pytest11`` entry point).

Fixtures: ``cloud_scheduler``, ``cloud_scheduler_server``, ``cloud_run_testing``,
``function_testing`` (see :mod:`pytest_plugin.plugin`). Importable helpers::

    from pytest_plugin import CloudScheduler, LiveScheduler, TimerNotAcknowledged
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CloudRunTimers": "facades",
    "FunctionTimers": "facades",
    "TimerNotAcknowledged": "facades",
    "LiveScheduler": "live",
    "CloudScheduler": "scheduler",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    # (``X as X``: re-exported for type checkers, which read no ``__all__`` built at run time)
    from .facades import CloudRunTimers as CloudRunTimers
    from .facades import FunctionTimers as FunctionTimers
    from .facades import TimerNotAcknowledged as TimerNotAcknowledged
    from .live import LiveScheduler as LiveScheduler
    from .scheduler import CloudScheduler as CloudScheduler


def __getattr__(name: str) -> Any:
    """Import the helpers on first use, so loading the plugin stays cheap."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pytest_plugin' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)


def __dir__() -> list[str]:
    """The module's names, the helpers not imported yet included."""
    return sorted({*globals(), *_EXPORTS})
