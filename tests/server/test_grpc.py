"""The v1 API over gRPC on the daemon's own port, through Google's Python client on its
default gRPC transport (sync and async): every job method, the errors with their field
violations, one port shared with REST, a TLS client failing fast, and UNIMPLEMENTED naming the
extra when gRPC is not served."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.daemon import serving_in_thread
from tests.support import TARGET, RecordingTarget

grpc = pytest.importorskip("grpc")
from google.api_core import exceptions  # noqa: E402
from google.auth.credentials import AnonymousCredentials  # noqa: E402
from google.cloud import scheduler_v1  # noqa: E402
from google.protobuf import field_mask_pb2  # noqa: E402

from scheduler_emulator import client as emulator_client  # noqa: E402
from scheduler_emulator.runtime._emulator import Emulator  # noqa: E402
from scheduler_emulator.server.server import serve  # noqa: E402

PARENT = "projects/my-project/locations/us-central1"
NAME = PARENT + "/jobs/nightly"


def job(name: str = NAME, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "schedule": "0 2 * * *",
        "time_zone": "Etc/UTC",
        "http_target": {"uri": TARGET},
    }
    body.update(overrides)
    return body


def _serve(emulator: Emulator, **kwargs: Any) -> Iterator[str]:
    with serving_in_thread(serve(emulator, "127.0.0.1", 0, **kwargs)) as url:
        yield url.removeprefix("http://")


@pytest.fixture
def address(emulator: Emulator) -> Iterator[str]:
    """The daemon's one address (REST and gRPC), serving ``emulator`` in this process."""
    yield from _serve(emulator)


@pytest.fixture
def scheduler(address: str) -> Iterator[Any]:
    """Google's client on its default (gRPC) transport, through the one-line helper."""
    client = emulator_client(host=address)
    yield client
    client.transport.close()


def rest_error(address: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    response = requests.request(method, f"http://{address}/v1/{path}", timeout=10, **kwargs)
    assert response.status_code >= 400, response.text
    return response.json()["error"]  # type: ignore[no-any-return]


class TestJobMethods:
    def test_the_whole_life_of_a_job(self, scheduler: Any, target: RecordingTarget) -> None:
        created = scheduler.create_job(parent=PARENT, job=job())
        assert created.name == NAME
        assert created.state == scheduler_v1.Job.State.ENABLED
        assert created.http_target.http_method == scheduler_v1.HttpMethod.POST
        assert scheduler.get_job(name=NAME).schedule == "0 2 * * *"

        update = scheduler_v1.Job(name=NAME, schedule="0 4 * * *", description="ignored")
        updated = scheduler.update_job(
            job=update, update_mask=field_mask_pb2.FieldMask(paths=["schedule"])
        )
        assert (updated.schedule, updated.description) == ("0 4 * * *", "")

        assert scheduler.pause_job(name=NAME).state == scheduler_v1.Job.State.PAUSED
        assert scheduler.resume_job(name=NAME).state == scheduler_v1.Job.State.ENABLED
        scheduler.run_job(name=NAME)
        assert len(target.wait_for(1)) == 1  # RunJob answers when the run is accepted
        scheduler.delete_job(name=NAME)
        with pytest.raises(exceptions.NotFound):
            scheduler.get_job(name=NAME)

    def test_list_pages_to_the_end(self, scheduler: Any) -> None:
        names = [f"{PARENT}/jobs/job-{i}" for i in range(5)]
        for name in names:
            scheduler.create_job(parent=PARENT, job=job(name))
        pager = scheduler.list_jobs(request={"parent": PARENT, "page_size": 2})
        assert [j.name for j in pager] == names
        first = scheduler.list_jobs(request={"parent": PARENT, "page_size": 2})
        assert len(list(first.pages)) == 3

    def test_a_listing_of_large_jobs_fits_the_clients_4_mib_pages(
        self, scheduler: Any, address: str
    ) -> None:
        """A trial: eight jobs of about 1 MB, each accepted, made the default listing fail over
        gRPC (``ResourceExhausted: Received message larger than max (8194212 vs. 4194304)``)."""
        names = [f"{PARENT}/jobs/big-{i}" for i in range(5)]
        body = b"x" * 1_000_000
        for name in names:
            scheduler.create_job(
                parent=PARENT, job=job(name, http_target={"uri": TARGET, "body": body})
            )
        pages = list(scheduler.list_jobs(parent=PARENT).pages)
        assert [len(page.jobs) for page in pages] == [
            3,
            2,
        ]  # fewer than the page size, with a token
        assert [j.name for page in pages for j in page.jobs] == names
        listed = requests.get(f"http://{address}/v1/{PARENT}/jobs", timeout=30).json()
        assert len(listed["jobs"]) == 3 and listed["nextPageToken"]  # the same pages over REST

    def test_locations(self, scheduler: Any) -> None:
        listed = scheduler.list_locations(request={"name": "projects/my-project"})
        assert listed.locations[0].location_id == "us-central1"
        assert "me-central2" in [loc.location_id for loc in listed.locations]
        location = scheduler.get_location(request={"name": PARENT})
        assert location.labels["cloud.googleapis.com/region"] == "us-central1"
        with pytest.raises(exceptions.NotFound):
            scheduler.get_location(request={"name": "projects/my-project/locations/mars1"})

    def test_locations_page_and_filter(self, scheduler: Any) -> None:
        request = {"name": "projects/my-project", "page_size": 3}
        first = scheduler.list_locations(request=request)
        assert len(first.locations) == 3
        assert first.next_page_token
        ids, token = [], ""
        while True:
            page = scheduler.list_locations(request={**request, "page_token": token})
            ids += [loc.location_id for loc in page.locations]
            token = page.next_page_token
            if not token:
                break
        assert len(ids) == len(set(ids)) == 41
        kept = scheduler.list_locations(
            request={"name": "projects/my-project", "filter": "locationId:europe-west1*"}
        )
        assert [loc.location_id for loc in kept.locations] == [
            "europe-west1",
            "europe-west10",
            "europe-west12",
        ]

    @pytest.mark.parametrize(
        ("request_fields", "field"),
        [
            ({"page_token": "abc"}, "pageToken"),
            ({"page_size": -1}, "pageSize"),
            ({"filter": "x="}, "filter"),
        ],
    )
    def test_a_bad_locations_request_is_invalid_argument_as_over_rest(
        self, scheduler: Any, address: str, request_fields: dict[str, Any], field: str
    ) -> None:
        with pytest.raises(exceptions.InvalidArgument) as caught:
            scheduler.list_locations(request={"name": "projects/my-project", **request_fields})
        (bad_request,) = caught.value.details
        assert bad_request.field_violations[0].field == field
        query = {"pageToken": "abc", "pageSize": "-1", "filter": "x="}[field]
        rest = rest_error(address, "GET", f"projects/my-project/locations?{field}={query}")
        assert caught.value.message == rest["message"]


class TestErrorsMatchRest:
    def test_not_found(self, scheduler: Any, address: str) -> None:
        with pytest.raises(exceptions.NotFound) as caught:
            scheduler.get_job(name=NAME)
        assert caught.value.message == rest_error(address, "GET", NAME)["message"]
        assert caught.value.message == "Job not found."

    def test_already_exists(self, scheduler: Any, address: str) -> None:
        scheduler.create_job(parent=PARENT, job=job())
        with pytest.raises(exceptions.AlreadyExists) as caught:
            scheduler.create_job(parent=PARENT, job=job())
        rest = rest_error(address, "POST", PARENT + "/jobs", json=job())
        assert caught.value.message == rest["message"]
        assert rest["status"] == "ALREADY_EXISTS"

    def test_invalid_argument_carries_field_violations(self, scheduler: Any, address: str) -> None:
        with pytest.raises(exceptions.InvalidArgument) as caught:
            scheduler.create_job(parent=PARENT, job=job(schedule="every banana"))
        rest = rest_error(address, "POST", PARENT + "/jobs", json=job(schedule="every banana"))
        assert caught.value.message == rest["message"] == "Schedule or time zone is invalid."
        (bad_request,) = caught.value.details
        violations = [(v.field, v.description) for v in bad_request.field_violations]
        assert violations == [
            (v["field"], v["description"]) for v in rest["details"][0]["fieldViolations"]
        ]
        assert violations[0][0] == "schedule"

    def test_failed_precondition(self, scheduler: Any, address: str) -> None:
        scheduler.create_job(parent=PARENT, job=job())
        scheduler.pause_job(name=NAME)
        with pytest.raises(exceptions.FailedPrecondition) as caught:
            scheduler.pause_job(name=NAME)
        rest = rest_error(address, "POST", NAME + ":pause", json={})
        assert caught.value.message == rest["message"]
        assert rest["status"] == "FAILED_PRECONDITION"

    @pytest.mark.parametrize(
        ("duration", "text"),
        [
            ({"seconds": 20, "nanos": -1}, "seconds 20, nanos -1"),
            ({"seconds": -1, "nanos": 5}, "seconds -1, nanos 5"),
            ({"seconds": 20, "nanos": 2_000_000_000}, "seconds 20, nanos 2000000000"),
        ],
    )
    def test_a_duration_protobuf_cannot_write_is_invalid_argument_naming_it(
        self, scheduler: Any, duration: dict[str, int], text: str
    ) -> None:
        # trial 99: a sign mismatch answered 500 with a traceback; nanos beyond 9 digits
        # quoted a value never sent ("20.2000000000s")
        with pytest.raises(exceptions.InvalidArgument) as caught:
            scheduler.create_job(parent=PARENT, job=job(attempt_deadline=duration), retry=None)
        assert caught.value.message == (
            "Invalid value at 'job.attempt_deadline' "
            f'(type.googleapis.com/google.protobuf.Duration), "{text}"'
        )
        (bad_request,) = caught.value.details  # what is wrong with it (trial 105: "must be a
        [violation] = bad_request.field_violations  # duration string", to a gRPC caller)
        assert violation.description == (
            "attemptDeadline is not a valid Duration: its seconds and nanos must have the same "
            f'sign, and nanos be at most 999,999,999 in size; got "{text}".'
        )
        scheduler.create_job(parent=PARENT, job=job(), retry=None)
        with pytest.raises(exceptions.InvalidArgument) as caught:
            scheduler.update_job(
                job=job(retry_config={"min_backoff_duration": duration}),
                update_mask=field_mask_pb2.FieldMask(paths=["retry_config.min_backoff_duration"]),
                retry=None,
            )
        assert f'"{text}"' in caught.value.message
        assert "retry_config.min_backoff_duration" in caught.value.message


@pytest.mark.parametrize("method", ["CancelOperation", "DeleteOperation"])
def test_cancelling_or_deleting_an_operation_is_unimplemented_as_over_rest(
    address: str, method: str
) -> None:
    from google.longrunning import operations_pb2
    from google.protobuf import empty_pb2

    name = "projects/my-project/locations/us-central1/operations/operation-1"
    request_type = getattr(operations_pb2, method + "Request")
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/google.longrunning.Operations/{method}",
            request_serializer=request_type.SerializeToString,
            response_deserializer=empty_pb2.Empty.FromString,
        )
        with pytest.raises(grpc.RpcError) as caught:
            call(request_type(name=name), timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    rest_method, suffix = ("POST", ":cancel") if method == "CancelOperation" else ("DELETE", "")
    rest = rest_error(address, rest_method, name + suffix)
    assert (rest["code"], rest["status"]) == (501, "UNIMPLEMENTED")
    assert caught.value.details() == rest["message"]


def test_the_cloud_run_admin_api_over_grpc_says_it_is_served_over_rest(address: str) -> None:
    """Trial 204: Google's run client over gRPC read a bare "Method not found!"."""
    with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as caught:
        channel.unary_unary("/google.cloud.run.v2.Jobs/RunJob")(b"", timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert caught.value.details().startswith(
        "/google.cloud.run.v2.Jobs/RunJob: the emulator serves the Cloud Run Admin API over REST "
        'only: make Google\'s client with transport="rest"'
    )


def test_waiting_for_an_operation_answers_it_done(address: str) -> None:
    """Trial 121: reflection lists WaitOperation, which answered grpcio's bare "Method not
    found!"; every operation here is done when returned, so waiting is getting it."""
    from google.longrunning import operations_pb2

    key = "projects/my-project/locations/us-central1/keyRings/ring/cryptoKeys/key"
    config = f"http://{address}/v1/projects/my-project/locations/us-central1/cmekConfig"
    made = requests.patch(config, json={"kmsKeyName": key}, timeout=10).json()
    with grpc.insecure_channel(address) as channel:
        wait = channel.unary_unary(
            "/google.longrunning.Operations/WaitOperation",
            request_serializer=operations_pb2.WaitOperationRequest.SerializeToString,
            response_deserializer=operations_pb2.Operation.FromString,
        )
        operation = wait(operations_pb2.WaitOperationRequest(name=made["name"]), timeout=10)
    assert (operation.name, operation.done) == (made["name"], True)


class TestFieldMaskMetadata:
    """The ``x-goog-fieldmask`` metadata filters the response message as ``fields`` filters a
    REST answer."""

    def test_it_filters_a_job(self, scheduler: Any) -> None:
        scheduler.create_job(parent=PARENT, job=job())
        got = scheduler.get_job(name=NAME, metadata=[("x-goog-fieldmask", "name,schedule")])
        assert (got.name, got.schedule, got.time_zone, got.http_target.uri) == (
            NAME,
            "0 2 * * *",
            "",
            "",
        )
        whole = scheduler.get_job(name=NAME)
        assert (whole.time_zone, whole.http_target.uri) == ("Etc/UTC", TARGET)

    def test_it_filters_every_element_of_a_list(self, scheduler: Any) -> None:
        scheduler.create_job(parent=PARENT, job=job())
        pager = scheduler.list_jobs(
            request={"parent": PARENT}, metadata=[("x-goog-fieldmask", "jobs(name,httpTarget.uri)")]
        )
        (listed,) = list(pager)
        assert (listed.name, listed.http_target.uri, listed.schedule) == (NAME, TARGET, "")

    def test_a_malformed_mask_is_invalid_argument_naming_it(self, scheduler: Any) -> None:
        with pytest.raises(exceptions.InvalidArgument) as caught:
            scheduler.create_job(parent=PARENT, job=job(), metadata=[("x-goog-fieldmask", "name(")])
        (bad_request,) = caught.value.details
        assert bad_request.field_violations[0].field == "x-goog-fieldmask"
        with pytest.raises(exceptions.NotFound):
            scheduler.get_job(name=NAME)


def test_the_async_client(address: str) -> None:
    async def scenario() -> list[str]:
        client = emulator_client(async_=True, host=address)
        await client.create_job(parent=PARENT, job=job())
        await client.create_job(parent=PARENT, job=job(PARENT + "/jobs/second"))
        got = await client.get_job(name=NAME)
        assert got.schedule == "0 2 * * *"
        pager = await client.list_jobs(request={"parent": PARENT, "page_size": 1})
        names = [j.name async for j in pager]
        await client.delete_job(name=NAME)
        with pytest.raises(exceptions.NotFound):
            await client.get_job(name=NAME)
        await client.transport.close()
        return names

    assert asyncio.run(scenario()) == [NAME, PARENT + "/jobs/second"]


def test_rest_and_grpc_share_one_port_and_one_set_of_jobs(scheduler: Any, address: str) -> None:
    scheduler.create_job(parent=PARENT, job=job())
    over_rest = requests.get(f"http://{address}/v1/{PARENT}/jobs", timeout=10).json()
    assert [j["name"] for j in over_rest["jobs"]] == [NAME]
    other = PARENT + "/jobs/from-rest"
    response = requests.post(
        f"http://{address}/v1/{PARENT}/jobs",
        json={"name": other, "schedule": "* * * * *", "httpTarget": {"uri": TARGET}},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert scheduler.get_job(name=other).schedule == "* * * * *"
    rest_client = emulator_client(transport="rest", host=address)
    assert [j.name for j in rest_client.list_jobs(parent=PARENT)] == [NAME, other]


def test_a_tls_client_fails_fast_and_the_daemon_says_why(
    address: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = scheduler_v1.CloudSchedulerClient(
        credentials=AnonymousCredentials(), client_options={"api_endpoint": address}
    )
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, logger="scheduler_emulator"),
        pytest.raises(exceptions.ServiceUnavailable),
    ):
        client.get_job(name=NAME, retry=None)
    assert time.monotonic() - started < 5
    assert (
        f"a TLS client connected to {address}: the emulator serves plaintext (give a REST client "
        "an http:// URL, a gRPC client an insecure channel); see docs/api.md#grpc"
    ) in caplog.messages
    # a client reconnecting (its default retry does, every few seconds) is not logged again
    with (
        caplog.at_level(logging.WARNING, logger="scheduler_emulator"),
        pytest.raises(exceptions.ServiceUnavailable),
    ):
        client.get_job(name=NAME, retry=None)
    assert sum("a TLS client connected" in message for message in caplog.messages) == 1
    client.transport.close()
    # the port still serves REST afterwards
    assert requests.get(f"http://{address}/_emulator/health", timeout=10).status_code == 200


def test_without_grpc_a_call_ends_unimplemented_naming_the_extra(emulator: Emulator) -> None:
    for address in _serve(emulator, grpc=False):
        client = emulator_client(host=address)
        started = time.monotonic()
        with pytest.raises(exceptions.MethodNotImplemented) as caught:
            client.get_job(name=NAME, retry=None, timeout=10)
        assert time.monotonic() - started < 5
        assert "cloud-scheduler-emulator[grpc]" in caught.value.message
        assert "where the daemon runs" in caught.value.message
        client.transport.close()


def test_the_client_helper_without_googles_library_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import google.cloud

    monkeypatch.setitem(sys.modules, "google.cloud.scheduler_v1", None)  # as if not installed
    monkeypatch.delattr(google.cloud, "scheduler_v1", raising=False)
    for transport in ("grpc", "rest"):
        with pytest.raises(ImportError, match=r"needs Google's client library .*\[grpc\]"):
            emulator_client(transport, host="127.0.0.1:8095")


def test_env_init_prints_what_each_client_needs(capsys: pytest.CaptureFixture[str]) -> None:
    from scheduler_emulator.tools.cli import main

    assert main(["env-init", "--port", "8123", "--project", "orders-dev"]) == 0
    lines = capsys.readouterr().out.splitlines()
    exports = [line for line in lines if not line.startswith("#")]
    assert all(line.startswith("export ") for line in exports)
    assert "export CLOUD_SCHEDULER_EMULATOR_HOST=127.0.0.1:8123" in exports
    notes = "\n".join(line for line in lines if line.startswith("#"))
    for needed in ("client()", "createInsecure()", "WithoutAuthentication()", "usePlaintext()"):
        assert needed in notes
