"""Classify what a target did into the attempt outcome Cloud Scheduler logs.

An attempt succeeds when the final HTTP status (after redirects) is 2xx. Everything else is a
failure with a google.rpc code and the ``debugInfo`` text of the execution log. Mappings seen
in production logs are reproduced exactly; the rest (not observed in production) are the
emulator's choice, listed in ``docs/differences-from-production.md``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import RPC_CODES

__all__ = [
    "Failure",
    "Outcome",
    "classify_failure",
    "classify_status",
]


class Failure(enum.Enum):
    """Ways an attempt can end without an HTTP response."""

    CONNECTION = "connection"  # refused, reset, DNS or TLS error before a response
    DEADLINE = "deadline"  # no response within the attempt deadline
    RESTARTED = "restarted"  # the emulator stopped while the attempt was in flight
    DELETED = "deleted"  # its job was deleted before it was sent


@dataclass(frozen=True)
class Outcome:
    """The result of one attempt as the execution log shows it.

    :param code: google.rpc code name, ``"OK"`` on success.
    :param debug_info: the log's ``debugInfo`` text.
    :param http_status: the target's final HTTP status, ``None`` when there was no response.
    """

    code: str
    debug_info: str
    http_status: int | None

    @property
    def ok(self) -> bool:
        """``True`` for a 2xx answer."""
        return self.code == "OK"

    @property
    def code_number(self) -> int:
        """The google.rpc code number (0 for OK)."""
        return RPC_CODES[self.code]


# Observed in production: status → (code, debugInfo prefix).
_OBSERVED: dict[int, tuple[str, str]] = {
    401: ("UNAUTHENTICATED", "URL_ERROR-ERROR_AUTHENTICATION"),
    403: ("PERMISSION_DENIED", "URL_ERROR-ERROR_OTHER"),
    404: ("NOT_FOUND", "URL_ERROR-ERROR_NOT_FOUND"),
    500: ("INTERNAL", "URL_UNREACHABLE-UNREACHABLE_5xx"),
    504: ("DEADLINE_EXCEEDED", "URL_TIMEOUT-TIMEOUT_WEB"),
}
# Emulator-chosen (not observed in production): the standard HTTP → google.rpc mapping.
_CHOSEN_4XX: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    409: "ABORTED",
    412: "FAILED_PRECONDITION",
    416: "OUT_OF_RANGE",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
}
_CHOSEN_5XX: dict[int, str] = {501: "UNIMPLEMENTED", 502: "UNAVAILABLE", 503: "UNAVAILABLE"}

_FAILURE_TEXT = {
    Failure.CONNECTION: ("UNAVAILABLE", "URL_UNREACHABLE-UNREACHABLE_CONNECTION_ERROR"),
    Failure.DEADLINE: ("DEADLINE_EXCEEDED", "URL_TIMEOUT-TIMEOUT_ATTEMPT_DEADLINE"),
    Failure.RESTARTED: ("UNAVAILABLE", "URL_UNREACHABLE-UNREACHABLE_EMULATOR_RESTARTED"),
    Failure.DELETED: ("CANCELLED", "NOT_SENT-JOB_DELETED"),
}


#: Outcomes by HTTP status, made once each (an outcome is an immutable value).
_BY_STATUS: dict[int, Outcome] = {}


def classify_status(status: int) -> Outcome:
    """Return the outcome of an attempt whose final response had HTTP ``status``.

    :param status: the HTTP status code after redirects (100–599).
    :return: OK with ``URL_CRAWLED`` for 2xx; otherwise the failure code and debug text
        production logs show, e.g. 500 → ``INTERNAL``,
        ``URL_UNREACHABLE-UNREACHABLE_5xx. Original HTTP response code number = 500``.
    """
    outcome = _BY_STATUS.get(status)
    if outcome is None:
        outcome = _classify_status(status)
        if type(status) is int and 100 <= status <= 599:
            _BY_STATUS[status] = outcome
    return outcome


def _classify_status(status: int) -> Outcome:
    if 200 <= status <= 299:
        code, kind = "OK", "URL_CRAWLED"
    elif status in _OBSERVED:
        code, kind = _OBSERVED[status]
    elif 400 <= status <= 499:
        code, kind = _CHOSEN_4XX.get(status, "FAILED_PRECONDITION"), "URL_ERROR-ERROR_OTHER"
    elif 500 <= status <= 599:
        code, kind = _CHOSEN_5XX.get(status, "INTERNAL"), "URL_UNREACHABLE-UNREACHABLE_5xx"
    else:  # 1xx or 3xx left after following redirects
        code, kind = "UNKNOWN", "URL_ERROR-ERROR_OTHER"
    return Outcome(code, f"{kind}. Original HTTP response code number = {status}", status)


def classify_failure(failure: Failure, detail: str = "") -> Outcome:
    """Return the outcome of an attempt that got no HTTP response (emulator-chosen).

    :param failure: what went wrong.
    :param detail: a short human-readable detail appended to the debug text.
    :return: ``UNAVAILABLE`` for connection errors and restarts, ``DEADLINE_EXCEEDED`` for an
        attempt deadline, ``CANCELLED`` for an attempt not sent because its job was deleted;
        ``http_status`` is ``None``.
    """
    code, kind = _FAILURE_TEXT[failure]
    return Outcome(code, f"{kind}. {detail}" if detail else kind, None)
