"""Pub/Sub jobs against the daemon and a real Pub/Sub emulator (``PUBSUB_EMULATOR_HOST``).

CI (.ci/run) starts ``gcloud beta emulators pubsub start`` on a free port and exports its
address; without it these tests are skipped. The App Engine tests need no Pub/Sub emulator.
"""

from __future__ import annotations

import base64
import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.daemon import MANUAL, Daemon, running_daemon, serving
from tests.e2e.test_gcloud import Gcloud
from tests.support import RecordingTarget, free_port, wait_for

pubsub_v1 = pytest.importorskip(
    "google.cloud.pubsub_v1", reason="google-cloud-pubsub missing: pip install -e '.[test]'"
)

HOST = os.environ.get("PUBSUB_EMULATOR_HOST", "")
needs_pubsub = pytest.mark.skipif(
    not HOST,
    reason="PUBSUB_EMULATOR_HOST is not set: start `gcloud beta emulators pubsub start "
    "--host-port=127.0.0.1:8085` and export PUBSUB_EMULATOR_HOST=127.0.0.1:8085 (.ci/run does)",
)
needs_gcloud = pytest.mark.skipif(shutil.which("gcloud") is None, reason="gcloud is not on PATH")
PROJECT = "my-project"
PARENT = f"projects/{PROJECT}/locations/us-central1"
START = datetime(2026, 9, 24, 1, 59, tzinfo=UTC)


#: How long to wait for the Pub/Sub emulator and the daemon (seconds).
POLL_SECONDS = 20.0


class Topic:
    """A fresh topic with one pull subscription on the Pub/Sub emulator."""

    def __init__(self) -> None:
        self.id = f"t-{uuid.uuid4().hex[:10]}"
        self.name = f"projects/{PROJECT}/topics/{self.id}"
        self.subscription = f"projects/{PROJECT}/subscriptions/{self.id}-pull"
        self.publisher = pubsub_v1.PublisherClient()
        self.subscriber = pubsub_v1.SubscriberClient()
        self.publisher.create_topic(name=self.name)
        self.subscriber.create_subscription(name=self.subscription, topic=self.name)

    def pull(self, count: int, timeout: float = 20.0) -> list[Any]:
        """Pull and acknowledge messages until ``count`` arrived or ``timeout`` passed."""
        messages: list[Any] = []

        def more() -> bool:
            response = self.subscriber.pull(
                subscription=self.subscription, max_messages=10, timeout=5
            )
            if response.received_messages:
                ids = [m.ack_id for m in response.received_messages]
                self.subscriber.acknowledge(subscription=self.subscription, ack_ids=ids)
                messages.extend(m.message for m in response.received_messages)
            return len(messages) >= count

        wait_for(more, timeout)
        return messages

    def close(self) -> None:
        self.subscriber.delete_subscription(subscription=self.subscription)
        self.publisher.delete_topic(topic=self.name)
        self.subscriber.close()


@pytest.fixture
def topic() -> Iterator[Topic]:
    made = Topic()
    yield made
    made.close()


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    """A daemon on a manual clock; it reads PUBSUB_EMULATOR_HOST from the environment."""
    with running_daemon("--in-memory", *MANUAL) as live:
        yield live


def pubsub_job(topic: Topic, name: str = "sweep") -> dict[str, Any]:
    return {
        "name": f"{PARENT}/jobs/{name}",
        "schedule": "* * * * *",
        "pubsubTarget": {
            "topicName": topic.name,
            "data": base64.b64encode(b'{"kind": "sweep"}').decode(),
            "attributes": {"origin": "scheduler", "env": "test"},
        },
    }


@needs_pubsub
def test_http_and_pubsub_jobs_on_one_schedule_for_three_minutes(
    daemon: Daemon, topic: Topic
) -> None:
    daemon.reset(START)
    app = RecordingTarget()
    with serving(app) as base_url:
        http_job = {
            "name": f"{PARENT}/jobs/ping",
            "schedule": "* * * * *",
            "httpTarget": {"uri": f"{base_url}/ping"},
        }
        for body in (http_job, pubsub_job(topic)):
            response = daemon.post(f"/v1/{PARENT}/jobs", body)
            assert response.status_code == 200, response.text
        daemon.advance(180)
        assert len(app.wait_for(3)) == 3
    messages = topic.pull(3)
    assert [(m.data, dict(m.attributes)) for m in messages] == [
        (b'{"kind": "sweep"}', {"origin": "scheduler", "env": "test"})
    ] * 3
    for job in ("ping", "sweep"):
        attempts = wait_for(
            lambda job=job: len(daemon.attempts(job)) == 3 and daemon.attempts(job), POLL_SECONDS
        )
        assert [a["code"] for a in attempts] == ["OK"] * 3, attempts


@needs_pubsub
def test_a_missing_topic_is_a_not_found_attempt(daemon: Daemon) -> None:
    daemon.reset(START)
    missing = Topic.__new__(Topic)
    missing.name = f"projects/{PROJECT}/topics/missing-{uuid.uuid4().hex[:8]}"
    response = daemon.post(f"/v1/{PARENT}/jobs", pubsub_job(missing))
    assert response.status_code == 200, response.text
    daemon.advance(60)
    [attempt] = wait_for(lambda: daemon.attempts("sweep"), POLL_SECONDS)
    assert attempt["code"] == "NOT_FOUND", attempt


@needs_pubsub
@needs_gcloud
def test_gcloud_creates_describes_and_runs_a_pubsub_job(
    daemon: Daemon, topic: Topic, tmp_path: Path
) -> None:
    daemon.reset(START)
    gcloud = Gcloud.for_daemon(daemon, tmp_path)
    gcloud.ok(
        "create", "pubsub", "sweep", "--schedule=0 3 * * *", f"--topic={topic.name}",
        "--message-body=hello from gcloud", "--attributes=origin=gcloud,env=test",
    )  # fmt: skip
    described = gcloud.ok("describe", "sweep").stdout
    assert f"topicName: {topic.name}" in described
    gcloud.ok("run", "sweep")
    [message] = topic.pull(1)
    assert message.data == b"hello from gcloud"
    assert dict(message.attributes) == {"origin": "gcloud", "env": "test"}
    daemon.advance(0)  # waits for the accepted attempt's end
    [attempt] = daemon.attempts("sweep")
    assert attempt["code"] == "OK"


@needs_pubsub
def test_python_client_creates_describes_and_runs_a_pubsub_job(
    daemon: Daemon, topic: Topic
) -> None:
    from google.cloud import scheduler_v1

    daemon.reset(START)
    client = daemon.client()
    job = scheduler_v1.Job(
        name=f"{PARENT}/jobs/sweep",
        schedule="0 3 * * *",
        pubsub_target=scheduler_v1.PubsubTarget(
            topic_name=topic.name, data=b"from python", attributes={"origin": "python"}
        ),
    )
    created = client.create_job(parent=PARENT, job=job)
    assert created.pubsub_target.topic_name == topic.name
    assert client.get_job(name=job.name).pubsub_target.data == b"from python"
    client.run_job(name=job.name)
    [message] = topic.pull(1)
    assert (message.data, dict(message.attributes)) == (b"from python", {"origin": "python"})


@pytest.fixture(scope="module")
def worker() -> Iterator[tuple[RecordingTarget, str]]:
    app = RecordingTarget()
    with serving(app) as base_url:
        yield app, base_url


@pytest.fixture(scope="module")
def app_engine_daemon(worker: tuple[RecordingTarget, str]) -> Iterator[Daemon]:
    with running_daemon("--in-memory", *MANUAL, "--app-engine-url", f"worker={worker[1]}") as live:
        yield live


def test_python_client_creates_describes_and_runs_an_app_engine_job(
    app_engine_daemon: Daemon, worker: tuple[RecordingTarget, str]
) -> None:
    from google.cloud import scheduler_v1

    app = worker[0]
    client = app_engine_daemon.client()
    job = scheduler_v1.Job(
        name=f"{PARENT}/jobs/rollup",
        schedule="0 3 * * *",
        app_engine_http_target=scheduler_v1.AppEngineHttpTarget(
            relative_uri="/tasks/rollup",
            app_engine_routing=scheduler_v1.AppEngineRouting(service="worker"),
        ),
    )
    client.create_job(parent=PARENT, job=job)
    described = client.get_job(name=job.name)
    assert described.app_engine_http_target.app_engine_routing.service == "worker"
    client.run_job(name=job.name)
    [request] = app.wait_for(1)
    assert request.path == "/tasks/rollup"
    assert request.headers["X-Cloudscheduler-Jobname"] == "rollup"
    assert "AppEngine-Google" in request.headers["User-Agent"]


@needs_gcloud
def test_gcloud_creates_and_runs_an_app_engine_job(
    app_engine_daemon: Daemon, worker: tuple[RecordingTarget, str], tmp_path: Path
) -> None:
    app = worker[0]
    with app.lock:
        app.requests.clear()
    gcloud = Gcloud.for_daemon(app_engine_daemon, tmp_path)
    gcloud.ok(
        "create", "app-engine", "nightly-ae", "--schedule=0 3 * * *",
        "--service=worker", "--relative-url=/tasks/nightly",
    )  # fmt: skip
    assert "relativeUri: /tasks/nightly" in gcloud.ok("describe", "nightly-ae").stdout
    gcloud.ok("run", "nightly-ae")
    [request] = app.wait_for(1)
    assert request.path == "/tasks/nightly"


def test_an_unmapped_app_engine_service_fails_naming_the_flag(app_engine_daemon: Daemon) -> None:
    body = {
        "name": f"{PARENT}/jobs/other",
        "schedule": "0 3 * * *",
        "appEngineHttpTarget": {"relativeUri": "/", "appEngineRouting": {"service": "billing"}},
    }
    assert app_engine_daemon.post(f"/v1/{PARENT}/jobs", body).status_code == 200
    app_engine_daemon.post(f"/v1/{PARENT}/jobs/other:run")
    app_engine_daemon.advance(0)  # :run answers when accepted; a clock move sends it first
    [attempt] = app_engine_daemon.attempts("other")
    assert attempt["code"] == "FAILED_PRECONDITION"
    assert "--app-engine-url billing=" in attempt["debugInfo"]


@needs_gcloud
@pytest.mark.slow
def test_with_pubsub_starts_the_emulator_creates_the_topics_and_stops_it(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(
        "- name: sweep\n  schedule: '0 3 * * *'\n  pubsubTarget:\n"
        "    topicName: projects/my-project/topics/made-by-with-pubsub\n    data: aGk=\n"
    )
    port = free_port()  # --with-pubsub PORT: where the trial's firewall let it listen
    pubsub = ("--with-pubsub", str(port))
    with running_daemon("--in-memory", *MANUAL, *pubsub, "--jobs", str(jobs)) as live:
        line = live.first_line
        assert "created topic(s) projects/my-project/topics/made-by-with-pubsub" in line, line
        host = line.split("Pub/Sub emulator ", 1)[1].split(",", 1)[0]
        assert host == f"127.0.0.1:{port}"
        topic = requests.get(f"http://{host}/v1/projects/my-project/topics/made-by-with-pubsub")
        assert topic.status_code == 200, topic.text
        live.post(f"/v1/{PARENT}/jobs/sweep:run")
        live.advance(0)  # :run answers when accepted; a clock move sends it first
        [attempt] = live.attempts("sweep")
        assert attempt["code"] == "OK", attempt
        assert live.stop() == 0  # SIGTERM: the daemon stops the Pub/Sub emulator on its way out
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://{host}/", timeout=5)


@needs_gcloud
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_with_pubsub_creates_the_topics_of_the_data_directorys_jobs_too(tmp_path: Path) -> None:
    """Trial 229: a Pub/Sub job the data directory kept, no longer in the jobs file, got no
    topic in the new Pub/Sub emulator of a restart, and every run failed NOT_FOUND."""
    jobs, data = tmp_path / "jobs.yaml", ("--data-dir", str(tmp_path / "data"))
    jobs.write_text(
        "- name: sweep\n  schedule: '0 3 * * *'\n  pubsubTarget:\n"
        "    topicName: projects/my-project/topics/kept-job-topic\n    data: aGk=\n"
    )
    with running_daemon(*data, *MANUAL, "--jobs", str(jobs)) as live:
        assert live.stop() == 0
    pubsub = ("--with-pubsub", str(free_port()))
    with running_daemon(*data, "--clock", "manual", *pubsub) as live:  # the file left out
        line = live.first_line
        assert "created topic(s) projects/my-project/topics/kept-job-topic of the data " in line
        live.post(f"/v1/{PARENT}/jobs/sweep:run")
        live.advance(0)
        assert [a["code"] for a in live.attempts("sweep")] == ["OK"]
        assert live.stop() == 0
