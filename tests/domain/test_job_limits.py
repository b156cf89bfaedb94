"""Job settings that validation used to accept but that cannot be delivered or that overflow
the engine's arithmetic: header values HTTP cannot carry, hop-by-hop headers, backoffs past the
date range (issue 11, parts A and C)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator
from scheduler_emulator.domain.resources import RetryConfig
from scheduler_emulator.domain.retry import backoff
from scheduler_emulator.server.server import create_app
from tests.server.test_bad_input import JOBS, assert_invalid, full_job
from tests.support import case_table


@pytest.fixture
def client(emulator: Emulator) -> Client:
    return Client(create_app(emulator))


class TestHeaderValues:
    @case_table(__file__, "unsendable_header_values")
    def test_a_value_http_cannot_carry_is_refused_at_create(
        self, client: Client, value: str, code_point: str
    ) -> None:
        job = full_job()
        job["httpTarget"]["headers"] = {"X-Note": value}
        response = client.post(JOBS, json=job)
        assert_invalid(response, "httpTarget.headers", code_point)
        assert '"X-Note"' in response.json["error"]["message"]

    def test_latin_1_and_tabs_are_accepted(self, client: Client) -> None:
        job = full_job()
        job["httpTarget"]["headers"] = {"X-Note": "caf\u00e9\tok"}
        assert client.post(JOBS, json=job).status_code == 200

    def test_update_refuses_one_too(self, client: Client) -> None:
        assert client.post(JOBS, json=full_job()).status_code == 200
        response = client.patch(
            JOBS + "/nightly",
            query_string={"updateMask": "httpTarget.headers"},
            json={"httpTarget": {"headers": {"X-Note": "☃"}}},
        )
        assert_invalid(response, "httpTarget.headers", "U+2603")

    @case_table(__file__, "hop_by_hop_headers")
    def test_hop_by_hop_headers_are_refused_at_create(
        self, client: Client, name: str, value: str
    ) -> None:
        job = full_job()
        job["httpTarget"]["headers"] = {name: value}
        response = client.post(JOBS, json=job)
        assert_invalid(response, "httpTarget.headers", "hop-by-hop")
        assert f'"{name}"' in response.json["error"]["message"]


class TestRetryConfigBounds:
    @pytest.mark.parametrize("field", ["minBackoffDuration", "maxBackoffDuration"])
    def test_a_backoff_beyond_ten_years_is_refused(self, client: Client, field: str) -> None:
        config = {"minBackoffDuration": "5s", "maxBackoffDuration": "315576000000s"}
        config[field] = "315576000000s"
        response = client.post(JOBS, json=full_job(retryConfig=config))
        assert_invalid(response, f"retryConfig.{field}", "315576000000s")

    def test_a_hundred_doublings_with_a_duration_are_accepted_and_capped(
        self, client: Client
    ) -> None:
        config = {"retryCount": 5, "maxDoublings": 100, "minBackoffDuration": "5s"}
        assert client.post(JOBS, json=full_job(retryConfig=config)).status_code == 200

    @pytest.mark.parametrize(
        ("doublings", "retry"),
        [(100, 100), (2**31 - 1, 5), (2**31 - 1, 10**6), (3, 10**9)],
    )
    def test_backoff_never_overflows_and_stays_capped(self, doublings: int, retry: int) -> None:
        cap = timedelta(seconds=315_576_000_000)
        config = RetryConfig(
            min_backoff_duration=timedelta(seconds=5), max_backoff_duration=cap,
            max_doublings=doublings,
        )  # fmt: skip
        assert backoff(config, retry) <= cap

    def test_backoff_keeps_the_documented_sequence(self) -> None:
        config = RetryConfig(
            min_backoff_duration=timedelta(seconds=10),
            max_backoff_duration=timedelta(seconds=300),
            max_doublings=3,
        )
        waits = [backoff(config, k).total_seconds() for k in range(1, 9)]
        assert waits == [10, 20, 40, 80, 160, 240, 300, 300]
