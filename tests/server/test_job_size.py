"""Google's 1 MB limit on a job, on both surfaces: a job with a 1,000,000-byte body is
created over REST (where it travels base64-encoded in JSON, 1,333,336 bytes of body text) and
over gRPC; a larger job is INVALID_ARGUMENT naming the limit (tests/api/test_parity.py); a REST
body past the request limit is refused 400 before it is read."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from scheduler_emulator.api.v1 import MAX_REQUEST_BYTES
from scheduler_emulator.domain.validation import MAX_JOB_SIZE_BYTES
from scheduler_emulator.runtime._emulator import Emulator
from scheduler_emulator.server.server import serve
from tests.daemon import serving_in_thread
from tests.support import TARGET

PARENT = "projects/my-project/locations/us-central1"
BODY = b"x" * 1_000_000


@pytest.fixture
def address(emulator: Emulator) -> Iterator[str]:
    """The daemon's one port (REST and gRPC) serving ``emulator``."""
    with serving_in_thread(serve(emulator, "127.0.0.1", 0)) as url:
        yield url.removeprefix("http://")


def job(name: str, body: bytes) -> dict[str, Any]:
    return {
        "name": f"{PARENT}/jobs/{name}",
        "schedule": "0 2 * * *",
        "httpTarget": {"uri": TARGET, "body": base64.b64encode(body).decode()},
    }


def test_the_limits_are_one_mebibyte_a_job_and_two_a_rest_request() -> None:
    assert (MAX_JOB_SIZE_BYTES, MAX_REQUEST_BYTES) == (1_048_576, 2_097_152)


def test_a_1000000_byte_body_is_created_over_rest(address: str, emulator: Emulator) -> None:
    response = requests.post(
        f"http://{address}/v1/{PARENT}/jobs", json=job("big", BODY), timeout=60
    )
    assert response.status_code == 200, response.text[:300]
    assert emulator.get_job("big").http_target.body == BODY  # type: ignore[union-attr]


def test_a_1000000_byte_body_is_created_over_grpc(address: str, emulator: Emulator) -> None:
    pytest.importorskip("grpc")
    from scheduler_emulator import client

    scheduler = client(host=address)
    try:
        created = scheduler.create_job(
            parent=PARENT,
            job={
                "name": f"{PARENT}/jobs/big",
                "schedule": "0 2 * * *",
                "http_target": {"uri": TARGET, "body": BODY},
            },
        )
    finally:
        scheduler.transport.close()
    assert created.http_target.body == BODY
    assert emulator.get_job("big").http_target.body == BODY  # type: ignore[union-attr]


def test_a_rest_body_past_the_request_limit_is_refused_400(address: str) -> None:
    text = b'{"name": "' + b"x" * MAX_REQUEST_BYTES + b'"}'
    response = requests.post(
        f"http://{address}/v1/{PARENT}/jobs",
        data=text,
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["fieldViolations"][0]["field"] == "job"
