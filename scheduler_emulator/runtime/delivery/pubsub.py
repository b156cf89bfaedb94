"""Pub/Sub targets: each attempt publishes one message to ``pubsubTarget.topicName``.

A :class:`PubsubDispatcher` turns an attempt into one call of a :class:`Publisher`: an
:class:`InProcessPublisher` (records every message, and pushes it to push subscriptions), an
:class:`~scheduler_emulator.runtime.delivery.pubsub_client.EmulatorPublisher` (a real Pub/Sub
emulator) or :class:`NoPublisher` (attempts fail, saying how to configure one). What production
does and what is pinned: docs/differences-from-production.md, "Pub/Sub and App Engine targets";
in-process::

    >>> from datetime import UTC, datetime
    >>> from scheduler_emulator.runtime._clock import ManualClock
    >>> publisher = InProcessPublisher(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))
    >>> publisher.publish("projects/p/topics/t", b"hi", {"k": "v"}, 60.0)
    '1'
    >>> [(m.data, m.attributes, m.publish_time) for m in publisher.published("projects/p/topics/t")]
    [(b'hi', {'k': 'v'}, '2026-01-01T00:00:00Z')]
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, cast

from ...domain.attempts import answer_text
from ...domain.outcomes import Outcome
from ...domain.resources import Job, PubsubTarget
from ...wire import format_timestamp
from .._clock import Clock
from ..storage.attempt_log import log_target_type
from .dispatchers import NotDispatched, Prepared
from .transports import DeliveryRequest, Transport, TransportResult

#: How long a publish may take (pinned: the Pub/Sub client library's default publish timeout;
#: ``attemptDeadline`` is ignored for Pub/Sub targets, as Google documents).
PUBLISH_TIMEOUT_SECONDS = 60.0
#: ``User-Agent`` of Pub/Sub push requests (Pub/Sub docs: "Receive messages from push
#: subscriptions").
PUSH_USER_AGENT = "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)"
#: What a job's attempt says when the daemon has no Pub/Sub emulator to publish to.
NOT_CONFIGURED = (  # (short: every table row of a Pub/Sub attempt shows it, trial 211)
    "EMULATOR_PUBSUB_NOT_CONFIGURED. No Pub/Sub emulator to publish to: restart with "
    "--with-pubsub, or point --pubsub-emulator-host (PUBSUB_EMULATOR_HOST) at a running one; "
    "docs/pubsub.md."
)


class PublishError(Exception):
    """A publish Pub/Sub refused.

    :param code: the google.rpc code name (``"NOT_FOUND"``, ``"PERMISSION_DENIED"``…).
    :param message: Pub/Sub's message (``"Topic not found"``).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Publisher(Protocol):
    """Publishes messages to Pub/Sub topics."""

    def unavailable(self) -> str | None:
        """Why no message can be published at all (recorded on the attempt), or ``None``."""

    def publish(
        self, topic: str, data: bytes, attributes: Mapping[str, str], timeout_seconds: float
    ) -> str:
        """Publish one message to ``topic`` (``projects/P/topics/T``); return its message ID.

        :raises PublishError: when Pub/Sub refuses or cannot be reached.
        """


class NoPublisher:
    """No Pub/Sub configured: every Pub/Sub attempt fails, saying :data:`NOT_CONFIGURED`."""

    def unavailable(self) -> str | None:
        """Always the reason."""
        return NOT_CONFIGURED

    def publish(
        self, topic: str, data: bytes, attributes: Mapping[str, str], timeout_seconds: float
    ) -> str:
        """Never publishes. :raises PublishError: FAILED_PRECONDITION with the reason."""
        raise PublishError("FAILED_PRECONDITION", NOT_CONFIGURED)


@dataclass(frozen=True)
class PushResult:
    """One push of a message to a push endpoint.

    :param subscription: ``projects/P/subscriptions/S``.
    :param endpoint: the push URL.
    :param status: the endpoint's HTTP status, ``None`` when it did not answer.
    :param detail: why there was no answer, else the answer's text
        (:func:`~scheduler_emulator.domain.attempts.answer_text`; trial 106: a 500 said nothing).
    """

    subscription: str
    endpoint: str
    status: int | None
    detail: str = ""

    @property
    def acknowledged(self) -> bool:
        """The endpoint acknowledged the message (Pub/Sub docs, push subscriptions)."""
        return self.status in (102, 200, 201, 202, 204)


@dataclass
class PubsubMessage:
    """A message an :class:`InProcessPublisher` accepted.

    :param topic: ``projects/P/topics/T``.
    :param data: the payload bytes (the job's ``pubsubTarget.data``, decoded).
    :param attributes: the message attributes.
    :param message_id: Pub/Sub's message ID (``"1"``, ``"2"``…).
    :param publish_time: RFC 3339 instant on the emulator's (virtual) clock.
    :param pushes: what each push subscription's endpoint answered, in order.
    """

    topic: str
    data: bytes
    attributes: dict[str, str]
    message_id: str
    publish_time: str
    pushes: list[PushResult] = field(default_factory=list)

    @property
    def text(self) -> str:
        """``data`` decoded as UTF-8."""
        return self.data.decode("utf-8")

    def push_body(self, subscription: str) -> dict[str, Any]:
        """The JSON body Pub/Sub POSTs to a push endpoint (:data:`PUSH_USER_AGENT`'s source):
        ``{"message": {"attributes", "data" (base64), "messageId", "message_id",
        "publishTime", "publish_time"}, "subscription"}``."""
        message: dict[str, Any] = {
            "data": base64.b64encode(self.data).decode("ascii"),
            "messageId": self.message_id,
            "message_id": self.message_id,
            "publishTime": self.publish_time,
            "publish_time": self.publish_time,
        }
        if self.attributes:
            message["attributes"] = dict(self.attributes)
        return {"message": message, "subscription": subscription}


class InProcessPublisher:
    """An in-memory Pub/Sub: records every message and pushes it to push subscriptions.

    :param clock: gives each message's ``publishTime`` (virtual time on a manual clock).
    :param transport: carries push requests (in-process for mounted URLs); without it,
        :meth:`subscribe_push` raises.
    :param topics: when given, only these topics exist (full names or IDs) and a publish to
        another fails with ``NOT_FOUND`` as in production; by default every topic exists.
    :param project: the project of topic IDs given without ``projects/P/topics/``.
    """

    def __init__(
        self,
        clock: Clock,
        transport: Transport | None = None,
        *,
        topics: list[str] | None = None,
        project: str = "my-project",
    ) -> None:
        self.clock = clock
        self.transport = transport
        self.project = project
        self._topics = None if topics is None else {self.topic_name(t) for t in topics}
        self._messages: list[PubsubMessage] = []
        self._subscriptions: list[tuple[str, str, str]] = []  # (name, topic, endpoint)
        self._lock = threading.Lock()

    def topic_name(self, topic: str) -> str:
        """Return the full name of ``topic`` (an ID or ``projects/P/topics/T``)."""
        return topic if topic.startswith("projects/") else f"projects/{self.project}/topics/{topic}"

    def create_topic(self, topic: str) -> str:
        """Make ``topic`` exist (only matters with ``topics=``); return its full name."""
        name = self.topic_name(topic)
        if self._topics is not None:
            self._topics.add(name)
        return name

    def unavailable(self) -> str | None:
        """Always available."""
        return None

    def subscribe_push(self, topic: str, endpoint: str, subscription: str | None = None) -> str:
        """Push every later message of ``topic`` to ``endpoint`` (a Pub/Sub push subscription).

        :param topic: topic ID or full name.
        :param endpoint: ``http(s)://`` URL; mounted URLs are called in-process.
        :param subscription: subscription ID or full name; default ``<topic ID>-push``.
        :raises ValueError: without a transport, or for a non-HTTP endpoint.
        :return: the subscription's full name.
        """
        if self.transport is None:
            raise ValueError("this publisher has no transport to push with; pass transport=.")
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"a push endpoint is an http(s) URL; got {endpoint!r}.")
        name = self.topic_name(topic)
        sub = subscription or name.rsplit("/", 1)[-1] + "-push"
        project = name.split("/")[1]
        full = sub if sub.startswith("projects/") else f"projects/{project}/subscriptions/{sub}"
        with self._lock:
            self._subscriptions.append((full, name, endpoint))
        return full

    def publish(
        self, topic: str, data: bytes, attributes: Mapping[str, str], timeout_seconds: float
    ) -> str:
        """Record the message, push it to each push subscription of ``topic``, return its ID.

        A push endpoint's answer does not change the publish (Pub/Sub acknowledged it); it is
        kept in :attr:`PubsubMessage.pushes`. Pushes are not retried (pinned).

        :raises PublishError: ``NOT_FOUND`` for a topic that does not exist (with ``topics=``).
        """
        if self._topics is not None and topic not in self._topics:
            known = ", ".join(sorted(self._topics)) or "none"  # (trial 215: no way out said)
            raise PublishError(
                "NOT_FOUND",
                f"Resource not found (resource={topic}). The topics that exist here are those "
                f"given as topics= ({known}): add its ID there.",
            )
        with self._lock:
            message = PubsubMessage(
                topic,
                bytes(data),
                dict(attributes),
                str(len(self._messages) + 1),
                format_timestamp(self.clock.now()),
            )
            self._messages.append(message)
            subscriptions = [(n, e) for n, t, e in self._subscriptions if t == topic]
        headers = {"Content-Type": "application/json", "User-Agent": PUSH_USER_AGENT}
        for name, endpoint in subscriptions:
            body = json.dumps(message.push_body(name)).encode()
            request = DeliveryRequest("POST", endpoint, headers, body)
            result = cast(Transport, self.transport).send(request, timeout_seconds)
            said = result.detail or answer_text(result.excerpt)
            message.pushes.append(PushResult(name, endpoint, result.status, said))
        return message.message_id

    def published(self, topic: str | None = None) -> list[PubsubMessage]:
        """Messages accepted so far, in publish order; only ``topic``'s (ID or full name) if set."""
        name = None if topic is None else self.topic_name(topic)
        with self._lock:
            return [m for m in self._messages if name is None or m.topic == name]


def pubsub_record(target: PubsubTarget) -> dict[str, Any]:
    """A Pub/Sub attempt's request record: ``{"targetType": "PUB_SUB", "pubsubTopic", "data"
    (base64), "attributes"}``, also for an attempt that could not be published."""
    return {
        "targetType": log_target_type("PUBSUB"),
        "pubsubTopic": target.topic_name,
        "data": base64.b64encode(target.data).decode("ascii"),
        "attributes": dict(target.attributes),
    }


class PubsubDispatcher:
    """Dispatcher of Pub/Sub targets (``job.target_type == "PUBSUB"``): each attempt publishes
    ``pubsubTarget.data`` with its ``attributes`` to its ``topicName`` through ``publisher``;
    the dispatcher itself sends the prepared target (:meth:`send`)."""

    def __init__(self, publisher: Publisher) -> None:
        self.publisher = publisher

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Prepare one publish (see :class:`.dispatchers.Dispatcher`), recorded as
        :func:`pubsub_record` says.

        :raises NotDispatched: when the publisher is unavailable (no Pub/Sub configured, or
            google-cloud-pubsub missing), with its reason.
        :raises ValueError: if the job has no Pub/Sub target.
        """
        target = job.pubsub_target
        if target is None:
            raise ValueError(f"job {job.name} has no pubsubTarget.")
        if (reason := self.publisher.unavailable()) is not None:
            raise NotDispatched(reason)
        return Prepared(pubsub_record(target), PUBLISH_TIMEOUT_SECONDS, self, target)

    def send(self, request: PubsubTarget, timeout_seconds: float) -> TransportResult:
        """Publish the message of a job's ``pubsubTarget`` within ``timeout_seconds``; the
        result carries the attempt's outcome (pinned texts; production logs show only the
        code): ``OK`` with ``PUBSUB_PUBLISHED. Message ID = <id>``, or the publish error's code
        with ``PUBSUB_ERROR. <message>``; never an HTTP status."""
        topic = request.topic_name
        try:
            message_id = self.publisher.publish(
                topic, request.data, dict(request.attributes), timeout_seconds
            )
        except PublishError as exc:
            text = f"PUBSUB_ERROR. Publishing to {topic} failed: {exc.message}"
            return TransportResult(detail=exc.message, outcome=Outcome(exc.code, text, None))
        text = f"PUBSUB_PUBLISHED. Message ID = {message_id} on {topic}"
        return TransportResult(outcome=Outcome("OK", text, None))
