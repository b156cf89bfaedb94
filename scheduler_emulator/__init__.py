"""A local Google Cloud Scheduler (v1, HTTP targets) with a virtual clock.

The public entry points (imported on first use, so that a production service importing
:mod:`scheduler_emulator.service` does not load the emulator engine)::

    from scheduler_emulator import Emulator, ManualClock, SystemClock
    from scheduler_emulator import AsgiTransport, HttpTransport, MountTransport, WsgiTransport
    from scheduler_emulator import client     # Google's client pointed at the daemon
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Emulator": "runtime.emulator",
    "ManualClock": "runtime.clock",
    "SystemClock": "runtime.clock",
    "AsgiTransport": "runtime.transports",
    "HttpTransport": "runtime.transports",
    "MountTransport": "runtime.transports",
    "WsgiTransport": "runtime.transports",
    "client": "clients",
}
__all__ = [
    "AsgiTransport",
    "Emulator",
    "HttpTransport",
    "ManualClock",
    "MountTransport",
    "SystemClock",
    "WsgiTransport",
    "__version__",
    "client",
]

if TYPE_CHECKING:
    from .clients import client
    from .runtime.clock import ManualClock, SystemClock
    from .runtime.emulator import Emulator
    from .runtime.transports import AsgiTransport, HttpTransport, MountTransport, WsgiTransport


def __getattr__(name: str) -> Any:
    """Import the public classes on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'scheduler_emulator' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
