"""The request an attempt sends: method and URI, the headers Cloud Scheduler sets or replaces,
and the body (https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from scheduler_emulator.domain.resources import HttpMethod, HttpTarget, Job, with_defaults
from scheduler_emulator.runtime.delivery.dispatchers import HttpDispatcher, http_template
from scheduler_emulator.runtime.delivery.transports import DeliveryRequest, TransportResult

NAME = "projects/my-project/locations/us-central1/jobs/nightly"


def job_with(target: HttpTarget) -> Job:
    return with_defaults(Job(name=NAME, schedule="0 2 * * *", http_target=target))


def build_request(
    job: Job, schedule_time: str | None, authorization: str | None = None
) -> DeliveryRequest:
    """The request of one attempt of ``job``, as the HTTP dispatcher builds it."""
    return http_template(job, authorization is not None).build(schedule_time, authorization)


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


def test_headers_go_in_order_the_users_then_the_schedulers_then_the_token() -> None:
    target = HttpTarget(
        "http://t.test/", body=b"{}", headers={"X-A": "1", "Authorization": "Bearer user"}
    )
    request = build_request(job_with(target), "2026-09-24T02:00:00Z", "Bearer minted")
    assert list(request.headers) == [
        "X-A",
        "Content-Type",  # the stored target's, a default when it has a body and none
        "User-Agent",
        "X-CloudScheduler",
        "X-CloudScheduler-JobName",
        "X-CloudScheduler-ScheduleTime",
        "Authorization",
    ]
    assert request.headers["Authorization"] == "Bearer minted"


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[DeliveryRequest] = []

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        self.sent.append(request)
        return TransportResult(status=200)

    def close(self) -> None:
        """Nothing to release."""


def test_the_dispatcher_follows_a_replaced_job_and_gives_each_attempt_its_own_headers() -> None:
    transport = _Recorder()
    dispatcher = HttpDispatcher(transport)
    now = datetime(2026, 9, 24, 2, tzinfo=UTC)
    job = job_with(HttpTarget("http://t.test/a", headers={"X-Custom": "one"}))
    first = dispatcher.prepare(job, "2026-09-24T02:00:00Z", now)
    second = dispatcher.prepare(job, "2026-09-24T02:05:00Z", now)  # keeps the template
    first.record["headers"]["X-Custom"] = "changed by the caller"
    second.record["headers"]["X-Custom"] = "changed by the caller"
    assert dispatcher.prepare(job, None, now).record["headers"]["X-Custom"] == "one"
    assert second.record["headers"]["X-CloudScheduler-ScheduleTime"] == "2026-09-24T02:05:00Z"
    assert second.transport.send(second.request, second.timeout_seconds).status == 200
    assert transport.sent[0].headers["X-CloudScheduler-ScheduleTime"] == "2026-09-24T02:05:00Z"
    changed = replace(job, http_target=HttpTarget("http://t.test/b", headers={"X-Custom": "two"}))
    third = dispatcher.prepare(changed, None, now)
    assert third.record["url"] == "http://t.test/b"
    assert third.record["headers"]["X-Custom"] == "two"
    assert "X-CloudScheduler-ScheduleTime" not in third.record["headers"]
    assert dict(third.record["headers"]) == dict(build_request(changed, None).headers)
    for _ in range(2):  # its template is the changed job's
        again = dispatcher.prepare(changed, "2026-09-24T02:10:00Z", now)
        assert (again.record["url"], again.record["headers"]["X-Custom"]) == (
            "http://t.test/b",
            "two",
        )
