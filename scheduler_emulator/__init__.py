"""A local Google Cloud Scheduler (v1: HTTP, Pub/Sub and App Engine targets) with a virtual clock.

The types a user touches, importable from here (each imported on first use, so that a
production service importing :mod:`scheduler_emulator.service` does not load the emulator
engine)::

    from scheduler_emulator import Emulator, EmulatorOptions, ManualClock, SystemClock
    from scheduler_emulator import Job, Attempt, SkippedRun, FaultPlan, FaultRule
    from scheduler_emulator import InvalidArgument, NotFound, NaiveDatetimeError
    from scheduler_emulator import WsgiTransport, AsgiTransport, MountTransport, HttpTransport
    from scheduler_emulator import client     # Google's client pointed at the daemon

- the emulator and its settings: :class:`Emulator`, :class:`EmulatorOptions`;
- clocks: :class:`ManualClock` (virtual time, moved by ``advance``/``move_to``),
  :class:`SystemClock`, and the :class:`Clock` protocol;
- records: :class:`Job` (with :class:`State`, :class:`HttpTarget`, :class:`RetryConfig`),
  :class:`Attempt`, :class:`SkippedRun`;
- faults: :class:`FaultPlan`, :class:`FaultRule`;
- errors: :class:`EmulatorError` and its subclasses (:class:`ApiError` → :class:`InvalidArgument`,
  :class:`NotFound`, :class:`AlreadyExists`, :class:`FailedPrecondition`; :class:`ClockError`,
  :class:`ConfigurationError`), and :class:`NaiveDatetimeError` for a datetime without a UTC
  offset;
- where attempts go: :class:`HttpTransport`, :class:`WsgiTransport`, :class:`AsgiTransport`,
  :class:`MountTransport`, and the :class:`Transport` protocol;
- where Pub/Sub jobs publish: :class:`InProcessPublisher` (the default), :class:`EmulatorPublisher`
  (a Pub/Sub emulator), and :class:`PublishError` for a publisher of your own;
- :func:`client`: Google's ``google-cloud-scheduler`` client configured for the daemon.

Everything else lives in the layer packages (``domain``, ``core``, ``runtime``, ``server``,
``tools``; docs/architecture.md) and may change between releases.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Emulator": "runtime._emulator",
    "EmulatorOptions": "runtime._options",
    "Clock": "runtime._clock",
    "ManualClock": "runtime._clock",
    "SystemClock": "runtime._clock",
    "Job": "domain.resources",
    "State": "domain.resources",
    "HttpTarget": "domain.resources",
    "RetryConfig": "domain.resources",
    "Attempt": "domain.attempts",
    "SkippedRun": "domain.attempts",
    "FaultPlan": "core.faults",
    "FaultRule": "core.faults",
    "EmulatorError": "domain.errors",
    "ApiError": "domain.errors",
    "InvalidArgument": "domain.errors",
    "NotFound": "domain.errors",
    "AlreadyExists": "domain.errors",
    "FailedPrecondition": "domain.errors",
    "ClockError": "domain.errors",
    "ConfigurationError": "domain.errors",
    "NaiveDatetimeError": "wire",
    "Transport": "runtime.delivery.transports",
    "AsgiTransport": "runtime.delivery.in_process",
    "HttpTransport": "runtime.delivery.transports",
    "MountTransport": "runtime.delivery.in_process",
    "WsgiTransport": "runtime.delivery.in_process",
    "client": "clients",
    "EmulatorPublisher": "runtime.delivery.pubsub_client",
    "InProcessPublisher": "runtime.delivery.pubsub",
    "PublishError": "runtime.delivery.pubsub",
}
__all__ = [
    "AlreadyExists",
    "ApiError",
    "AsgiTransport",
    "Attempt",
    "Clock",
    "ClockError",
    "ConfigurationError",
    "Emulator",
    "EmulatorError",
    "EmulatorOptions",
    "EmulatorPublisher",
    "FailedPrecondition",
    "FaultPlan",
    "FaultRule",
    "HttpTarget",
    "HttpTransport",
    "InProcessPublisher",
    "InvalidArgument",
    "Job",
    "ManualClock",
    "MountTransport",
    "NaiveDatetimeError",
    "NotFound",
    "PublishError",
    "RetryConfig",
    "SkippedRun",
    "State",
    "SystemClock",
    "Transport",
    "WsgiTransport",
    "__version__",
    "client",
]

if TYPE_CHECKING:
    from .clients import client
    from .core.faults import FaultPlan, FaultRule
    from .domain.attempts import Attempt, SkippedRun
    from .domain.errors import (
        AlreadyExists,
        ApiError,
        ClockError,
        ConfigurationError,
        EmulatorError,
        FailedPrecondition,
        InvalidArgument,
        NotFound,
    )
    from .domain.resources import HttpTarget, Job, RetryConfig, State
    from .runtime._clock import Clock, ManualClock, SystemClock
    from .runtime._emulator import Emulator
    from .runtime._options import EmulatorOptions
    from .runtime.delivery.in_process import AsgiTransport, MountTransport, WsgiTransport
    from .runtime.delivery.pubsub import InProcessPublisher, PublishError
    from .runtime.delivery.pubsub_client import EmulatorPublisher
    from .runtime.delivery.transports import HttpTransport, Transport
    from .wire import NaiveDatetimeError


def __getattr__(name: str) -> Any:
    """Import the public types on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'scheduler_emulator' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)


def __dir__() -> list[str]:
    """The public names (:data:`__all__`) and the module's own attributes."""
    return sorted({*globals(), *__all__})
