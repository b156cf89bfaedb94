"""Errors raised by the emulator.

Every error the emulator raises on purpose derives from :class:`EmulatorError`. Errors that
correspond to a Cloud Scheduler API status derive from :class:`ApiError`; they carry the HTTP
status, the ``google.rpc.Code`` name and number, and render as Google's REST error envelope
(``{"error": {"code", "message", "status", "details"}}``)::

    EmulatorError
    ├── ApiError                      (http_status, status, code; .to_envelope())
    │   ├── InvalidArgument           400 INVALID_ARGUMENT  (bad schedule, field, name…)
    │   ├── FailedPrecondition        400 FAILED_PRECONDITION (pause/resume in wrong state)
    │   ├── NotFound                  404 NOT_FOUND         ("Job not found.")
    │   ├── AlreadyExists             409 ALREADY_EXISTS    (create with an existing name)
    │   ├── Unimplemented             501 UNIMPLEMENTED     (operations cancel and delete)
    │   └── StorageUnavailable        503 UNAVAILABLE       (the data directory's disk is full)
    ├── ClockError                    manual-only operation on a system clock, a clock moved back…
    └── ConfigurationError            bad command-line or jobs-file input (exit code 2)

The target-side helpers raise their own errors (:mod:`scheduler_emulator.service.errors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AlreadyExists",
    "ApiError",
    "ClockError",
    "ConfigurationError",
    "EmulatorError",
    "FailedPrecondition",
    "FieldViolation",
    "INVALID_SCHEDULE_MESSAGE",
    "InvalidArgument",
    "NotFound",
    "RPC_CODES",
    "Unimplemented",
]

#: The google.rpc.Code numbers, by name (google/rpc/code.proto).
RPC_CODES: dict[str, int] = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}

#: Message Google returns for an unparsable schedule or an unknown time zone (its verbatim text).
INVALID_SCHEDULE_MESSAGE = "Schedule or time zone is invalid."


class EmulatorError(Exception):
    """Root of every error the emulator raises on purpose."""


@dataclass(frozen=True)
class FieldViolation:
    """One entry of a ``google.rpc.BadRequest`` detail.

    :param field: the field path in camelCase, as the REST API spells it
        (``retryConfig.retryCount``).
    :param description: one sentence saying what is wrong, naming the value.
    """

    field: str
    description: str


class ApiError(EmulatorError):
    """An error with a google.rpc status, rendered as Google's REST error envelope.

    :param message: the ``error.message`` text (Google's verbatim text where it is known).
    :param field: optional field path (camelCase) the error is about; adds a ``BadRequest``
        field violation to ``details``.
    :param description: the field violation's description; defaults to ``message``.
    """

    http_status: ClassVar[int] = 500
    status: ClassVar[str] = "INTERNAL"

    def __init_subclass__(
        cls, *, http_status: int | None = None, status: str | None = None, **kwargs: Any
    ) -> None:
        """``class NotFound(ApiError, http_status=404, status="NOT_FOUND")``: a subclass names
        its HTTP status and google.rpc status name in its header (or inherits them)."""
        super().__init_subclass__(**kwargs)
        if http_status is not None:
            cls.http_status = http_status
        if status is not None:
            cls.status = status

    def __init__(self, message: str, *, field: str | None = None, description: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.violations: list[FieldViolation] = []
        if field is not None:
            self.violations.append(FieldViolation(field, description or message))

    def describe(self) -> str:
        """One sentence naming the field and the value: the first field violation's description
        (which names the value), prefixed with the field path when it does not name it;
        the message when there is no violation."""
        if not self.violations:
            return self.message
        violation = self.violations[0]
        text = violation.description
        if violation.field not in ("job", "") and violation.field not in text:
            text = f"{violation.field}: {text}"
        return text

    @property
    def code(self) -> int:
        """The google.rpc.Code number of :attr:`status`."""
        return RPC_CODES[self.status]

    def to_envelope(self) -> dict[str, Any]:
        """Return the REST error body ``{"error": {"code", "message", "status", "details"?}}``."""
        error: dict[str, Any] = {
            "code": self.http_status,
            "message": self.message,
            "status": self.status,
        }
        if self.violations:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [
                        {"field": v.field, "description": v.description} for v in self.violations
                    ],
                }
            ]
        return {"error": error}

    def __str__(self) -> str:
        extra = [v.description for v in self.violations if v.description not in self.message]
        detail = " (" + "; ".join(extra) + ")" if extra else ""
        return f"{self.status}: {self.message}{detail}"


class InvalidArgument(ApiError, http_status=400, status="INVALID_ARGUMENT"):
    """400 INVALID_ARGUMENT: a field, name, schedule or time zone is not acceptable."""


class FailedPrecondition(ApiError, http_status=400, status="FAILED_PRECONDITION"):
    """400 FAILED_PRECONDITION: the job is not in a state that allows the operation (pausing a job
    that is not ENABLED, resuming one that is not PAUSED); the message names the state."""


class NotFound(ApiError, http_status=404, status="NOT_FOUND"):
    """404 NOT_FOUND: no job (or location) of that name; Google's message is ``Job not found.``"""


class AlreadyExists(ApiError, http_status=409, status="ALREADY_EXISTS"):
    """409 ALREADY_EXISTS: a job of that name exists already
    (``Job projects/P/locations/L/jobs/J already exists.``, Google's text)."""


class Unimplemented(ApiError, http_status=501, status="UNIMPLEMENTED"):
    """501 UNIMPLEMENTED: a method of the API the service does not support (Google's
    Operations API answers so for the operation methods a service leaves out:
    https://cloud.google.com/service-infrastructure/docs/service-management/reference/rpc/google.longrunning);
    the message names the method."""


class StorageUnavailable(ApiError, http_status=503, status="UNAVAILABLE"):
    """503 UNAVAILABLE: a change could not be stored (the data directory's disk is full, or it
    cannot be written); nothing of it was kept, in memory or on disk, so trying again once
    there is space is safe. Reads keep working."""


class ClockError(EmulatorError):
    """A clock was used wrongly: moving a manual clock backwards, or a manual-only operation
    on the system clock. (A naive datetime is :class:`scheduler_emulator.wire.NaiveDatetimeError`,
    the one error every time input raises for it.)"""


class ConfigurationError(EmulatorError):
    """Bad command-line or jobs-file input; the CLI prints the message and exits with 2."""
