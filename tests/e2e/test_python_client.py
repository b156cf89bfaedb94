"""``google-cloud-scheduler`` (REST transport) against the live daemon.

The client asks for integer enums (``$alt=json;enum-encoding=int``), omits ``name`` from the
PATCH body and picks its exception class from the HTTP status alone: 404 → ``NotFound``,
409 → ``Conflict`` (never its subclass ``AlreadyExists``), 400 → ``BadRequest``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.support import RecordingTarget, assert_delivered

try:
    from google.api_core import exceptions
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import scheduler_v1
except ImportError as exc:  # pragma: no cover - depends on the environment
    pytest.skip(
        f"google-cloud-scheduler is not importable ({exc}); pip install -e '.[test]'",
        allow_module_level=True,
    )

PARENT = "projects/my-project/locations/us-central1"
NIGHTLY = f"{PARENT}/jobs/nightly"


@pytest.fixture(scope="module")
def client(module_daemon: Daemon) -> Iterator[scheduler_v1.CloudSchedulerClient]:
    """A REST ``CloudSchedulerClient`` with anonymous credentials pointed at the daemon."""
    with scheduler_v1.CloudSchedulerClient(
        credentials=AnonymousCredentials(),
        transport="rest",
        client_options=ClientOptions(api_endpoint=module_daemon.url),
    ) as client:
        yield client


def nightly(uri: str, name: str = NIGHTLY) -> scheduler_v1.Job:
    """The Orders example's nightly job (retryCount 3) pointed at ``uri``."""
    return scheduler_v1.Job(
        name=name,
        schedule="0 2 * * *",
        time_zone="Etc/UTC",
        http_target=scheduler_v1.HttpTarget(uri=uri, http_method=scheduler_v1.HttpMethod.POST),
        retry_config=scheduler_v1.RetryConfig(retry_count=3),
    )


@pytest.fixture
def created(
    daemon: Daemon,
    client: scheduler_v1.CloudSchedulerClient,
    served_target: tuple[RecordingTarget, str],
) -> scheduler_v1.Job:
    """The nightly job, created through the client on a reset daemon."""
    return client.create_job(parent=PARENT, job=nightly(served_target[1]))


class TestJobLifecycle:
    def test_create_returns_the_normalised_enabled_job(
        self,
        daemon: Daemon,
        client: scheduler_v1.CloudSchedulerClient,
        served_target: tuple[RecordingTarget, str],
    ) -> None:
        job = client.create_job(parent=PARENT, job=nightly(served_target[1]))

        assert job.name == NIGHTLY
        assert job.state == scheduler_v1.Job.State.ENABLED
        assert job.http_target.http_method == scheduler_v1.HttpMethod.POST
        assert job.attempt_deadline == timedelta(seconds=180)
        assert job.retry_config.retry_count == 3
        assert job.schedule_time == datetime(2026, 9, 24, 2, 0, tzinfo=UTC)
        assert job.user_update_time == datetime(2026, 9, 24, 1, 59, tzinfo=UTC)

    def test_get_returns_the_created_job(
        self, created: scheduler_v1.Job, client: scheduler_v1.CloudSchedulerClient
    ) -> None:
        job = client.get_job(name=NIGHTLY)

        assert job == created

    def test_list_pager_follows_page_tokens_over_five_jobs(
        self,
        daemon: Daemon,
        client: scheduler_v1.CloudSchedulerClient,
        served_target: tuple[RecordingTarget, str],
    ) -> None:
        names = [f"{PARENT}/jobs/{job}" for job in ("a", "b", "c", "d", "e")]
        for name in names:
            client.create_job(parent=PARENT, job=nightly(served_target[1], name=name))

        pager = client.list_jobs(request={"parent": PARENT, "page_size": 2})

        pages = list(pager.pages)
        assert [len(page.jobs) for page in pages] == [2, 2, 1]
        assert [job.name for page in pages for job in page.jobs] == names
        assert pages[-1].next_page_token == ""

    def test_update_with_a_mask_changes_the_schedule_and_keeps_the_retry_config(
        self, created: scheduler_v1.Job, client: scheduler_v1.CloudSchedulerClient
    ) -> None:
        # The REST transport sends `name` only in the URL, not in the PATCH body.
        job = client.update_job(
            job=scheduler_v1.Job(name=NIGHTLY, schedule="0 3 * * *"),
            update_mask={"paths": ["schedule"]},
        )

        assert job.schedule == "0 3 * * *"
        assert job.schedule_time == datetime(2026, 9, 24, 3, 0, tzinfo=UTC)
        assert job.retry_config == created.retry_config
        assert job.http_target == created.http_target
        assert job.state == scheduler_v1.Job.State.ENABLED
        assert client.get_job(name=NIGHTLY) == job

    def test_pause_then_resume_switch_the_state(
        self, created: scheduler_v1.Job, client: scheduler_v1.CloudSchedulerClient
    ) -> None:
        paused = client.pause_job(name=NIGHTLY)
        assert paused.state == scheduler_v1.Job.State.PAUSED
        assert client.get_job(name=NIGHTLY).state == scheduler_v1.Job.State.PAUSED

        resumed = client.resume_job(name=NIGHTLY)
        assert resumed.state == scheduler_v1.Job.State.ENABLED
        assert resumed.schedule_time == datetime(2026, 9, 24, 2, 0, tzinfo=UTC)

    def test_run_delivers_a_forced_request_to_the_target(
        self,
        created: scheduler_v1.Job,
        client: scheduler_v1.CloudSchedulerClient,
        served_target: tuple[RecordingTarget, str],
    ) -> None:
        job = client.run_job(name=NIGHTLY)

        assert job.state == scheduler_v1.Job.State.ENABLED
        [request] = served_target[0].wait_for(1)
        # Our pinned rule: a forced run carries the job's next scheduled time.
        assert_delivered(request, "2026-09-24T02:00:00Z")

    def test_delete_removes_the_job(
        self, created: scheduler_v1.Job, client: scheduler_v1.CloudSchedulerClient
    ) -> None:
        client.delete_job(name=NIGHTLY)

        with pytest.raises(exceptions.NotFound):
            client.get_job(name=NIGHTLY)


class TestErrors:
    """Exceptions are the ones Google's REST API makes the client raise: the class follows the
    HTTP status alone."""

    @pytest.mark.parametrize(
        "call",
        [
            pytest.param(lambda c: c.get_job(name=NIGHTLY), id="get"),
            pytest.param(lambda c: c.delete_job(name=NIGHTLY), id="delete"),
            pytest.param(lambda c: c.pause_job(name=NIGHTLY), id="pause"),
            pytest.param(lambda c: c.run_job(name=NIGHTLY), id="run"),
            pytest.param(
                lambda c: c.update_job(
                    job=scheduler_v1.Job(name=NIGHTLY, schedule="0 3 * * *"),
                    update_mask={"paths": ["schedule"]},
                ),
                id="update",
            ),
        ],
    )
    def test_a_missing_job_raises_not_found(
        self,
        daemon: Daemon,
        client: scheduler_v1.CloudSchedulerClient,
        call: Callable[[scheduler_v1.CloudSchedulerClient], Any],
    ) -> None:
        with pytest.raises(exceptions.NotFound) as raised:
            call(client)

        assert raised.value.message.endswith(": Job not found.")

    def test_duplicate_create_raises_conflict_not_already_exists(
        self,
        created: scheduler_v1.Job,
        client: scheduler_v1.CloudSchedulerClient,
        served_target: tuple[RecordingTarget, str],
    ) -> None:
        with pytest.raises(exceptions.Conflict) as raised:
            client.create_job(parent=PARENT, job=nightly(served_target[1]))

        assert type(raised.value) is exceptions.Conflict
        assert raised.value.message.endswith(f": Job {NIGHTLY} already exists.")
        assert raised.value.response.json()["error"]["status"] == "ALREADY_EXISTS"

    def test_six_field_schedule_raises_bad_request(
        self,
        daemon: Daemon,
        client: scheduler_v1.CloudSchedulerClient,
        served_target: tuple[RecordingTarget, str],
    ) -> None:
        job = nightly(served_target[1])
        job.schedule = "*/5 * * * * *"

        with pytest.raises(exceptions.BadRequest) as raised:
            client.create_job(parent=PARENT, job=job)

        assert raised.value.message.endswith(": Schedule or time zone is invalid.")
        assert raised.value.response.json()["error"]["status"] == "INVALID_ARGUMENT"
        with pytest.raises(exceptions.NotFound):
            client.get_job(name=NIGHTLY)

    def test_resume_of_an_enabled_job_raises_bad_request_failed_precondition(
        self, created: scheduler_v1.Job, client: scheduler_v1.CloudSchedulerClient
    ) -> None:
        with pytest.raises(exceptions.BadRequest) as raised:
            client.resume_job(name=NIGHTLY)

        # The client's message carries only error.message; the status is in the envelope.
        assert raised.value.response.json()["error"]["status"] == "FAILED_PRECONDITION"
        assert "ENABLED" in raised.value.message
        assert client.get_job(name=NIGHTLY).state == scheduler_v1.Job.State.ENABLED

    def test_pause_of_a_paused_job_raises_bad_request_failed_precondition(
        self, created: scheduler_v1.Job, client: scheduler_v1.CloudSchedulerClient
    ) -> None:
        client.pause_job(name=NIGHTLY)

        with pytest.raises(exceptions.BadRequest) as raised:
            client.pause_job(name=NIGHTLY)

        assert raised.value.response.json()["error"]["status"] == "FAILED_PRECONDITION"
        assert "PAUSED" in raised.value.message
