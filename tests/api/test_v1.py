"""The v1 API layer's own rules (scheduler_emulator.api): page sizes and tokens, names in
another project or location, output-only fields — on the layer itself, then the same answers
over REST and gRPC (one parametrised test drives both surfaces)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests

from scheduler_emulator.api.v1 import MAX_JOBS_PAGE_SIZE, SchedulerApi
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.domain.resources import State
from scheduler_emulator.runtime._emulator import Emulator
from tests.daemon import serving_in_thread
from tests.support import TARGET

PARENT = "projects/my-project/locations/us-central1"


def body(job_id: str, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": f"{PARENT}/jobs/{job_id}",
        "schedule": "0 2 * * *",
        "httpTarget": {"uri": TARGET},
    }
    data.update(overrides)
    return data


@pytest.fixture
def api(emulator: Emulator) -> SchedulerApi:
    return SchedulerApi.of(emulator)


class TestPages:
    def test_page_size_zero_gives_every_job_and_no_token(self, api: SchedulerApi) -> None:
        for i in range(3):
            api.create_job(PARENT, body(f"j{i}"))
        page = api.list_jobs(PARENT, 0)
        assert [j.name.rsplit("/", 1)[1] for j in page.jobs] == ["j0", "j1", "j2"]
        assert page.next_page_token == ""

    def test_a_negative_page_size_is_the_default_not_an_error(self, api: SchedulerApi) -> None:
        api.create_job(PARENT, body("only"))
        page = api.list_jobs(PARENT, -5)
        assert (len(page.jobs), page.next_page_token) == (1, "")

    @pytest.mark.timeout(120)
    def test_a_page_above_the_maximum_is_clamped(self, api: SchedulerApi) -> None:
        for i in range(MAX_JOBS_PAGE_SIZE + 1):
            api.create_job(PARENT, body(f"j{i}"))
        page = api.list_jobs(PARENT, 10_000)
        assert len(page.jobs) == MAX_JOBS_PAGE_SIZE == 500
        rest = api.list_jobs(PARENT, 10_000, page.next_page_token)
        assert (len(rest.jobs), rest.next_page_token) == (1, "")

    def test_paging_reaches_the_end(self, api: SchedulerApi) -> None:
        for i in range(5):
            api.create_job(PARENT, body(f"j{i}"))
        seen, token, pages = [], "", 0
        while True:
            page = api.list_jobs(PARENT, 2, token)
            seen += [j.name for j in page.jobs]
            pages += 1
            token = page.next_page_token
            if not token:
                break
        assert (len(seen), pages) == (5, 3)

    @pytest.mark.parametrize("token", ["abc", "-1", "1e3", "9" * 40, "MQ=="])
    def test_a_tampered_page_token_is_refused(self, api: SchedulerApi, token: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            api.list_jobs(PARENT, 2, token)
        assert caught.value.violations[0].field == "pageToken"


class TestNames:
    @pytest.mark.parametrize(
        "name",
        [
            "projects/other-project/locations/us-central1/jobs/x",
            "projects/my-project/locations/europe-west1/jobs/x",
        ],
    )
    def test_a_job_outside_the_parent_is_refused(self, api: SchedulerApi, name: str) -> None:
        with pytest.raises(InvalidArgument, match="is not in the location"):
            api.create_job(PARENT, body("x", name=name))
        assert api.list_jobs(PARENT).jobs == []

    def test_a_malformed_parent_is_refused(self, api: SchedulerApi) -> None:
        with pytest.raises(InvalidArgument) as caught:
            api.list_jobs("projects/my-project")
        assert caught.value.violations[0].field == "parent"


def test_output_only_fields_are_ignored(api: SchedulerApi) -> None:
    job = api.create_job(
        PARENT,
        body(
            "x",
            state="PAUSED",
            satisfiesPzs=True,
            userUpdateTime="2001-01-01T00:00:00Z",
            scheduleTime="2001-01-01T00:00:00Z",
        ),
    )
    assert job.state.name == "ENABLED"
    updated = api.update_job(job.name, {"schedule": "1 2 * * *", "satisfiesPzs": False}, None)
    assert updated.schedule == "1 2 * * *"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("state", "BOGUS", "'job.state' (type.googleapis.com/google.cloud.scheduler.v1.Job.State)"),
        (
            "scheduleTime",
            "soon",
            "'job.schedule_time' (type.googleapis.com/google.protobuf.Timestamp)",
        ),
        ("status", "failed", "'job.status' (type.googleapis.com/google.rpc.Status)"),
    ],
)
def test_an_output_only_field_of_the_wrong_form_is_refused(
    api: SchedulerApi, field: str, value: str, message: str
) -> None:
    """Trial 223: "state": "BOGUS" was taken; production's JSON front end reads every field by
    its type before the service ignores an output-only one."""
    with pytest.raises(InvalidArgument) as caught:
        api.create_job(PARENT, body("x", **{field: value}))
    assert caught.value.message == f'Invalid value at {message}, "{value}"'
    assert caught.value.violations[0].field == field


def test_the_cmek_config_is_stored_and_echoed(api: SchedulerApi) -> None:
    name = PARENT + "/cmekConfig"
    assert api.get_cmek_config(name) == {"name": name}
    key = "projects/my-project/locations/us-central1/keyRings/r/cryptoKeys/k"
    operation = api.update_cmek_config(name, {"kmsKeyName": key}, "kmsKeyName")
    assert operation["done"] is True
    assert operation["response"]["kmsKeyName"] == key
    assert api.get_cmek_config(name)["kmsKeyName"] == key
    assert api.get_operation(operation["name"]) == operation
    assert api.list_operations(PARENT) == ([operation], "")
    with pytest.raises(InvalidArgument) as caught:
        api.update_cmek_config(name, {"kmsKeyName": "not-a-key"}, None)
    assert caught.value.violations[0].field == "kmsKeyName"
    api.update_cmek_config(name, {}, "kms_key_name")  # cleared
    assert api.get_cmek_config(name) == {"name": name}


# ---------------------------------------------------------------- the same over REST and gRPC


class Rest:
    def __init__(self, address: str) -> None:
        self.base = f"http://{address}/v1/"

    def list(self, page_size: int, token: str = "") -> tuple[list[str], str]:
        params: dict[str, Any] = {"pageSize": page_size}
        if token:
            params["pageToken"] = token
        response = requests.get(self.base + PARENT + "/jobs", params=params, timeout=10)
        self._raise(response)
        data = response.json()
        return [j["name"] for j in data.get("jobs", [])], data.get("nextPageToken", "")

    def create(self, data: dict[str, Any]) -> dict[str, Any]:
        response = requests.post(self.base + PARENT + "/jobs", json=data, timeout=10)
        self._raise(response)
        return response.json()  # type: ignore[no-any-return]

    def update(self, data: dict[str, Any]) -> tuple[str, int, int, str]:
        """PATCH without a mask: (description, retry count, max doublings, userUpdateTime)."""
        response = requests.patch(self.base + data["name"], json=data, timeout=10)
        self._raise(response)
        job = response.json()
        retry = job["retryConfig"]
        return (
            job.get("description", ""),
            retry.get("retryCount", 0),
            retry["maxDoublings"],
            job["userUpdateTime"],
        )

    @staticmethod
    def _raise(response: requests.Response) -> None:
        if response.status_code >= 400:
            error = response.json()["error"]
            raise Failed(error["status"], error["message"])


class Grpc:
    def __init__(self, address: str) -> None:
        from google.cloud import scheduler_v1

        from scheduler_emulator import client

        self.types = scheduler_v1
        self.client = client(host=address)

    def list(self, page_size: int, token: str = "") -> tuple[list[str], str]:
        request = self.types.ListJobsRequest(parent=PARENT, page_size=page_size, page_token=token)
        response = self._call(self.client.transport.list_jobs, request)
        return [j.name for j in response.jobs], response.next_page_token

    def create(self, data: dict[str, Any]) -> dict[str, Any]:
        request = self.types.CreateJobRequest(parent=PARENT, job=data)
        job = self._call(self.client.transport.create_job, request)
        return {"name": job.name, "state": self.types.Job.State(job.state).name}

    def update(self, data: dict[str, Any]) -> tuple[str, int, int, str]:
        request = self.types.UpdateJobRequest(job=data)
        job = self._call(self.client.transport.update_job, request)
        retry = job.retry_config
        when = job.user_update_time.isoformat().replace("+00:00", "Z")
        return job.description, retry.retry_count, retry.max_doublings, when

    @staticmethod
    def _call(method: Any, request: Any) -> Any:
        import grpc

        try:
            return method(request)
        except grpc.RpcError as exc:
            raise Failed(exc.code().name, exc.details()) from None


class Failed(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(status, message)
        self.status, self.message = status, message


@pytest.fixture(params=["rest", "grpc"])
def surface(request: pytest.FixtureRequest, emulator: Emulator) -> Iterator[Any]:
    if request.param == "grpc":
        pytest.importorskip("grpc")
    from scheduler_emulator.server.server import serve

    with serving_in_thread(serve(emulator, "127.0.0.1", 0)) as url:
        address = url.removeprefix("http://")
        yield Rest(address) if request.param == "rest" else Grpc(address)


def test_both_surfaces_give_the_same_answers(surface: Any) -> None:
    for i in range(3):
        surface.create(
            {"name": f"{PARENT}/jobs/j{i}", "schedule": "0 2 * * *", "http_target": {"uri": TARGET}}
        )
    everything = [f"{PARENT}/jobs/j{i}" for i in range(3)]
    assert surface.list(0) == (everything, "")
    assert surface.list(-5) == (everything, "")
    assert surface.list(10_000) == (everything, "")
    names, token = surface.list(2)
    assert names == everything[:2]
    assert surface.list(2, token) == (everything[2:], "")

    with pytest.raises(Failed) as caught:
        surface.list(2, "tampered")
    assert caught.value.status == "INVALID_ARGUMENT"
    assert (
        caught.value.message
        == 'pageToken "tampered" is not a page token this emulator gave: pass the nextPageToken '
        "of the page before, or none for the first page."
    )

    elsewhere = "projects/other-project/locations/us-central1/jobs/x"
    with pytest.raises(Failed) as caught:
        surface.create({"name": elsewhere, "schedule": "0 2 * * *", "http_target": {"uri": TARGET}})
    assert (caught.value.status, caught.value.message) == (
        "INVALID_ARGUMENT",
        f'name "{elsewhere}" is not in the location "{PARENT}" of the request.',
    )

    created = surface.create(
        {
            "name": f"{PARENT}/jobs/paused",
            "schedule": "0 2 * * *",
            "http_target": {"uri": TARGET},
            "state": "PAUSED",
        }
    )
    assert created["state"] == "ENABLED"


def test_a_mask_of_output_only_paths_alone_changes_nothing(emulator: Emulator) -> None:
    """Trial 92: ``updateMask=state`` with ``{"state": "PAUSED"}`` answered 200 and moved
    ``userUpdateTime``, though such a mask changes nothing (docs/differences-from-production.md)."""
    created = emulator.create_job(body("j1"))
    emulator.advance(timedelta(minutes=5))

    kept = emulator.update_job("j1", {"state": "PAUSED"}, "state,userUpdateTime")

    assert kept == emulator.get_job("j1")
    assert (kept.user_update_time, kept.state) == (created.user_update_time, State.ENABLED)


def test_without_a_mask_a_zero_or_empty_value_is_not_present_on_either_surface(
    surface: Any, emulator: Emulator
) -> None:
    """Trial 146: over REST, ``{"description": ""}`` without a mask removed the description and
    ``retryCount: 0`` reset the count, where gRPC (and Google's REST front end, which parses the
    JSON into the proto) carries no proto3 default; and ``{}`` moved ``userUpdateTime``."""
    name = f"{PARENT}/jobs/kept"
    surface.create(
        {
            "name": name,
            "description": "keep me",
            "schedule": "0 2 * * *",
            "http_target": {"uri": TARGET},
            "retry_config": {"retry_count": 3},
        }
    )
    emulator.advance(timedelta(minutes=1))

    after = surface.update(
        {"name": name, "description": "", "retry_config": {"retry_count": 0, "max_doublings": 3}}
    )
    emulator.advance(timedelta(minutes=1))

    assert after[:3] == ("keep me", 3, 3)
    assert surface.update({"name": name}) == after  # userUpdateTime included
    # a message holding only defaults sets nothing (trial 155: it reset the whole retry config)
    assert surface.update({"name": name, "retry_config": {"retry_count": 0}}) == after
