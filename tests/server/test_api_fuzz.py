"""Malformed create and update requests: always a 4xx in Google's envelope, never a 5xx, and
the daemon keeps serving (hypothesis, against a live daemon)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.daemon import Daemon, running_daemon

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
NAME = "projects/my-project/locations/us-central1/jobs/"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(["", "0s", "-5s", "1.5s", "9999999999s", "POST", "7", "*/5 * * * *", "EST"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "name",
    "description",
    "schedule",
    "timeZone",
    "time_zone",
    "httpTarget",
    "http_target",
    "appEngineHttpTarget",
    "pubsubTarget",
    "retryConfig",
    "attemptDeadline",
    "state",
    "status",
]
TARGET_FIELDS = ["uri", "httpMethod", "headers", "body", "oidcToken", "oauthToken", "extra"]
RETRY_FIELDS = [
    "retryCount",
    "maxRetryDuration",
    "minBackoffDuration",
    "maxBackoffDuration",
    "maxDoublings",
]


@st.composite
def malformed_jobs(draw: st.DrawFn) -> dict[str, Any]:
    """A job-shaped object with at least one bad part."""
    job: dict[str, Any] = {
        "name": NAME + draw(st.sampled_from(["fuzz", "bad.id", "", "a" * 501, "ok_1"])),
        "schedule": draw(st.sampled_from(["0 2 * * *", "*/5 * * * * *", "L * * * *", ""])),
        "httpTarget": {"uri": draw(st.sampled_from(["http://127.0.0.1:9/x", "ftp://x", ""]))},
    }
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        where = draw(st.sampled_from(["job", "target", "retry"]))
        if where == "job":
            job[draw(st.sampled_from([*FIELDS, draw(st.text(max_size=10))]))] = draw(json_values)
        elif where == "target" and isinstance(job.get("httpTarget"), dict):
            job["httpTarget"][draw(st.sampled_from(TARGET_FIELDS))] = draw(json_values)
        else:
            retry = job.setdefault("retryConfig", {})
            if isinstance(retry, dict):
                retry[draw(st.sampled_from(RETRY_FIELDS))] = draw(json_values)
    return job


raw_bodies = st.one_of(
    malformed_jobs().map(lambda job: json.dumps(job).encode()),
    st.binary(max_size=64),
    json_values.map(lambda value: json.dumps(value).encode()),
)
masks = st.one_of(
    st.none(),
    st.just(""),
    st.lists(
        st.sampled_from(
            [
                *FIELDS,
                *(f"httpTarget.{f}" for f in TARGET_FIELDS),
                *(f"retryConfig.{f}" for f in RETRY_FIELDS),
                "nope",
                "a.b.c",
            ]
        ),
        max_size=4,
    ).map(",".join),
)


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with running_daemon("--in-memory", "--clock", "manual", "--start", "2026-01-01T00:00:00Z") as d:
        requests.post(
            d.url + JOBS,
            json={
                "name": NAME + "existing",
                "schedule": "0 2 * * *",
                "httpTarget": {"uri": "http://127.0.0.1:9/x"},
            },
            timeout=30,
        ).raise_for_status()
        yield d


def check(response: requests.Response) -> None:
    if response.status_code == 200:
        return  # the fuzzer happened to build a valid request
    assert 400 <= response.status_code < 500, response.text
    error = response.json()["error"]
    assert error["code"] == response.status_code
    assert isinstance(error["message"], str) and error["message"]
    assert error["status"] in {
        "INVALID_ARGUMENT",
        "FAILED_PRECONDITION",
        "NOT_FOUND",
        "ALREADY_EXISTS",
    }


FUZZ = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(body=raw_bodies)
def test_malformed_creates_get_a_4xx_envelope(daemon: Daemon, body: bytes) -> None:
    response = requests.post(
        daemon.url + JOBS, data=body, headers={"Content-Type": "application/json"}, timeout=30
    )
    check(response)
    if response.status_code == 200:
        requests.delete(daemon.url + "/v1/" + response.json()["name"], timeout=30)


@FUZZ
@given(body=raw_bodies, mask=masks)
def test_malformed_updates_get_a_4xx_envelope_and_leave_the_job(
    daemon: Daemon, body: bytes, mask: str | None
) -> None:
    before = requests.get(daemon.url + JOBS + "/existing", timeout=30).json()
    params = {} if mask is None else {"updateMask": mask}
    response = requests.patch(
        daemon.url + JOBS + "/existing",
        data=body,
        params=params,
        timeout=30,
        headers={"Content-Type": "application/json"},
    )
    check(response)
    if response.status_code != 200:
        assert requests.get(daemon.url + JOBS + "/existing", timeout=30).json() == before
    else:  # restore the job for the next example
        requests.delete(daemon.url + JOBS + "/existing", timeout=30)
        requests.post(daemon.url + JOBS, json=before | {"state": None}, timeout=30)


def test_the_daemon_still_serves_after_the_fuzzing(daemon: Daemon) -> None:
    assert daemon.get("/_emulator/health")["status"] == "ok"
    assert daemon.process.poll() is None
