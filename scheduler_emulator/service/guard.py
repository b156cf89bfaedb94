"""The run-once guard: a scheduled run's work is done once, however often it is delivered.

It packages the pattern Google describes in "Deduplicate job requests"
(https://cloud.google.com/scheduler/docs/configuring/deduplicate-job-requests).

Cloud Scheduler delivers each run at least once: a retry after a lost answer or an attempt
deadline, a proxy's resend, can bring the same run twice. The guard keys each delivery by the job's
name and the run's ``X-CloudScheduler-ScheduleTime`` (the same on every retry of one run), claims
the run in a store's transaction before the work, and records the outcome after it::

    >>> from datetime import UTC, datetime
    >>> guard = RunOnceGuard(clock=lambda: datetime(2026, 9, 24, 2, 0, 5, tzinfo=UTC))
    >>> headers = {
    ...     "X-CloudScheduler-JobName": "projects/p/locations/l/jobs/nightly",
    ...     "X-CloudScheduler-ScheduleTime": "2026-09-24T02:00:00Z",
    ... }
    >>> guard.run(headers, lambda: "swept").value
    'swept'
    >>> guard.run(headers, lambda: "swept again").ran    # the same run, delivered again
    False

What happens to one delivery, and what it is answered::

    key = SHA-256 hex of "[<scope>/]<job name>/<schedule time>"
      a header missing                       → 400 problem+json            (WARNING)
    claim, in one transaction:
      record completed                       → 200, the work does not run  (INFO)
      record in_progress, lease not expired  → 409 problem+json, never 503 (WARNING)
      no record, or the lease expired        → write in_progress: attempt_id, lease_expires,
                                               expire_at; run the work
    finish, in one transaction, only while the record's attempt_id is this attempt's:
      the work returned (a view: answered 2xx)  → completed; 200 (a view: its own answer)
      the work raised   (a view: non-2xx)       → record deleted; the exception (→ 500) or
                                                   the view's answer, so a retry can run it
      the record is no longer this attempt's    → left alone (WARNING); answered as above

With a :class:`~scheduler_emulator.service.TimerRouter` (stack ``@guard.once`` under
``@router.timer``; ``guard.install(router)`` once, so that the router answers 400 and 409)::

    router = guard.install(TimerRouter())

    @router.timer("nightly")
    @guard.once
    def nightly(order: Order) -> None: ...     # a TimerRequest parameter is optional

With a Flask view or a functions-framework function (``request`` → response)::

    @functions_framework.http
    @guard.view
    def nightly(request: flask.Request): ...

Log lines go to the logger ``scheduler_emulator.service.guard``.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar, cast

from ..wire import to_instant
from .errors import TimerClockError
from .guard_refusals import (
    CONFLICT_PROBLEM_TYPE,
    DUPLICATE_RESPONSE,
    MissingRunHeadersError,
    RunInProgressError,
    RunRefusedError,
)
from .guard_stores import Claim, ClaimOutcome, RunRecord, RunStatus, RunStore, SqliteRunStore
from .guard_views import acknowledges, guard_view
from .request import (
    JOB_NAME_HEADER,
    SCHEDULE_TIME_HEADER,
    CaseInsensitiveHeaders,
    TimerRequest,
    is_async_handler,
    is_timer_request,
)
from .router import (
    TimerResponse,
    TimerRouter,
    check_handler_shape,
    describe_handler,
    registered_as,
)

__all__ = [
    "CONFLICT_PROBLEM_TYPE",
    "DEFAULT_LEASE",
    "DUPLICATE_RESPONSE",
    "DEFAULT_RETENTION",
    "REQUEST_PARAMETER",
    "Attempt",
    "MissingRunHeadersError",
    "RunInProgressError",
    "RunOnceGuard",
    "RunRefusedError",
    "RunResult",
    "ScheduledRun",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

#: The logger every outcome of the guard is logged on (a child of ``scheduler_emulator.service``).
logger = logging.getLogger("scheduler_emulator.service.guard")

#: How long a claim holds by default. Keep it at least the job's attempt deadline (3 minutes by
#: default for HTTP targets, 30 at most) and longer than the work takes.
DEFAULT_LEASE = timedelta(minutes=5)
#: How long a record is kept by default (its ``expire_at``): past the job's retry window.
DEFAULT_RETENTION = timedelta(days=1)
#: The keyword-only parameter :meth:`RunOnceGuard.once` adds to a handler that has no
#: ``TimerRequest`` parameter, so that the router passes the request to the guard.
REQUEST_PARAMETER = "run_once_request"


@dataclass(frozen=True)
class ScheduledRun:
    """One scheduled run as the guard names it: job, schedule time and scope.

    :param job_name: the job's short name (the last ``/``-segment of ``X-CloudScheduler-JobName``).
    :param schedule_time: the raw ``X-CloudScheduler-ScheduleTime`` value, as sent (not
        re-formatted: Cloud Scheduler sends the same text on every retry of a run).
    :param scope: what else tells runs apart, such as ``"my-project/us-central1"`` when one
        endpoint serves jobs of several projects or regions (job ids repeat across them); ``None``
        for none.
    """

    job_name: str
    schedule_time: str
    scope: str | None = None

    @classmethod
    def from_headers(
        cls, headers: Mapping[str, str] | Iterable[tuple[str, str]], scope: str | None = None
    ) -> ScheduledRun:
        """Name the run a delivery belongs to, from its headers (any header-name case).

        :param headers: the request's headers: a mapping, a werkzeug ``Headers``, or
            ``(name, value)`` pairs.
        :param scope: see the class.
        :raises MissingRunHeadersError: when ``X-CloudScheduler-JobName`` (or its last segment)
            or ``X-CloudScheduler-ScheduleTime`` is absent or blank.
        :return: the run.
        """
        found = headers if isinstance(headers, CaseInsensitiveHeaders) else None
        if found is None:
            pairs = headers.items() if isinstance(headers, Mapping) else headers
            found = CaseInsensitiveHeaders(pairs)
        job_name = (found.get(JOB_NAME_HEADER) or "").rsplit("/", 1)[-1]
        schedule_time = found.get(SCHEDULE_TIME_HEADER) or ""
        missing = [
            name
            for name, value in ((JOB_NAME_HEADER, job_name), (SCHEDULE_TIME_HEADER, schedule_time))
            if not value.strip()
        ]
        if missing:
            raise MissingRunHeadersError(missing)
        return cls(job_name, schedule_time, scope)

    @property
    def text(self) -> str:
        """What the key hashes: ``"<job name>/<schedule time>"``, after ``"<scope>/"`` if any."""
        prefix = f"{self.scope}/" if self.scope else ""
        return f"{prefix}{self.job_name}/{self.schedule_time}"

    @property
    def key(self) -> str:
        """The run's key: the SHA-256 of :attr:`text` (UTF-8), 64 lower-case hex digits.

        >>> ScheduledRun("nightly", "2026-09-24T02:00:00Z").key[:16]
        'e113ee846d89745f'
        """
        return hashlib.sha256(self.text.encode()).hexdigest()

    def __str__(self) -> str:
        scope = f" ({self.scope})" if self.scope else ""
        return f"Job '{self.job_name}'{scope} run {self.schedule_time}"


@dataclass(frozen=True)
class Attempt:
    """One delivery's claim on a run, returned by :meth:`RunOnceGuard.claim`.

    When :attr:`outcome` is ``CLAIMED`` the run is this attempt's until ``lease_expires``: do the
    work, then call :meth:`complete` or :meth:`release` exactly once.

    :param run: the run.
    :param attempt_id: this attempt's id (``uuid4().hex``).
    :param claim: what the claim transaction found and did.
    :param store: the store holding the record.
    """

    run: ScheduledRun
    attempt_id: str
    claim: Claim
    store: RunStore = field(repr=False)

    @property
    def outcome(self) -> ClaimOutcome:
        """``CLAIMED`` (run the work), ``COMPLETED`` (answer 200) or ``IN_PROGRESS`` (409)."""
        return self.claim.outcome

    def complete(self) -> bool:
        """Mark the run ``completed``, in a transaction, if the record is still this attempt's.

        :return: ``False`` when the record was gone or held another ``attempt_id`` (this
            attempt's lease had run out and another attempt claimed the run); it is left alone.
        """
        return self.store.finish(self.run.key, self.attempt_id, succeeded=True)

    def release(self) -> bool:
        """Delete the run's record, in a transaction, if it is still this attempt's.

        The next retry can then claim the run at once instead of waiting for the lease.

        :return: ``False`` when the record was gone or held another ``attempt_id``; it is left
            alone.
        """
        return self.store.finish(self.run.key, self.attempt_id, succeeded=False)


@dataclass(frozen=True)
class RunResult(Generic[T]):
    """What :meth:`RunOnceGuard.run` did with one delivery that it did not refuse.

    :param attempt: the delivery's claim.
    :param ran: ``True`` when the work ran; ``False`` for a duplicate of a completed run.
    :param value: what the work returned (``None`` when it did not run).
    """

    attempt: Attempt
    ran: bool
    value: T | None = None


class _RefusalSlot:
    """Where a guarded handler leaves its answer (a refusal's, a duplicate's) for the router
    that called it, in place of the router's 200."""

    answer: TimerResponse | None = None


#: Set while a router that :meth:`RunOnceGuard.install` prepared dispatches a run.
_REFUSAL_SLOT: contextvars.ContextVar[_RefusalSlot | None] = contextvars.ContextVar(
    "scheduler_emulator_run_once_refusal", default=None
)
_INSTALLED = "__run_once_answers__"


def _utc_now() -> datetime:
    """The default clock: ``datetime.now(UTC)``.

    Not the emulator's clock: the guard runs in the user's service, and under the pytest plugin
    freezegun shows that service the virtual instant, which leases should then follow.
    """
    return datetime.now(UTC)


def _hints(handler: Callable[..., Any]) -> dict[str, Any]:
    """A handler's annotations, resolved (a callable object's ``__call__``'s).

    :param handler: the decorated callable.
    :return: the annotations by parameter name; ``{}`` when they do not resolve yet (the router
        then reports it when it registers the handler).
    """
    target: Any = handler
    if not inspect.isroutine(handler) and not isinstance(handler, functools.partial):
        target = type(handler).__call__
    try:
        return dict(inspect.get_annotations(target, eval_str=True))
    except Exception:  # forward references that resolve later: leave them to the router
        return {}


class RunOnceGuard:
    """Processes each scheduled run once, even when Cloud Scheduler delivers it twice.

    :param store: where claims are kept (:class:`~scheduler_emulator.service.RunStore`);
        ``None`` makes an in-memory :class:`~scheduler_emulator.service.SqliteRunStore`, which
        deduplicates within this process only. Use a SQLite file for several processes on one
        machine and :class:`~scheduler_emulator.service.FirestoreRunStore` across instances.
    :param lease: how long a claim holds before another attempt may take the run over; at least
        the job's attempt deadline and longer than the work takes (5 minutes).
    :param retention: how long after its claim a run's record is kept (``expire_at``, the TTL
        field); past the job's retry window (1 day). At least ``lease``.
    :param scope: a prefix of every run key, such as ``"my-project/us-central1"``, for an
        endpoint that serves the same job id from several projects or regions; slashes at its
        ends are dropped.
    :param clock: a zero-argument callable returning the current instant as an aware datetime
        (``datetime.now(UTC)`` by default); tests pass a manual clock's ``now``.
    :raises TypeError: for a store that is not a ``RunStore``, or durations that are not
        :class:`~datetime.timedelta`.
    :raises ValueError: for a non-positive lease, a retention shorter than the lease, or a blank
        scope.
    """

    def __init__(
        self,
        store: RunStore | None = None,
        *,
        lease: timedelta = DEFAULT_LEASE,
        retention: timedelta = DEFAULT_RETENTION,
        scope: str | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if store is not None and not isinstance(store, RunStore):
            raise TypeError(
                f"{store!r} is not a run store: it needs claim(), finish() and get() "
                "(see scheduler_emulator.service.RunStore)."
            )
        for name, value in (("lease", lease), ("retention", retention)):
            if not isinstance(value, timedelta):
                raise TypeError(
                    f"{name}={value!r}: pass a timedelta, such as timedelta(minutes=5)."
                )
        if lease <= timedelta(0):
            raise ValueError(f"lease={lease!r} is not positive.")
        if retention < lease:
            raise ValueError(
                f"retention={retention!r} is shorter than lease={lease!r}: a record could expire "
                "while its attempt still holds the run."
            )
        if scope is not None:
            if not isinstance(scope, str) or not scope.strip("/ "):
                raise ValueError(f"scope={scope!r} is blank; pass None for no scope.")
            scope = scope.strip("/")
        self.store: RunStore = store if store is not None else SqliteRunStore()
        self.lease = lease
        self.retention = retention
        self.scope = scope
        self._clock = clock or _utc_now
        self._installed = False  # on some router (install): what a refusal's note says

    def __repr__(self) -> str:
        return (
            f"RunOnceGuard({self.store!r}, lease={self.lease!r}, retention={self.retention!r}, "
            f"scope={self.scope!r})"
        )

    # ----------------------------------------------------------------------------- the core

    def now(self) -> datetime:
        """The guard's current instant, in UTC.

        :raises TimerClockError: when the clock returns something other than a datetime.
        :raises NaiveDatetimeError: when it returns a naive datetime.
        :return: the clock's instant converted to UTC.
        """
        now = self._clock()
        if not isinstance(now, datetime):
            raise TimerClockError(
                f"The run-once guard's clock returned {now!r}; it must return an aware datetime, "
                "such as datetime.now(UTC)."
            )
        return to_instant(now, "The run-once guard's clock returned")

    def run_for(self, headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> ScheduledRun:
        """Name the run a delivery belongs to, with this guard's scope: its key is made of
        ``X-CloudScheduler-JobName`` and ``X-CloudScheduler-ScheduleTime``.

        :param headers: the request's headers (any header-name case).
        :raises MissingRunHeadersError: when a header the key is made of is absent or blank.
        :return: the run; its :attr:`~ScheduledRun.key` is the record's key.
        """
        return ScheduledRun.from_headers(headers, self.scope)

    def claim(self, headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> Attempt:
        """Claim the run a delivery belongs to, in one store transaction.

        The low-level step under :meth:`run`, for integrations of your own: on ``CLAIMED`` do the
        work, then :meth:`Attempt.complete` or :meth:`Attempt.release`. Logs a WARNING when the
        claim takes over a run whose lease ran out.

        :param headers: the request's headers (any header-name case).
        :raises MissingRunHeadersError: when a header the key is made of is absent or blank.
        :raises TimerClockError: when the clock returns a naive datetime.
        :raises Exception: whatever the store raises (the database is locked, Firestore is
            unavailable...).
        :return: the attempt; see :attr:`Attempt.outcome`.
        """
        run = self.run_for(headers)
        now = self.now()
        record = RunRecord(
            status=RunStatus.IN_PROGRESS,
            attempt_id=uuid.uuid4().hex,
            lease_expires=now + self.lease,
            expire_at=now + self.retention,
            run=run.text,
        )
        claim = self.store.claim(run.key, record, now)
        attempt = Attempt(run, record.attempt_id, claim, self.store)
        if claim.outcome is ClaimOutcome.CLAIMED and claim.previous is not None:
            logger.warning(
                "%s: the lease of attempt %s ran out at %s before it finished; attempt %s takes "
                "the run over. If that attempt is still working, the work runs twice: make the "
                "lease longer than the work takes.",
                run,
                claim.previous.attempt_id,
                claim.previous.lease_expires.isoformat(),
                attempt.attempt_id,
            )
        elif claim.outcome is ClaimOutcome.CLAIMED:
            logger.debug("%s: claimed by attempt %s.", run, attempt.attempt_id)
        return attempt

    def run(
        self,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        work: Callable[[], T],
        *,
        succeeded: Callable[[T], bool] | None = None,
    ) -> RunResult[T]:
        """Run ``work`` for a delivery unless its run is done or in progress.

        The framework-neutral core of :meth:`once` and :meth:`view`. A duplicate of a completed
        run returns without running ``work`` (INFO log line); a refusal raises (WARNING log
        line). When ``work`` raises, the claim is released (the record deleted) and the exception
        propagates, so that the failure answers 5xx and a retry can run the work.

        :param headers: the request's headers (any header-name case).
        :param work: the run's work, called with no arguments.
        :param succeeded: tells from what ``work`` returned whether it succeeded (a view's
            answer: 2xx); ``None`` counts every return as success. On failure the claim is
            released and the value returned as is.
        :raises MissingRunHeadersError: (400) when a header the key is made of is missing.
        :raises RunInProgressError: (409) when another attempt holds a live lease on the run.
        :raises BaseException: whatever ``work`` raised, after the claim is released.
        :return: a :class:`RunResult`: ``ran`` and ``value``.
        """
        claimed = self._claim_to_run(headers)
        if isinstance(claimed, RunResult):
            return claimed
        try:
            value = work()
        except BaseException:
            self._finish(claimed, succeeded=False)
            raise
        return self._settle(claimed, value, succeeded)

    async def run_async(
        self,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        work: Callable[[], Awaitable[T]],
        *,
        succeeded: Callable[[T], bool] | None = None,
    ) -> RunResult[T]:
        """:meth:`run` for async work: the same claim, answers and log lines, ``work`` awaited.

        The store's transactions run on the calling thread (the SQLite store's are short; a
        cancelled ``work`` releases the claim like one that raised).

        :param headers: the request's headers (any header-name case).
        :param work: returns the awaitable of the run's work (``lambda: handler(order)``).
        :param succeeded: as for :meth:`run`.
        :raises MissingRunHeadersError, RunInProgressError, BaseException: as :meth:`run` does.
        :return: a :class:`RunResult`: ``ran`` and the awaited ``value``.
        """
        claimed = self._claim_to_run(headers)
        if isinstance(claimed, RunResult):
            return claimed
        try:
            value = await work()
        except BaseException:
            self._finish(claimed, succeeded=False)
            raise
        return self._settle(claimed, value, succeeded)

    def _settle(
        self, claimed: Attempt, value: T, succeeded: Callable[[T], bool] | None
    ) -> RunResult[T]:
        """Finish a run whose work returned ``value``: success unless ``succeeded`` says not.

        :raises BaseException: whatever ``succeeded`` raised, after the claim is released.
        """
        try:
            ok = succeeded is None or succeeded(value)
        except BaseException:
            self._finish(claimed, succeeded=False)
            raise
        self._finish(claimed, succeeded=ok)
        return RunResult(claimed, ran=True, value=value)

    def _claim_to_run(
        self, headers: Mapping[str, str] | Iterable[tuple[str, str]]
    ) -> Attempt | RunResult[Any]:
        """Claim the run; return the attempt to run the work under, or the duplicate's result.

        :raises MissingRunHeadersError: (400, logged) when a header is missing.
        :raises RunInProgressError: (409, logged) when another attempt holds a live lease.
        """
        try:
            attempt = self.claim(headers)
        except MissingRunHeadersError as refusal:
            logger.warning(
                "Run-once guard refused to run it (a delivery is answered 400): %s", refusal
            )
            raise
        if attempt.outcome is ClaimOutcome.COMPLETED:
            logger.info(
                "%s already completed; answered 200 without running it again (a duplicate "
                "delivery).",
                attempt.run,
            )
            return RunResult(attempt, ran=False)
        if attempt.outcome is ClaimOutcome.IN_PROGRESS:
            in_progress = RunInProgressError(attempt.run, attempt.claim.record)
            logger.warning("%s", in_progress)
            raise in_progress
        return attempt

    def _finish(self, attempt: Attempt, *, succeeded: bool) -> None:
        """Complete or release an attempt's claim and log what became of it, in one
        transaction that changes the record only while it is still this attempt's.

        A store error is logged with its traceback, not raised: the work's outcome decides the
        answer.

        :param attempt: a ``CLAIMED`` attempt whose work has ended.
        :param succeeded: whether the work succeeded.
        """
        what = "completed" if succeeded else "failed"
        try:
            ours = attempt.complete() if succeeded else attempt.release()
        except Exception:
            # A store failure now must not turn a finished run into a retry (that would run it
            # again once the lease is out).
            logger.exception(
                "%s %s in attempt %s, but the guard could not record that; the record stays "
                "in_progress until its lease runs out.",
                attempt.run,
                what,
                attempt.attempt_id,
            )
            return
        if not ours:
            logger.warning(
                "%s %s in attempt %s after its lease ran out: another attempt has claimed the "
                "run (or the record is gone), so the record is left alone. The work may have "
                "run twice: make the lease longer than the work takes.",
                attempt.run,
                what,
                attempt.attempt_id,
            )
        elif not succeeded:
            logger.info(
                "%s failed in attempt %s; its claim is released so that a retry can run it.",
                attempt.run,
                attempt.attempt_id,
            )

    # ------------------------------------------------------------------------- timer router

    def once(self, handler: F) -> F:
        """Decorate a :class:`~scheduler_emulator.service.TimerRouter` handler to run once per run.

        Stack it under ``@router.timer(name)``, and call :meth:`install` on the router once.
        The guard reads the run's headers from the handler's ``TimerRequest`` parameter; a
        handler without one gets an extra keyword-only parameter :data:`REQUEST_PARAMETER`
        annotated ``TimerRequest`` (visible to the router, not passed to the handler). The
        payload parameter binds as without the guard.

        Answers under an installed router: the handler returned → 200 (or the status of a
        response it returned, :meth:`TimerRouter.outcome`; a non-2xx one releases the claim, as
        a raise does, so that a retry runs the work); a duplicate of a completed run → 200
        without calling the handler (:data:`DUPLICATE_RESPONSE`: a line saying so); missing
        headers → 400, in progress → 409 (both ``application/problem+json``); the handler
        raised → the claim released, the exception re-raised, so the router logs it and
        answers its 500 problem. In function style
        (``router.invoke``) and under a router without :meth:`install`, a refusal raises
        :class:`MissingRunHeadersError` / :class:`RunInProgressError` instead (a router then
        answers 500).

        An ``async def`` handler gets an ``async def`` guard (:meth:`run_async`), which the
        router awaits under ASGI (and runs with :func:`asyncio.run` under WSGI).

        :param handler: a function, ``async def`` function or callable object.
        :raises TypeError: for a class, a handler a router registered already (``@guard.once``
            stacked above ``@router.timer``), or one that already has a parameter named
            :data:`REQUEST_PARAMETER` not annotated ``TimerRequest``.
        :return: the guarded handler (``__wrapped__`` is the original); a duplicate returns
            ``None``.
        """
        where = f"@guard.once on {describe_handler(handler)}"
        check_handler_shape(handler, where)
        timer = registered_as(handler)
        if timer is not None:
            raise TypeError(
                f"{where}: the handler is registered as timer {timer!r} already, so its router "
                f"would call it unguarded; stack @guard.once under @router.timer({timer!r}), "
                "next to the def."
            )
        signature = inspect.signature(handler)
        hints = _hints(handler)
        request_param = next(
            (
                name
                for name, param in signature.parameters.items()
                if param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
                and is_timer_request(hints.get(name, param.annotation))
            ),
            None,
        )
        if request_param is None and REQUEST_PARAMETER in signature.parameters:
            raise TypeError(
                f"{where}: the handler has a parameter {REQUEST_PARAMETER!r} that is not "
                "annotated TimerRequest; rename it, or annotate it TimerRequest."
            )

        def headers_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Mapping[str, str]:
            if request_param is None:
                request = kwargs.pop(REQUEST_PARAMETER, None)
            else:
                request = signature.bind_partial(*args, **kwargs).arguments.get(request_param)
            return request.headers if isinstance(request, TimerRequest) else {}

        def refused(refusal: RunRefusedError, slot: _RefusalSlot | None) -> None:
            if slot is None:
                refusal.add_note(
                    "The handler was invoked without a request (as function_testing invokes "
                    "it), so the refusal is raised, not answered. A cloud_run_testing façade "
                    "sends the request Cloud Scheduler sends, headers included."
                    if self._installed
                    else "Under a TimerRouter, call guard.install(router) once so that the "
                    f"router answers {refusal.status} instead of 500."
                )
                raise refusal
            slot.answer = refusal.response()

        guarded: Any
        if is_async_handler(handler):

            @functools.wraps(handler)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                headers = headers_of(args, kwargs)
                slot = _REFUSAL_SLOT.get()
                try:
                    result = await self.run_async(
                        headers, lambda: handler(*args, **kwargs), succeeded=acknowledges
                    )
                except RunRefusedError as refusal:
                    refused(refusal, slot)
                    return None
                if slot is not None and not result.ran:
                    slot.answer = DUPLICATE_RESPONSE
                return result.value

            guarded = guarded_async
        else:

            @functools.wraps(handler)
            def guarded_sync(*args: Any, **kwargs: Any) -> Any:
                headers = headers_of(args, kwargs)
                slot = _REFUSAL_SLOT.get()
                try:
                    result = self.run(
                        headers, lambda: handler(*args, **kwargs), succeeded=acknowledges
                    )
                except RunRefusedError as refusal:
                    refused(refusal, slot)
                    return None
                if slot is not None and not result.ran:
                    slot.answer = DUPLICATE_RESPONSE
                return result.value

            guarded = guarded_sync

        if request_param is None:
            params = list(signature.parameters.values())
            at = len(params) - (1 if params and params[-1].kind is params[-1].VAR_KEYWORD else 0)
            injected = inspect.Parameter(
                REQUEST_PARAMETER, inspect.Parameter.KEYWORD_ONLY, annotation=TimerRequest
            )
            params.insert(at, injected)
            guarded.__signature__ = signature.replace(parameters=params)
            annotations = {n: hints[n] for n in signature.parameters if n in hints}
            if "return" in hints:
                annotations["return"] = hints["return"]
            raw = {n: p.annotation for n, p in signature.parameters.items()}
            for name, annotation in raw.items():
                if name not in annotations and annotation is not inspect.Parameter.empty:
                    annotations[name] = annotation
            annotations[REQUEST_PARAMETER] = TimerRequest
            guarded.__annotations__ = annotations
        guarded.run_once_guard = self
        return cast(F, guarded)

    def install(self, router: TimerRouter) -> TimerRouter:
        """Make a router answer the guard's refusals with their own status (400, 409).

        A router answers 200 when a handler returns and 500 when it raises; this teaches it a
        third way: a :meth:`once` handler that refuses a delivery leaves its refusal for the
        router, which answers :meth:`RunRefusedError.response` (no ERROR log line, no exception
        propagated to a test). Covers every entry point that goes through
        :meth:`TimerRouter.dispatch <scheduler_emulator.service.TimerRouter.dispatch>` or its
        ASGI twin ``dispatch_async``: WSGI, ASGI, ``init_app``, ``handle_flask``,
        ``functions_framework_handler``. Installing twice, or from several guards, is harmless.

        :param router: the router whose handlers are guarded.
        :return: ``router``, so that ``router = guard.install(TimerRouter())`` works.
        """
        self._installed = True
        dispatch = router.dispatch
        if getattr(dispatch, _INSTALLED, False):
            return router

        dispatch_async = router.dispatch_async

        def answer(slot: _RefusalSlot, response: TimerResponse | None) -> TimerResponse | None:
            if slot.answer is not None and response is not None and response.status == 200:
                return slot.answer
            return response

        @functools.wraps(dispatch)
        def dispatch_answering_refusals(
            request: TimerRequest, name: str | None = None
        ) -> TimerResponse | None:
            slot = _RefusalSlot()
            token = _REFUSAL_SLOT.set(slot)
            try:
                response = dispatch(request, name)
            finally:
                _REFUSAL_SLOT.reset(token)
            return answer(slot, response)

        @functools.wraps(dispatch_async)
        async def dispatch_async_answering_refusals(
            request: TimerRequest, name: str | None = None
        ) -> TimerResponse | None:
            slot = _RefusalSlot()
            token = _REFUSAL_SLOT.set(slot)
            try:
                response = await dispatch_async(request, name)
            finally:
                _REFUSAL_SLOT.reset(token)
            return answer(slot, response)

        setattr(dispatch_answering_refusals, _INSTALLED, True)
        router.__dict__["dispatch"] = dispatch_answering_refusals
        router.__dict__["dispatch_async"] = dispatch_async_answering_refusals
        return router

    # --------------------------------------------------------- Flask and functions-framework

    def view(self, view: F) -> F:
        """Decorate a Flask view or a functions-framework function to run once per run
        (see :func:`~scheduler_emulator.service.guard_views.guard_view`).

        :param view: ``view(request) -> response`` or a Flask view taking route arguments.
        :raises TypeError: when called without a request and outside a Flask request.
        :return: the guarded view (``__wrapped__`` is the original).
        """
        return guard_view(self, view)
