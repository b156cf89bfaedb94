"""Dispatchers: one per target kind, each turning an attempt of a job into something sent.

The engine asks the dispatcher of the job's target kind (``job.target_type``: ``"HTTP"``,
``"PUBSUB"``, ``"APP_ENGINE_HTTP"``) to :meth:`~Dispatcher.prepare` the attempt; the result is a
:class:`Prepared`: what the attempt record shows of the request, the attempt deadline, and a
function that sends it once (fault injection may call it several times, or not at all). A kind
with no dispatcher gets an attempt recorded as failed with :class:`NotDispatched`'s message.
The :class:`~scheduler_emulator.Emulator` makes one dispatcher per kind at construction;
:meth:`~scheduler_emulator.Emulator.set_dispatcher` replaces one (the Firebase bridge wraps
them that way).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..domain.resources import DEFAULT_ATTEMPT_DEADLINE, Job
from ..wire import spell_headers
from ._dispatch import RequestTemplate, http_template
from ._options import DEFAULT_HEADER_CASE
from ._transports import DeliveryRequest, OnResult, Transport, TransportResult, starting

if TYPE_CHECKING:
    from ._tokens import TokenAuthority


class NotDispatched(Exception):
    """The attempt cannot be made; the message says why and what to do (recorded on the
    attempt as its debug text)."""


@dataclass(frozen=True)
class Prepared:
    """One attempt, ready to send.

    :param record: what the attempt record shows as ``request`` (``{"method", "url",
        "headers"}`` for HTTP kinds; kind-specific keys otherwise). JSON-serialisable.
    :param timeout_seconds: the attempt deadline, in seconds.
    :param send: sends the attempt once, given the deadline in seconds; never raises for a
        target's failure (a :class:`~scheduler_emulator.runtime._transports.TransportResult`
        says what happened).
    :param retry_always: HTTP statuses retried whatever the retry config and not counted
        against ``retryCount`` (App Engine targets: ``{503}``).
    :param start: begins sending the attempt once without blocking the calling thread, given
        the deadline in seconds and a function called once with the result (on any thread).
        ``None`` when the attempt cannot be sent that way: ``send`` only.
    """

    record: dict[str, Any]
    timeout_seconds: float
    send: Callable[[float], TransportResult]
    retry_always: frozenset[int] = frozenset()
    start: Start | None = None


#: Begins one send: ``start(deadline_seconds, done) -> began`` (see :attr:`Prepared.start`).
Start = Callable[[float, OnResult], bool]


def prepared_request(
    record: dict[str, Any],
    timeout_seconds: float,
    transport: Transport,
    request: DeliveryRequest,
    retry_always: frozenset[int] = frozenset(),
) -> Prepared:
    """The :class:`Prepared` of an attempt that is one HTTP request sent by ``transport``:
    ``send`` through :meth:`~scheduler_emulator.Transport.send`, and
    ``start`` through the transport's ``start`` when it is a
    :class:`~scheduler_emulator.runtime._transports.StartingTransport`."""
    starter = starting(transport)
    start = None
    if starter is not None and starter.can_start(request):
        start = partial(starter.start, request)
    return Prepared(record, timeout_seconds, partial(transport.send, request), retry_always, start)


class Dispatcher(Protocol):
    """Prepares attempts of the jobs of one target kind."""

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Prepare one attempt of ``job`` at ``now`` (aware UTC).

        :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` value, or ``None``.
        :raises NotDispatched: when the attempt cannot be made (say why in the message).
        """
        ...


class HttpDispatcher:
    """HTTP targets: the request of :func:`~scheduler_emulator.runtime._dispatch.
    http_template` (kept per job configuration), with an OIDC/OAuth token when the job asks
    for one, sent by ``transport``.

    :param transport: how requests reach targets.
    :param tokens: mints ``Authorization`` tokens; ``None`` sends none.
    :param header_case: how header names are spelled (:data:`~scheduler_emulator.wire.
        HEADER_CASES`): the scheduler's and the job's own alike.
    """

    def __init__(
        self,
        transport: Transport,
        tokens: TokenAuthority | None = None,
        *,
        header_case: str = DEFAULT_HEADER_CASE,
    ) -> None:
        self.transport = transport
        self.tokens = tokens
        self.header_case = header_case
        # Job name -> (the job configuration, with a token?, its template, deadline seconds):
        # what its attempts share, worked out again only when the job is replaced.
        self._templates: dict[str, tuple[Job, bool, RequestTemplate, float]] = {}

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Build the attempt's request (see :class:`Dispatcher`)."""
        authorization = None if self.tokens is None else self.tokens.authorization(job, now)
        token = authorization is not None
        known = self._templates.get(job.name)
        if known is None or known[0] is not job or known[1] != token:
            deadline = (job.attempt_deadline or DEFAULT_ATTEMPT_DEADLINE).total_seconds()
            if len(self._templates) >= _TEMPLATES:  # jobs deleted or renamed: start afresh
                self._templates.clear()
            known = self._templates[job.name] = (job, token, http_template(job, token), deadline)
        request = known[2].build(schedule_time, authorization)
        deadline = known[3]
        if self.header_case != "google":
            headers = spell_headers(dict(request.headers), self.header_case)
            request = replace(request, headers=headers)
        record = {"method": request.method, "url": request.url, "headers": dict(request.headers)}
        return prepared_request(record, deadline, self.transport, request)


#: Request templates kept at most (one per job; past that they are made afresh).
_TEMPLATES = 1024


def dispatcher_for(dispatchers: Mapping[str, Dispatcher], job: Job) -> Dispatcher:
    """Return the dispatcher of the job's target kind.

    :raises NotDispatched: when there is none, naming the kind.
    """
    dispatcher = dispatchers.get(job.target_type)
    if dispatcher is None:
        raise NotDispatched(
            f"EMULATOR_NOT_DISPATCHED. This emulator does not deliver {job.target_type} "
            "targets yet; the job is stored and its runs are recorded, but nothing is sent."
        )
    return dispatcher
