"""A local Google Cloud Scheduler (v1, HTTP targets) with a virtual clock.

The public entry points::

    from scheduler_emulator import Emulator, ManualClock, SystemClock
    from scheduler_emulator import HttpTransport, MountTransport, WsgiTransport
"""

from .clock import ManualClock, SystemClock
from .emulator import Emulator
from .transports import HttpTransport, MountTransport, WsgiTransport

__version__ = "0.1.0"

__all__ = [
    "Emulator",
    "HttpTransport",
    "ManualClock",
    "MountTransport",
    "SystemClock",
    "WsgiTransport",
    "__version__",
]
