"""Errors the target-side helpers raise.

They derive from :class:`TargetError`, not from the emulator's errors: a service that imports
:mod:`scheduler_emulator.service` in production loads no emulator code and catches these::

    TargetError
    ├── UnknownTimerError        (also LookupError) invoking a timer no handler declares
    ├── TimerClockError          (also TypeError) a guard clock returned no datetime
    ├── TokenError               a request's OIDC token is missing, malformed, mis-signed,
    │                            expired, or for another issuer, audience or account (auth)
    ├── CertsUnavailableError    the signing keys could not be fetched (auth)
    └── RunRefusedError          the run-once guard refused a delivery (guard)
        ├── MissingRunHeadersError   400: no X-CloudScheduler-JobName / -ScheduleTime
        └── RunInProgressError       409: another attempt holds the run's lease
"""

from __future__ import annotations

__all__ = [
    "TargetError",
    "TimerClockError",
]


class TargetError(Exception):
    """Base of every error :mod:`scheduler_emulator.service` raises on purpose."""


class TimerClockError(TargetError, TypeError):
    """A clock given to a target helper returned something other than an aware datetime."""
