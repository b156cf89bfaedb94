"""``TimerRequest``: what a handler sees of the run's request."""

from __future__ import annotations

from datetime import datetime

import pytest

from scheduler_emulator.service import CaseInsensitiveHeaders, TimerRequest
from tests.support import case_table


class TestHeaders:
    def test_look_ups_ignore_the_case_of_the_header_name(self) -> None:
        headers = CaseInsensitiveHeaders({"X-CloudScheduler-JobName": "nightly"})

        assert headers["x-cloudscheduler-jobname"] == "nightly"
        assert headers.get("X-CLOUDSCHEDULER-JOBNAME") == "nightly"
        assert "x-CloudScheduler-JobName" in headers
        assert "X-Other" not in headers

    def test_iteration_keeps_the_first_spelling_and_the_last_value(self) -> None:
        headers = CaseInsensitiveHeaders([("X-Trace", "1"), ("x-trace", "2"), ("Accept", "*/*")])

        assert list(headers.items()) == [("X-Trace", "2"), ("Accept", "*/*")]
        assert len(headers) == 2

    def test_absent_header_raises_key_error(self) -> None:
        with pytest.raises(KeyError):
            CaseInsensitiveHeaders()["X-CloudScheduler"]

    def test_headers_equal_any_mapping_with_the_same_names_in_another_case(self) -> None:
        assert CaseInsensitiveHeaders({"A": "1"}) == {"a": "1"}
        assert CaseInsensitiveHeaders({"A": "1"}) != {"a": "2"}
        assert CaseInsensitiveHeaders({"A": "1"}) != [("A", "1")]

    def test_request_headers_are_case_insensitive_whatever_mapping_was_given(self) -> None:
        request = TimerRequest(headers={"x-cloudscheduler": "true"})

        assert isinstance(request.headers, CaseInsensitiveHeaders)
        assert request.headers["X-CloudScheduler"] == "true"


class TestRunIdentity:
    @case_table(__file__, "job_names")
    def test_job_name_is_the_last_segment_of_the_header(self, header: str, job_name: str) -> None:
        assert TimerRequest(headers={"x-cloudscheduler-jobname": header}).job_name == job_name

    @case_table(__file__, "schedule_times")
    def test_schedule_time_is_parsed_into_an_aware_datetime(
        self, header: str, instant: datetime
    ) -> None:
        request = TimerRequest(headers={"X-CloudScheduler-ScheduleTime": header})

        assert request.schedule_time == instant
        assert request.schedule_time is not None
        assert request.schedule_time.utcoffset() == instant.utcoffset()
        assert request.schedule_time_header == header

    @case_table(__file__, "malformed_schedule_times")
    def test_malformed_schedule_time_raises_value_error_when_read(
        self, header: str, error: str
    ) -> None:
        request = TimerRequest(headers={"X-CloudScheduler-ScheduleTime": header})

        with pytest.raises(ValueError, match=error):
            _ = request.schedule_time
        assert request.schedule_time_header == header

    def test_function_style_request_has_nothing_to_identify_the_run(self) -> None:
        request = TimerRequest()

        assert (request.job_name, request.schedule_time, request.schedule_time_header) == (
            None,
            None,
            None,
        )
        assert (request.body, request.method, request.path, len(request.headers)) == (
            b"",
            "POST",
            "",
            0,
        )
