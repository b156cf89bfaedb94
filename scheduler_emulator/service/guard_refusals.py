"""The run-once guard's refusals: a delivery answered without running its work.

A missing run header is answered 400, a run that another attempt holds 409 (never 503: App
Engine retries a 503 without counting it), both ``application/problem+json``; a duplicate of a
completed run is answered 200 with a line saying so (:data:`DUPLICATE_RESPONSE`). The guard
(:mod:`~scheduler_emulator.service.guard`) raises these; a router or a view adapter answers
:meth:`RunRefusedError.response`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any, ClassVar

from .errors import TargetError
from .guard_stores import RunRecord
from .request import TimerResponse
from .router import PROBLEM_JSON, VALIDATION_PROBLEM_TITLE, VALIDATION_PROBLEM_TYPE

__all__ = [
    "CONFLICT_PROBLEM_TYPE",
    "DUPLICATE_RESPONSE",
    "MissingRunHeadersError",
    "RunInProgressError",
    "RunRefusedError",
]

#: ``type`` of the 409 problem (the RFC 9110 section for 409 Conflict).
CONFLICT_PROBLEM_TYPE = "https://tools.ietf.org/html/rfc9110#section-15.5.10"
_MISSING_HEADER_MESSAGE = (
    "The run-once guard tells runs apart by this header; Cloud Scheduler sends "
    "X-CloudScheduler-JobName on every delivery and X-CloudScheduler-ScheduleTime for "
    "unix-cron schedules."
)


def _problem(status: int, problem: dict[str, Any]) -> TimerResponse:
    """Render an ``application/problem+json`` answer.

    :param status: the HTTP status.
    :param problem: the problem's members (``type``, ``title``, ``status``...).
    :return: the answer, with ``Content-Type`` and ``Content-Length``.
    """
    body = json.dumps(problem, separators=(",", ":"), ensure_ascii=False).encode()
    headers = (("Content-Type", PROBLEM_JSON), ("Content-Length", str(len(body))))
    return TimerResponse(status, headers, body)


_DUPLICATE = b"Already completed by an earlier delivery: not run again (run-once guard).\n"
#: The answer to a duplicate of a completed run: 200, with a line saying so that an attempt's
#: recorded answer tells it from a run that did the work (trial 100).
DUPLICATE_RESPONSE = TimerResponse(
    200,
    (("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(_DUPLICATE)))),
    _DUPLICATE,
)


class RunRefusedError(TargetError):
    """The guard answered a delivery without running its work, with a 4xx.

    Raised to the caller of :meth:`RunOnceGuard.run` and, in function style, of a
    :meth:`~RunOnceGuard.once` handler; a router set up with :meth:`RunOnceGuard.install` and a
    :meth:`~RunOnceGuard.view` answer it with :meth:`response` instead.
    """

    #: The HTTP status the refusal is answered with.
    status: ClassVar[int] = 400

    def response(self) -> TimerResponse:
        """The answer to send: ``status`` with an ``application/problem+json`` body.

        :return: a framework-neutral :class:`~scheduler_emulator.service.TimerResponse`.
        """
        phrase = HTTPStatus(self.status).phrase
        return _problem(self.status, {"title": phrase, "status": self.status, "detail": str(self)})


class MissingRunHeadersError(RunRefusedError):
    """The delivery lacks a header the run key is made of: answered 400.

    :param missing: the absent (or empty) headers, in the order ``X-CloudScheduler-JobName``,
        ``X-CloudScheduler-ScheduleTime``.
    """

    status: ClassVar[int] = 400

    def __init__(self, missing: Iterable[str]) -> None:
        self.missing: tuple[str, ...] = tuple(missing)
        names = " and ".join(self.missing)
        headers = "headers are" if len(self.missing) > 1 else "header is"
        message = (
            f"The {names} {headers} missing, so the run-once guard cannot tell which scheduled "
            "run this is. Cloud Scheduler sends X-CloudScheduler-ScheduleTime only for unix-cron "
            "schedules"
        )
        if len(self.missing) > 1:
            message += "; a request sent by hand has neither."
        else:
            message += (
                ': a job with an English-like schedule ("every 5 minutes") sends none, so the '
                "guard refuses every one of its deliveries. Give the job a unix-cron schedule "
                '("*/5 * * * *") to guard it.'
            )
        super().__init__(message)

    def response(self) -> TimerResponse:
        """400 with a validation problem naming each missing header (as the router's 400s do).

        :return: the answer.
        """
        problem = {
            "type": VALIDATION_PROBLEM_TYPE,
            "title": VALIDATION_PROBLEM_TITLE,
            "status": 400,
            "detail": str(self),
            "errors": {name: [_MISSING_HEADER_MESSAGE] for name in self.missing},
        }
        return _problem(400, problem)


class RunInProgressError(RunRefusedError):
    """Another attempt holds a live lease on the run: answered 409, never 503.

    A non-2xx answer keeps Cloud Scheduler's retries going in case that attempt fails; 409 rather
    than 503 because App Engine retries a 503 without counting it against the retry count.

    :param run: the run (a :class:`~scheduler_emulator.service.guard.ScheduledRun`, which
        this module, under the guard, names only by what it prints).
    :param record: the record that holds it (its ``attempt_id`` and ``lease_expires``).
    """

    status: ClassVar[int] = 409

    def __init__(self, run: object, record: RunRecord) -> None:
        self.run = run
        self.record = record
        super().__init__(
            f"{run} is in progress in attempt {record.attempt_id}, whose lease runs until "
            f"{record.lease_expires.isoformat()}; answered 409 so that Cloud Scheduler retries."
        )

    def response(self) -> TimerResponse:
        """409 with a problem saying the run is in progress.

        :return: the answer.
        """
        problem = {
            "type": CONFLICT_PROBLEM_TYPE,
            "title": "Conflict",
            "status": 409,
            "detail": "This scheduled run is in progress in another attempt; retry later.",
        }
        return _problem(409, problem)
