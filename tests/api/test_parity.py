"""Every v1 method answers a bad request the same over REST and over gRPC: the same canonical
code, the same message and the same field violations (one API layer under both surfaces).

Each case is written once, as the gRPC request message in proto3 JSON; the test sends it over
REST (the method's URL, query parameters and JSON body, as Google's REST mapping puts it) and
over gRPC (the message, on a raw channel so that every method can be called) to one daemon
port. Bad inputs only JSON can carry (an unknown field name, a value of the wrong JSON type, a
page size that is not a number) have their own tests below, beside what gRPC does with the
nearest thing its binary messages can carry.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from scheduler_emulator.runtime._emulator import Emulator
from tests.daemon import serving_in_thread
from tests.support import TARGET, case_table

grpc = pytest.importorskip("grpc")
from google.cloud.location import locations_pb2  # noqa: E402
from google.cloud.scheduler_v1.types import cloudscheduler  # noqa: E402
from google.longrunning import operations_pb2  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402

PARENT = "projects/my-project/locations/us-central1"
NAME = PARENT + "/jobs/nightly"

#: method → (gRPC path, request type, HTTP method, URL template, query fields, body field)
METHODS: dict[str, tuple[str, Any, str, str, tuple[str, ...], str | None]] = {
    "ListJobs": (
        "/google.cloud.scheduler.v1.CloudScheduler/ListJobs",
        cloudscheduler.ListJobsRequest.pb(),
        "GET",
        "{parent}/jobs",
        ("pageSize", "pageToken"),
        None,
    ),
    "GetJob": (
        "/google.cloud.scheduler.v1.CloudScheduler/GetJob",
        cloudscheduler.GetJobRequest.pb(),
        "GET",
        "{name}",
        (),
        None,
    ),
    "CreateJob": (
        "/google.cloud.scheduler.v1.CloudScheduler/CreateJob",
        cloudscheduler.CreateJobRequest.pb(),
        "POST",
        "{parent}/jobs",
        (),
        "job",
    ),
    "UpdateJob": (
        "/google.cloud.scheduler.v1.CloudScheduler/UpdateJob",
        cloudscheduler.UpdateJobRequest.pb(),
        "PATCH",
        "{job.name}",
        ("updateMask",),
        "job",
    ),
    "DeleteJob": (
        "/google.cloud.scheduler.v1.CloudScheduler/DeleteJob",
        cloudscheduler.DeleteJobRequest.pb(),
        "DELETE",
        "{name}",
        (),
        None,
    ),
    **{
        verb: (
            f"/google.cloud.scheduler.v1.CloudScheduler/{verb}",
            getattr(cloudscheduler, f"{verb}Request").pb(),
            "POST",
            "{name}:" + verb.removesuffix("Job").lower(),
            (),
            "",
        )
        for verb in ("PauseJob", "ResumeJob", "RunJob")
    },
    "GetLocation": (
        "/google.cloud.location.Locations/GetLocation",
        locations_pb2.GetLocationRequest,
        "GET",
        "{name}",
        (),
        None,
    ),
    "ListLocations": (
        "/google.cloud.location.Locations/ListLocations",
        locations_pb2.ListLocationsRequest,
        "GET",
        "{name}/locations",
        ("pageSize", "pageToken", "filter"),
        None,
    ),
    "GetCmekConfig": (
        "/google.cloud.scheduler.v1.CloudScheduler/GetCmekConfig",
        None,
        "GET",
        "{name}",
        (),
        None,
    ),
    "UpdateCmekConfig": (
        "/google.cloud.scheduler.v1.CloudScheduler/UpdateCmekConfig",
        None,
        "PATCH",
        "{cmekConfig.name}",
        ("updateMask",),
        "cmekConfig",
    ),
    "GetOperation": (
        "/google.longrunning.Operations/GetOperation",
        operations_pb2.GetOperationRequest,
        "GET",
        "{name}",
        (),
        None,
    ),
    "ListOperations": (
        "/google.longrunning.Operations/ListOperations",
        operations_pb2.ListOperationsRequest,
        "GET",
        "{name}/operations",
        ("pageSize", "pageToken", "filter"),
        None,
    ),
    "CancelOperation": (
        "/google.longrunning.Operations/CancelOperation",
        operations_pb2.CancelOperationRequest,
        "POST",
        "{name}:cancel",
        (),
        "",
    ),
    "DeleteOperation": (
        "/google.longrunning.Operations/DeleteOperation",
        operations_pb2.DeleteOperationRequest,
        "DELETE",
        "{name}",
        (),
        None,
    ),
}


Answer = tuple[str, str, list[tuple[str, str]]]


def full_job(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` with what every job needs (a schedule, an HTTP target)."""
    return {"schedule": "0 2 * * *", "httpTarget": {"uri": TARGET}, **job}


def _path(template: str, request: dict[str, Any]) -> str:
    key = template[1 : template.index("}")]
    value: Any = request
    for part in key.split("."):
        value = value[part]
    return template.replace("{" + key + "}", value)


def rest(address: str, method: str, request: dict[str, Any]) -> Answer:
    """Send ``request`` over REST as Google's HTTP mapping of ``method`` does."""
    _, _, verb, template, query, body_field = METHODS[method]
    params = {key: request[key] for key in query if key in request}
    body = None if body_field is None else request.get(body_field, {}) if body_field else {}
    response = requests.request(
        verb,
        f"http://{address}/v1/{_path(template, request)}",
        params=params,
        json=body,
        timeout=30,
    )
    if response.status_code < 400:
        return "OK", "", []
    error = response.json()["error"]
    violations = [
        (v["field"], v["description"])
        for detail in error.get("details", [])
        for v in detail.get("fieldViolations", [])
    ]
    return error["status"], error["message"], violations


def send_grpc(channel: Any, method: str, message: Any) -> Answer:
    """Send a request message over gRPC; the answer's status, message and field violations."""
    path = METHODS[method][0]
    call = channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString())
    try:
        call(message, timeout=30)
    except grpc.RpcError as exc:
        violations: list[tuple[str, str]] = []
        for key, value in exc.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                for detail in status_pb2.Status.FromString(value).details:
                    bad = error_details_pb2.BadRequest()
                    if detail.Unpack(bad):
                        violations += [(v.field, v.description) for v in bad.field_violations]
        return exc.code().name, exc.details(), violations
    return "OK", "", []


def grpc_message(method: str, request: dict[str, Any]) -> Any:
    request_type = METHODS[method][1]
    if request_type is None:
        from scheduler_emulator.server.grpc_api import cmek_messages

        request_type = getattr(cmek_messages(), f"{method}Request")
    return json_format.ParseDict(request, request_type())


@pytest.fixture
def address(emulator: Emulator) -> Iterator[str]:
    """One daemon port serving ``emulator`` over REST and gRPC, with the job ``nightly``."""
    from scheduler_emulator.server.server import serve

    emulator.create_job(full_job({"name": NAME}))
    with serving_in_thread(serve(emulator, "127.0.0.1", 0)) as url:
        yield url.removeprefix("http://")


@pytest.fixture
def channel(address: str) -> Iterator[Any]:
    """A gRPC channel to ``address``."""
    with grpc.insecure_channel(address) as opened:
        yield opened


@case_table(__file__, "bad_requests")
def test_a_bad_request_gets_the_same_answer_over_rest_and_grpc(
    address: str,
    channel: Any,
    method: str,
    message: dict[str, Any],
    code: str,
    field: str,
    says: str,
) -> None:
    request = message
    if method == "CreateJob":
        request = {**message, "job": full_job(message["job"])}
    over_rest = rest(address, method, request)
    over_grpc = send_grpc(channel, method, grpc_message(method, request))

    assert over_rest == over_grpc
    status, text, violations = over_rest
    assert status == code
    assert says in text
    assert [f for f, _ in violations] == ([field] if field else [])


class TestComputedCases:
    """Bad inputs too large for a case table: an oversized job and out-of-range durations."""

    def test_a_job_over_1_mb_is_refused_naming_the_limit_on_both(
        self, address: str, channel: Any
    ) -> None:
        body = base64.b64encode(b"x" * 1_100_000).decode()
        job = full_job({"name": PARENT + "/jobs/big"})
        job["httpTarget"]["body"] = body
        request = {"parent": PARENT, "job": job}
        over_rest = rest(address, "CreateJob", request)
        assert over_rest == send_grpc(channel, "CreateJob", grpc_message("CreateJob", request))
        status, message, violations = over_rest
        assert status == "INVALID_ARGUMENT"
        assert "over the limit of 1 MB (1048576 bytes)" in message
        assert [f for f, _ in violations] == ["job"]

    @pytest.mark.parametrize(
        "field",
        [
            "attemptDeadline",
            "retryConfig.minBackoffDuration",
            "retryConfig.maxBackoffDuration",
            "retryConfig.maxRetryDuration",
        ],
    )
    def test_a_duration_out_of_range_is_refused_naming_the_field_on_both(
        self, address: str, channel: Any, field: str
    ) -> None:
        def with_duration(text: str) -> dict[str, Any]:
            job = full_job({"name": PARENT + "/jobs/long"})
            if "." in field:
                job.setdefault("retryConfig", {})[field.split(".")[1]] = text
            else:
                job[field] = text
            return {"parent": PARENT, "job": job}

        # A Duration message holds at most 315,576,000,000 seconds as JSON, but its int64
        # seconds can hold more: the gRPC message carries one second past the range.
        over_grpc = send_grpc(
            channel, "CreateJob", _message_with_seconds(with_duration("1s"), field, 10**12)
        )
        over_rest = rest(address, "CreateJob", with_duration(f"{10**12}s"))
        assert over_rest == over_grpc
        assert over_rest[0] == "INVALID_ARGUMENT"
        assert [f for f, _ in over_rest[2]] == [field]
        # Over REST the seconds are text: 5,000 digits are refused before any conversion.
        status, message, violations = rest(address, "CreateJob", with_duration("9" * 5000 + "s"))
        assert (status, [f for f, _ in violations]) == ("INVALID_ARGUMENT", [field])
        assert "at most 315576000000 seconds" in violations[0][1]


def _message_with_seconds(request: dict[str, Any], field: str, seconds: int) -> Any:
    message = grpc_message("CreateJob", request)
    target = message.job
    parts = [json_format_name(p) for p in field.split(".")]
    for part in parts[:-1]:
        target = getattr(target, part)
    getattr(target, parts[-1]).seconds = seconds
    return message


def json_format_name(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)


class TestWhatOnlyJsonCarries:
    """A REST body is JSON, a gRPC request a binary message: an unknown field name or a value
    of the wrong JSON type exist only over REST, where Google's front end refuses them; a gRPC
    message cannot name a field, and bytes that do not decode are refused too."""

    def test_an_unknown_field_is_refused_over_rest_naming_it(self, address: str) -> None:
        request = {"parent": PARENT, "job": full_job({"name": PARENT + "/jobs/x", "colour": 1})}
        status, message, violations = rest(address, "CreateJob", request)
        assert (status, violations[0][0]) == ("INVALID_ARGUMENT", "colour")
        assert message.startswith('Invalid JSON payload received. Unknown name "colour"')

    def test_a_wrong_json_type_is_refused_over_rest_naming_the_field(self, address: str) -> None:
        request = {"parent": PARENT, "job": full_job({"name": PARENT + "/jobs/x", "schedule": 5})}
        status, message, violations = rest(address, "CreateJob", request)
        assert (status, violations[0][0]) == ("INVALID_ARGUMENT", "schedule")
        assert message.startswith("Invalid value at 'job.schedule' (TYPE_STRING), 5")

    @pytest.mark.parametrize("size", ["two", "1.5", "2147483648", "9" * 5000])
    def test_a_page_size_that_is_not_an_int32_is_refused_over_rest(
        self, address: str, size: str
    ) -> None:
        status, message, violations = rest(
            address, "ListJobs", {"parent": PARENT, "pageSize": size}
        )
        assert (status, [f for f, _ in violations]) == ("INVALID_ARGUMENT", ["pageSize"])
        assert message.startswith("Invalid value at 'page_size' (TYPE_INT32)")

    def test_a_negative_page_size_is_the_default_page_on_both(
        self, address: str, channel: Any
    ) -> None:
        request = {"parent": PARENT, "pageSize": -5}
        assert rest(address, "ListJobs", request) == ("OK", "", [])
        assert send_grpc(channel, "ListJobs", grpc_message("ListJobs", request)) == ("OK", "", [])

    def test_bytes_that_are_not_the_message_are_invalid_argument_over_grpc(
        self, channel: Any
    ) -> None:
        # Field 1 (parent) says 5 bytes follow, and 2 do: a truncated message.
        call = channel.unary_unary("/google.cloud.scheduler.v1.CloudScheduler/ListJobs")
        with pytest.raises(grpc.RpcError) as caught:
            call(b"\x0a\x05ab", timeout=30)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "ListJobsRequest message could not be parsed" in caught.value.details()


class TestMasksPerSurface:
    """A FieldMask over gRPC names proto fields (snake_case), as Google's gRPC surface reads
    it; over REST the mask is the JSON encoding of a FieldMask (camelCase), and Google's front
    end converts it to the proto names, so a snake_case path passes there unchanged."""

    NEW_URI = "http://127.0.0.1:8000/_triggers/timer/new"

    def update_over_grpc(self, address: str, paths: list[str]) -> Any:
        from google.cloud import scheduler_v1
        from google.protobuf import field_mask_pb2

        from scheduler_emulator import client

        scheduler = client(host=address)
        try:
            return scheduler.update_job(
                job=scheduler_v1.Job(name=NAME, http_target={"uri": self.NEW_URI}),
                update_mask=field_mask_pb2.FieldMask(paths=paths),
            )
        finally:
            scheduler.transport.close()

    def test_a_camel_case_path_is_refused_over_grpc(self, address: str, emulator: Emulator) -> None:
        from google.api_core import exceptions

        with pytest.raises(exceptions.InvalidArgument) as caught:
            self.update_over_grpc(address, ["httpTarget"])
        assert caught.value.message == "Invalid mask for Job: httpTarget"
        assert emulator.get_job(NAME).http_target.uri == TARGET  # type: ignore[union-attr]

    def test_the_proto_name_applies_over_grpc(self, address: str, emulator: Emulator) -> None:
        assert self.update_over_grpc(address, ["http_target"]).http_target.uri == self.NEW_URI
        assert emulator.get_job(NAME).http_target.uri == self.NEW_URI  # type: ignore[union-attr]

    @pytest.mark.parametrize("mask", ["httpTarget", "http_target", "httpTarget.uri"])
    def test_both_spellings_apply_over_rest(
        self, address: str, emulator: Emulator, mask: str
    ) -> None:
        response = requests.patch(
            f"http://{address}/v1/{NAME}",
            params={"updateMask": mask},
            json={"httpTarget": {"uri": self.NEW_URI}},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        assert emulator.get_job(NAME).http_target.uri == self.NEW_URI  # type: ignore[union-attr]

    def test_an_unknown_path_is_named_alike_on_both_surfaces(self, address: str) -> None:
        """Google's front end hands the backend a REST mask in proto names, so the message
        names the path as gRPC's does, whichever spelling the REST client sent."""
        from google.api_core import exceptions

        with pytest.raises(exceptions.InvalidArgument) as caught:
            self.update_over_grpc(address, ["retry_config.retry_cont"])
        for mask in ("retryConfig.retryCont", "retry_config.retry_cont"):  # (a trial's: REST
            # named it "retry_config.retryCont")
            response = requests.patch(
                f"http://{address}/v1/{NAME}", params={"updateMask": mask}, json={}, timeout=30
            )
            assert response.status_code == 400
            assert response.json()["error"]["message"] == caught.value.message
            [violation] = response.json()["error"]["details"][0]["fieldViolations"]
            assert 'RetryConfig has no field "retry_cont";' in violation["description"]
        assert caught.value.message == "Invalid mask for Job: retry_config.retry_cont"
