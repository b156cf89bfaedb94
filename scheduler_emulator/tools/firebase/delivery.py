"""Delivering the jobs of scheduled functions to the Functions emulator.

:class:`FirebaseDispatcher` wraps the emulator's dispatcher of one target kind and takes over
the jobs the bridge routes (by job name); every other job goes to the wrapped dispatcher:

- a v2 function's job is an ordinary HTTP job whose URI is the trigger route: the wrapped HTTP
  dispatcher sends it (Cloud Scheduler's headers, the OIDC token);
- a v1 function's job is a Pub/Sub job, as in production; instead of publishing, each attempt
  POSTs the legacy event the function would receive from Pub/Sub to the trigger route, with
  ``context.timestamp`` = the run's schedule time in UTC (English-like schedules such as
  ``every 5 minutes`` have no schedule time header: the attempt's start then), see
  :func:`~scheduler_emulator.tools.firebase.functions.legacy_event`. The function's answer is
  the attempt's outcome (a failure is retried per the job's retry config).

For both, a 204 is the Functions emulator saying that background triggers are disabled
(``PUT /functions/disableBackgroundTriggers`` on the hub): the function did not run, and the
attempt's debug text says so. A 404 means the trigger key changed (a reload): the bridge is asked
to look again (``on_not_found``) so that the retry goes to the new key.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast

from ...domain.outcomes import Failure, Outcome
from ...domain.resources import Job
from ...runtime.delivery.dispatchers import Dispatcher, Prepared, Sender
from ...runtime.delivery.transports import (
    DeliveryRequest,
    OnResult,
    StartingTransport,
    Transport,
    TransportResult,
    startable,
)
from ...wire import format_timestamp, parse_schedule_time
from .functions import legacy_event

#: Debug text of an attempt the Functions emulator answered with 204 (triggers disabled).
TRIGGERS_DISABLED = (
    "URL_CRAWLED. Original HTTP response code number = 204. FIREBASE_TRIGGERS_DISABLED. The "
    "Functions emulator did not run the function: background triggers are currently disabled "
    "(PUT /functions/disableBackgroundTriggers on the hub; PUT "
    "/functions/enableBackgroundTriggers enables them)."
)
#: What an attempt's debug text adds when the Functions emulator answered 5xx with no body
#: (short enough to stay whole in a 160-character REASON after production's words: trial 101).
FUNCTION_FAILED = "The function threw or failed: see the firebase emulators:start terminal"
#: What it adds when the Functions emulator does not take the connection (trial 101).
FUNCTIONS_DOWN = "Is the Functions emulator running (firebase emulators:start)?"


@dataclass(frozen=True)
class Route:
    """Where the job of one scheduled function is delivered.

    :param url: the trigger route (``http://<functions>/functions/projects/P/triggers/<key>``).
    :param legacy: send the v1 legacy event (v1 functions' Pub/Sub jobs).
    :param deadline_seconds: the attempt deadline of legacy deliveries, seconds.
    """

    url: str
    legacy: bool
    deadline_seconds: float


class FirebaseDispatcher:
    """Delivers the routed jobs (see the module), hands every other job to ``inner``.

    :param inner: the dispatcher of the target kind being wrapped.
    :param transport: carries legacy deliveries.
    :param routes: job name -> :class:`Route`; read at each attempt (the bridge replaces it).
    :param on_not_found: called when a routed delivery gets a 404.
    """

    def __init__(
        self,
        inner: Dispatcher,
        transport: Transport,
        routes: Callable[[], Mapping[str, Route]],
        on_not_found: Callable[[], None] | None = None,
    ) -> None:
        self.inner = inner
        self.transport = transport
        self.routes = routes
        self.on_not_found = on_not_found

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Prepare one attempt (see :class:`~scheduler_emulator.runtime.delivery.dispatchers.
        Dispatcher`)."""
        route = self.routes().get(job.name)
        if route is None:
            return self.inner.prepare(job, schedule_time, now)
        if route.legacy and job.pubsub_target is not None:
            at = parse_schedule_time(schedule_time) if schedule_time else now
            prepared = self._legacy(job, route, format_timestamp(at))
        else:
            prepared = self.inner.prepare(job, schedule_time, now)
        return replace(prepared, transport=_Answered(prepared.transport, self.on_not_found))

    def _legacy(self, job: Job, route: Route, timestamp: str) -> Prepared:
        target = job.pubsub_target
        assert target is not None
        event = legacy_event(
            target.topic_name,
            target.attributes,
            base64.b64encode(target.data).decode("ascii"),
            timestamp,
            str(uuid.uuid4()),
        )
        headers = {"Content-Type": "application/json"}
        request = DeliveryRequest("POST", route.url, headers, json.dumps(event).encode())
        # As the Pub/Sub dispatcher's record: the attempt log's PUB_SUB entries (AttemptStarted/
        # AttemptFinished) name the job's topic from it.
        record = {
            "targetType": "PUB_SUB",
            "pubsubTopic": target.topic_name,
            "method": "POST",
            "url": route.url,
            "headers": headers,
            "event": event,
        }
        return Prepared(
            record,
            route.deadline_seconds,
            self.transport,
            request,
            startable=startable(self.transport, request),
        )


class _Answered:
    """Sends through ``inner`` and reads the answer as the Functions emulator means it: 204 is
    its "triggers disabled", a 404 asks for the routes again (``on_not_found``)."""

    def __init__(self, inner: Sender, on_not_found: Callable[[], None] | None) -> None:
        self.inner = inner
        self.on_not_found = on_not_found

    def send(self, request: Any, timeout_seconds: float) -> TransportResult:
        """Send through the wrapped sender (see :class:`~scheduler_emulator.Transport`)."""
        return self._answered(self.inner.send(request, timeout_seconds))

    def start(self, request: DeliveryRequest, timeout_seconds: float, done: OnResult) -> bool:
        """Begin through the wrapped transport's ``start`` (see
        :class:`~scheduler_emulator.runtime.delivery.transports.StartingTransport`)."""
        starter = cast(StartingTransport, self.inner)  # asked only when the inner one can
        return starter.start(request, timeout_seconds, lambda result: done(self._answered(result)))

    def close(self) -> None:
        """Nothing of its own to release (the emulator closes its transport)."""

    def _answered(self, result: TransportResult) -> TransportResult:
        if result.status == 204 and result.outcome is None:
            result.outcome = Outcome("OK", TRIGGERS_DISABLED, 204)
        elif result.status == 404 and self.on_not_found is not None:
            self.on_not_found()
        elif (result.status or 0) >= 500 and not (result.detail or result.excerpt):
            result.detail = FUNCTION_FAILED  # (trial 79: an empty 500, and no word of where)
        elif result.failure is Failure.CONNECTION:
            result.detail = f"{result.detail} {FUNCTIONS_DOWN}".lstrip()
        return result
