"""The request an attempt sends (spec §10.1–§10.3)."""

from __future__ import annotations

from scheduler_emulator.domain.resources import HttpMethod, HttpTarget, Job, with_defaults
from scheduler_emulator.runtime.dispatch import build_request

NAME = "projects/my-project/locations/us-central1/jobs/nightly"


def job_with(target: HttpTarget) -> Job:
    return with_defaults(Job(name=NAME, schedule="0 2 * * *", http_target=target))


def test_scheduler_headers_carry_the_short_job_id_and_schedule_time() -> None:
    request = build_request(job_with(HttpTarget("http://t.test/run?x=1")), "2026-09-24T02:00:00Z")
    assert request.method == "POST"
    assert request.url == "http://t.test/run?x=1"
    assert request.body == b""
    assert dict(request.headers) == {
        "User-Agent": "Google-Cloud-Scheduler",
        "X-CloudScheduler": "true",
        "X-CloudScheduler-JobName": "nightly",
        "X-CloudScheduler-ScheduleTime": "2026-09-24T02:00:00Z",
    }


def test_no_schedule_time_header_when_the_run_has_none() -> None:
    request = build_request(job_with(HttpTarget("http://t.test/")), None)
    assert "X-CloudScheduler-ScheduleTime" not in request.headers


def test_body_gets_octet_stream_when_the_user_set_no_content_type() -> None:
    request = build_request(job_with(HttpTarget("http://t.test/", body=b"{}")), None)
    assert request.body == b"{}"
    assert request.headers["Content-Type"] == "application/octet-stream"


def test_user_content_type_is_kept_in_any_case() -> None:
    target = HttpTarget("http://t.test/", body=b"{}", headers={"content-type": "application/json"})
    headers = build_request(job_with(target), None).headers
    assert headers["content-type"] == "application/json"
    assert "Content-Type" not in headers


def test_reserved_and_replaced_user_headers_are_dropped() -> None:
    target = HttpTarget(
        "http://t.test/",
        headers={
            "Host": "evil.test",
            "User-Agent": "mine",
            "Content-Length": "99",
            "X-Google-Foo": "1",
            "X-AppEngine-Bar": "2",
            "X-CloudScheduler-JobName": "forged",
            "X-Custom": "kept",
            "Authorization": "Bearer user-token",
        },
    )
    headers = dict(build_request(job_with(target), None).headers)
    assert headers["X-Custom"] == "kept"
    assert headers["Authorization"] == "Bearer user-token"
    assert headers["User-Agent"] == "Google-Cloud-Scheduler"
    assert headers["X-CloudScheduler-JobName"] == "nightly"
    assert not {"Host", "Content-Length", "X-Google-Foo", "X-AppEngine-Bar"} & set(headers)


def test_token_authorization_overrides_the_user_header() -> None:
    target = HttpTarget("http://t.test/", headers={"Authorization": "Bearer user"})
    headers = build_request(job_with(target), None, authorization="Bearer minted").headers
    assert [v for k, v in headers.items() if k.lower() == "authorization"] == ["Bearer minted"]


def test_get_sends_no_body_and_no_content_type() -> None:
    request = build_request(job_with(HttpTarget("http://t.test/", HttpMethod.GET)), None)
    assert (request.method, request.body) == ("GET", b"")
    assert "Content-Type" not in request.headers
