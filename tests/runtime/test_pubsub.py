"""Pub/Sub targets in-process: the dispatcher, the in-process publisher, push, the log shape."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_emulator import Attempt, Emulator, ManualClock, MountTransport
from scheduler_emulator.runtime.delivery.pubsub import (
    NOT_CONFIGURED,
    InProcessPublisher,
    NoPublisher,
    Publisher,
    PublishError,
)
from scheduler_emulator.runtime.delivery.pubsub_client import MISSING_EXTRA
from scheduler_emulator.runtime.storage.attempt_log import AttemptLog
from tests.support import RecordingTarget

START = datetime(2026, 9, 24, 1, 59, tzinfo=UTC)
TOPIC = "projects/my-project/topics/orders"


def pubsub_job(**overrides: object) -> dict[str, object]:
    job: dict[str, object] = {
        "name": "sweep",
        "schedule": "* * * * *",
        "pubsubTarget": {
            "topicName": TOPIC,
            "data": base64.b64encode(b'{"kind": "sweep"}').decode(),
            "attributes": {"origin": "scheduler"},
        },
    }
    job.update(overrides)
    return job


def test_each_run_publishes_the_jobs_data_and_attributes() -> None:
    clock = ManualClock(START)
    emulator = Emulator(clock)
    emulator.create_job(pubsub_job())
    emulator.advance(timedelta(minutes=3))
    messages = emulator.publisher.published(TOPIC)  # type: ignore[attr-defined]
    assert [(m.data, m.attributes) for m in messages] == [
        (b'{"kind": "sweep"}', {"origin": "scheduler"})
    ] * 3
    assert [m.publish_time for m in messages] == [
        "2026-09-24T02:00:00Z",
        "2026-09-24T02:01:00Z",
        "2026-09-24T02:02:00Z",
    ]
    attempts = emulator.attempts("sweep")
    assert [a.code for a in attempts] == ["OK"] * 3
    assert attempts[0].response_status is None
    assert attempts[0].debug_info.startswith("PUBSUB_PUBLISHED. Message ID = 1")
    assert attempts[0].request["pubsubTopic"] == TOPIC
    assert emulator.get_job("sweep").status is not None
    assert emulator.get_job("sweep").status.code == 0  # type: ignore[union-attr]


def test_a_missing_topic_is_not_found_and_retried_under_retry_config() -> None:
    clock = ManualClock(START)
    publisher = InProcessPublisher(clock, topics=["other"])
    emulator = Emulator(clock, publisher=publisher)
    emulator.create_job(pubsub_job(retryConfig={"retryCount": 2}))
    emulator.advance(timedelta(seconds=61 + 5 + 10))
    attempts = emulator.attempts("sweep")
    assert [a.code for a in attempts] == ["NOT_FOUND"] * 3
    assert "Resource not found" in attempts[0].debug_info
    assert attempts[0].debug_info.endswith(  # what to do (trial 215)
        "The topics that exist here are those given as topics= (projects/my-project/topics/"
        "other): add its ID there."
    )
    status = emulator.get_job("sweep").status
    assert status is not None and status.code == 5  # google.rpc NOT_FOUND
    publisher.create_topic("orders")
    emulator.advance(timedelta(minutes=1))
    assert emulator.attempts("sweep")[-1].code == "OK"


def first_attempt(publisher: Publisher) -> Attempt:
    """The one attempt of the Pub/Sub job ``sweep``'s first run, published through
    ``publisher`` by an emulator on a manual clock at :data:`START`."""
    emulator = Emulator(ManualClock(START), publisher=publisher)
    emulator.create_job(pubsub_job())
    emulator.advance(timedelta(minutes=1))
    [attempt] = emulator.attempts("sweep")
    return attempt


def test_run_job_answers_the_run_accepted_not_its_attempt_that_failed_at_once() -> None:
    """A trial: the daemon's RunJob of a Pub/Sub job with no Pub/Sub emulator answered with the
    attempt's FAILED_PRECONDITION status already set; an HTTP job's answered without one."""
    emulator = Emulator(ManualClock(START), publisher=NoPublisher())
    emulator.create_job(pubsub_job())
    assert emulator.run_job("sweep", wait=False).status is None
    assert emulator.get_job("sweep").status is not None  # the attempt was recorded all the same


def test_without_a_publisher_the_attempt_says_how_to_configure_one() -> None:
    attempt = first_attempt(NoPublisher())
    assert attempt.code == "FAILED_PRECONDITION"
    assert attempt.debug_info == NOT_CONFIGURED
    assert "PUBSUB_EMULATOR_HOST" in attempt.debug_info
    assert "--pubsub-emulator-host" in attempt.debug_info
    # The record still says what it would have published, spelled as a prepared one is (a
    # trial's dashboard showed "data: (empty)" for such an attempt).
    assert attempt.request == {
        "targetType": "PUB_SUB",
        "pubsubTopic": TOPIC,
        "data": base64.b64encode(b'{"kind": "sweep"}').decode(),
        "attributes": {"origin": "scheduler"},
    }


class Refusing:
    """A publisher that refuses with ``code``, or reports itself unavailable."""

    def __init__(self, code: str = "PERMISSION_DENIED", missing: str | None = None) -> None:
        self.code, self.missing = code, missing

    def unavailable(self) -> str | None:
        return self.missing

    def publish(
        self, topic: str, data: bytes, attributes: Mapping[str, str], timeout_seconds: float
    ) -> str:
        raise PublishError(self.code, "User not authorized to perform this action.")


def test_a_permission_error_is_recorded_with_its_code() -> None:
    attempt = first_attempt(Refusing())
    assert attempt.code == "PERMISSION_DENIED"
    assert "not authorized" in attempt.debug_info


def test_a_missing_library_names_the_extra() -> None:
    attempt = first_attempt(Refusing(missing=MISSING_EXTRA))
    assert "cloud-scheduler-emulator[pubsub]" in attempt.debug_info


def test_log_entries_carry_pubsub_topic_and_pub_sub_target_type() -> None:
    stream = io.StringIO()
    emulator = Emulator(ManualClock(START), attempt_log=AttemptLog(stream))
    emulator.create_job(pubsub_job())
    emulator.advance(timedelta(minutes=1))
    started, finished = (json.loads(line) for line in stream.getvalue().splitlines())
    assert started["jsonPayload"]["targetType"] == "PUB_SUB"
    assert started["jsonPayload"]["pubsubTopic"] == TOPIC
    assert "url" not in started["jsonPayload"]
    assert finished["jsonPayload"] == {
        "@type": "type.googleapis.com/google.cloud.scheduler.logging.AttemptFinished",
        "jobName": "projects/my-project/locations/us-central1/jobs/sweep",
        "pubsubTopic": TOPIC,
        "targetType": "PUB_SUB",
    }
    assert "httpRequest" not in finished and finished["severity"] == "INFO"


def test_faults_apply_to_publishes() -> None:
    emulator = Emulator(ManualClock(START))
    emulator.faults.add(action="connection_error", job="sweep", attempt=1)
    emulator.create_job(pubsub_job(retryConfig={"retryCount": 1}))
    emulator.advance(timedelta(seconds=70))
    assert [a.code for a in emulator.attempts("sweep")] == ["UNAVAILABLE", "OK"]
    assert len(emulator.publisher.published()) == 1  # type: ignore[attr-defined]


def test_push_posts_the_envelope_to_the_endpoint() -> None:
    clock = ManualClock(START)
    app = RecordingTarget(status=204)
    transport = MountTransport({"http://svc.test": app})
    publisher = InProcessPublisher(clock, transport)
    subscription = publisher.subscribe_push("orders", "http://svc.test/pubsub")
    emulator = Emulator(clock, transport=transport, publisher=publisher)
    emulator.create_job(pubsub_job())
    emulator.advance(timedelta(minutes=1))
    [request] = app.requests
    assert request.path == "/pubsub" and request.method == "POST"
    assert request.headers["Content-Type"] == "application/json"
    body = json.loads(request.body)
    assert body == {
        "message": {
            "data": base64.b64encode(b'{"kind": "sweep"}').decode(),
            "attributes": {"origin": "scheduler"},
            "messageId": "1",
            "message_id": "1",
            "publishTime": "2026-09-24T02:00:00Z",
            "publish_time": "2026-09-24T02:00:00Z",
        },
        "subscription": subscription,
    }
    assert subscription == "projects/my-project/subscriptions/orders-push"
    [message] = publisher.published("orders")
    assert [p.acknowledged for p in message.pushes] == [True]


def test_a_refused_push_keeps_what_the_endpoint_answered() -> None:
    """Trial 106: a push answered 500 kept an empty ``detail``."""
    clock = ManualClock(START)
    body = b'{"error": {"code": 500, "message": "ledger locked", "status": "INTERNAL"}}'
    transport = MountTransport({"http://svc.test": RecordingTarget(status=500, body=body)})
    publisher = InProcessPublisher(clock, transport)
    publisher.subscribe_push("orders", "http://svc.test/pubsub")
    emulator = Emulator(clock, transport=transport, publisher=publisher)
    emulator.create_job(pubsub_job())
    emulator.advance(timedelta(minutes=1))
    [push] = publisher.published("orders")[0].pushes
    assert (push.status, push.acknowledged, push.detail) == (500, False, "INTERNAL: ledger locked")


def test_push_needs_an_http_endpoint_and_a_transport() -> None:
    clock = ManualClock(START)
    with pytest.raises(ValueError, match="transport"):
        InProcessPublisher(clock).subscribe_push("orders", "http://svc.test/")
    with pytest.raises(ValueError, match="http"):
        InProcessPublisher(clock, MountTransport()).subscribe_push("orders", "svc.test/")


def test_python_api_rest_json_round_trip_of_a_pubsub_job() -> None:
    emulator = Emulator(ManualClock(START))
    job = emulator.create_job(pubsub_job(attemptDeadline="30s"))
    assert job.pubsub_target is not None and job.attempt_deadline is None
