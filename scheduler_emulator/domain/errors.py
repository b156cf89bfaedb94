"""Errors raised by the emulator.

Every error the emulator raises on purpose derives from :class:`EmulatorError`. Errors that
correspond to a Cloud Scheduler API status derive from :class:`ApiError`; they carry the HTTP
status, the ``google.rpc.Code`` name and number, and render as Google's REST error envelope
(``{"error": {"code", "message", "status", "details"}}``)::

    EmulatorError
    ├── ApiError                      (http_status, status, code; .to_envelope())
    │   ├── InvalidArgument           400 INVALID_ARGUMENT  (bad schedule, field, name…)
    │   ├── FailedPrecondition        400 FAILED_PRECONDITION (pause/resume in wrong state)
    │   ├── Unauthenticated           401 UNAUTHENTICATED   (no admin token)
    │   ├── PermissionDenied          403 PERMISSION_DENIED (a foreign Host or Origin)
    │   ├── NotFound                  404 NOT_FOUND         ("Job not found.")
    │   ├── AlreadyExists             409 ALREADY_EXISTS    (create with an existing name)
    │   ├── Internal                  500 INTERNAL          (a bug of ours)
    │   ├── Unimplemented             501 UNIMPLEMENTED     (a method not served)
    │   ├── Unavailable               503 UNAVAILABLE       (too many connections)
    │   │   └── StorageUnavailable    503 UNAVAILABLE       (the data directory's disk is full)
    │   └── DeadlineExceeded          504 DEADLINE_EXCEEDED (a request that did not arrive)

Every error answer of the REST surface is one of these rendered by :meth:`ApiError.to_envelope`
(an HTTP error of the server itself — 414, 431, 405 — through :meth:`ApiError.for_http`,
keeping its HTTP status); the gRPC surface sends the same code, message and field
violations.
    ├── ClockError                    manual-only operation on a system clock, a clock moved back…
    └── ConfigurationError            bad command-line or jobs-file input (exit code 2)

The target-side helpers raise their own errors (:mod:`scheduler_emulator.service.errors`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AlreadyExists",
    "ApiError",
    "ClockError",
    "ConfigurationError",
    "DeadlineExceeded",
    "EmulatorError",
    "FailedPrecondition",
    "FieldViolation",
    "INVALID_SCHEDULE_MESSAGE",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "RPC_CODES",
    "StorageUnavailable",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "show_value",
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


def show_value(value: Any, limit: int = 80) -> str:
    """Render a JSON value for an error message: JSON spelling, at most ``limit`` characters.

    The value is encoded lazily and the encoding stops as soon as ``limit`` characters are
    written, so a huge or self-repeating value (a YAML alias bomb, a 100 MB string) costs no
    more than ``limit`` characters of work beyond its first string. Lone surrogates and other
    characters that cannot be written as UTF-8 come out as ``\\udXXX`` escapes, so the message
    can always be printed and sent.

    :param value: any value; non-JSON values are rendered with ``str``.
    :param limit: the longest result, in characters (≥ 2); a shortened one ends with ``…``.
    :return: the rendering, e.g. ``"abc"``, ``"abcd…"``, ``{"a": 1}`` or ``[[[[[[…``.
    """
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # no need to encode what cannot be shown
    pieces: list[str] = []
    size = 0
    try:
        encoder = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False)
        for piece in encoder.iterencode(value):
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                break
    except (TypeError, ValueError, RecursionError):
        pieces = [repr(value)[: limit + 1]]
    text = "".join(pieces)
    if len(text) > limit:  # a shortened string keeps its closing quote: "abc…"
        closing = '"' if isinstance(value, str) and text.startswith('"') else ""
        text = text[: limit - 1 - len(closing)] + "…" + closing
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


#: The longest message or field violation an error carries, in characters: a message quoting
#: a huge value whole (a 1 MB schedule, trial 181) is cut, whatever quoted it.
MAX_ERROR_TEXT = 2000


def cut_words(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: a longer one ends in ``…``, cut between words
    when one ends in its last 20 characters.

    >>> cut_words("Message ID = 2 on projects/my-project/topics/beat", 30)
    'Message ID = 2 on…'
    """
    if len(text) <= width:
        return text
    text = text[: width - 1]
    return text[: max(text.rfind(" ", width - 21), 0) or len(text)] + "…"


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
    :param http_status: this error's HTTP status when it is not its class's (a 414 or 431 the
        server answers as ``INVALID_ARGUMENT``).
    :param reason: an ``ErrorInfo`` reason for ``details`` (``FOREIGN_HOST``), or ``None``.
    """

    http_status: int = 500
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

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        description: str | None = None,
        http_status: int | None = None,
        reason: str | None = None,
    ):
        message = cut_words(message, MAX_ERROR_TEXT)
        super().__init__(message)
        self.message = message
        self.field = field
        self.violations: list[FieldViolation] = []
        if field is not None:
            self.violations.append(
                FieldViolation(field, cut_words(description or message, MAX_ERROR_TEXT))
            )
        if http_status is not None:
            self.http_status = http_status
        self.reason = reason

    @staticmethod
    def for_http(http_status: int, message: str) -> ApiError:
        """The error of an HTTP status the server answers itself (a route that does not exist,
        a body or request line too long): the class of that status (Google's HTTP mapping of
        ``google.rpc.Code``), else ``INVALID_ARGUMENT`` for a 4xx and ``INTERNAL`` for a 5xx,
        keeping ``http_status``."""
        default = Internal if http_status >= 500 else InvalidArgument
        cls = next((c for c in _classes() if c.http_status == http_status), default)
        return cls(message, http_status=http_status)

    def describe(self) -> str:
        """One sentence naming the field and the value: the first field violation's description
        (which names the value), prefixed with the field path when it does not name it;
        the message when there is no violation."""
        if not self.violations:
            return self.message
        violation = self.violations[0]
        text = violation.description
        named = re.search(rf"(?<![\w.]){re.escape(violation.field)}(?!\w)", text)
        if violation.field not in ("job", "") and not named:  # ("schedules": trial 211)
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
        details: list[dict[str, Any]] = []
        if self.violations:
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [
                        {"field": v.field, "description": v.description} for v in self.violations
                    ],
                }
            )
        if self.reason is not None:
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": self.reason,
                    "domain": "scheduler-emulator",
                }
            )
        if details:
            error["details"] = details
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


class Unauthenticated(ApiError, http_status=401, status="UNAUTHENTICATED"):
    """401 UNAUTHENTICATED: the request lacks the credentials the endpoint needs."""


class PermissionDenied(ApiError, http_status=403, status="PERMISSION_DENIED"):
    """403 PERMISSION_DENIED: the caller may not make this request (a foreign ``Host`` or
    ``Origin``)."""


class NotFound(ApiError, http_status=404, status="NOT_FOUND"):
    """404 NOT_FOUND: no job (or location) of that name; Google's message is ``Job not found.``"""


class AlreadyExists(ApiError, http_status=409, status="ALREADY_EXISTS"):
    """409 ALREADY_EXISTS: a job of that name exists already
    (``Job projects/P/locations/L/jobs/J already exists.``, Google's text)."""


class Unavailable(ApiError, http_status=503, status="UNAVAILABLE"):
    """503 UNAVAILABLE: try again later (too many connections)."""


class StorageUnavailable(Unavailable):
    """503 UNAVAILABLE: a change could not be stored (the data directory's disk is full, or it
    cannot be written); nothing of it was kept, in memory or on disk, so trying again once
    there is space is safe. Reads keep working."""


class Internal(ApiError, http_status=500, status="INTERNAL"):
    """500 INTERNAL: a bug of the emulator (logged with its traceback); never bad input."""


class Unimplemented(ApiError, http_status=501, status="UNIMPLEMENTED"):
    """501 UNIMPLEMENTED: a method the emulator (or Google's service) does not serve; Google's
    Operations API answers so for the operation methods a service leaves out (cancel and delete:
    https://cloud.google.com/service-infrastructure/docs/service-management/reference/rpc/google.longrunning).
    The message names the method."""


class DeadlineExceeded(ApiError, http_status=504, status="DEADLINE_EXCEEDED"):
    """504 DEADLINE_EXCEEDED: the request did not arrive in time."""


def _classes() -> list[type[ApiError]]:
    """Every :class:`ApiError` class, most general first (breadth first)."""
    found: list[type[ApiError]] = []
    stack = list(ApiError.__subclasses__())
    while stack:
        cls = stack.pop(0)
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


class ClockError(EmulatorError):
    """A clock was used wrongly: moving a manual clock backwards, or a manual-only operation
    on the system clock. (A naive datetime is :class:`scheduler_emulator.wire.NaiveDatetimeError`,
    the one error every time input raises for it.)"""


class ConfigurationError(EmulatorError):
    """Bad command-line or jobs-file input; the CLI prints the message and exits with 2."""
