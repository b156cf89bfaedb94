"""Build the HTTP request Cloud Scheduler sends for an attempt of an HTTP-target job.

Pure: a function of the job and the run's ScheduleTime header value. What does not change from
one attempt to the next is a :class:`RequestTemplate` (the dispatcher keeps one per job).

Headers: the user's headers minus the ones the service ignores or replaces (``Host``,
``Content-Length``, ``User-Agent``, ``X-Google-*``, ``X-AppEngine-*``, ``X-CloudScheduler*``)
and the emulator-only ``X-Emulator-Http2`` (it sets :attr:`DeliveryRequest.http2` instead),
then ``User-Agent: Google-Cloud-Scheduler``, ``X-CloudScheduler: true``,
``X-CloudScheduler-JobName: <short job ID>``, ``X-CloudScheduler-ScheduleTime`` (when the run has
one), and ``Content-Type: application/octet-stream`` when there is a body and the user set no
Content-Type. The body is sent only for POST, PUT and PATCH.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ..domain.resources import BODY_METHODS, HttpMethod, HttpTarget, Job
from ..domain.validation import sendable_uri
from ..wire import (
    DEFAULT_CONTENT_TYPE,
    EMULATOR_HTTP2_HEADER,
    REPLACED_HEADERS,
    RESERVED_HEADER_PREFIXES,
    SCHEDULE_TIME_HEADER,
    emulator_http2,
    scheduler_headers,
)
from ._transports import DeliveryRequest

__all__ = [
    "RequestTemplate",
    "build_request",
    "request_template",
]


_EMULATOR_ONLY = EMULATOR_HTTP2_HEADER.lower()


def _kept(name: str) -> bool:
    lowered = name.lower()
    return (
        lowered not in REPLACED_HEADERS
        and not lowered.startswith(RESERVED_HEADER_PREFIXES)
        and lowered != _EMULATOR_ONLY
    )


def _http2(target: HttpTarget) -> bool | None:
    """The HTTP version the job asks for with its emulator-only ``X-Emulator-Http2``:
    ``True`` (``true``: HTTP/2), ``False`` (``false``: HTTP/1.1), ``None`` (no such header)."""
    value = emulator_http2(target.headers)
    return None if value is None else value.strip().lower() == "true"


class RequestTemplate(NamedTuple):
    """What the requests of one job's attempts share: everything but the ScheduleTime header
    and the token, worked out once per job configuration (see :func:`request_template`).

    :param method: HTTP method name.
    :param url: the URI as stored.
    :param headers: the user's kept headers, then ``User-Agent``, ``X-CloudScheduler`` and
        ``X-CloudScheduler-JobName``, in sending order.
    :param body: the body sent (empty unless POST, PUT or PATCH).
    :param default_content_type: add ``Content-Type: application/octet-stream`` (a body and no
        user Content-Type).
    :param http2: the job's emulator-only ``X-Emulator-Http2``: ``True`` HTTP/2 (h2c),
        ``False`` HTTP/1.1, whatever the daemon's ``--http2``; ``None``: the daemon's choice.
    """

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes
    default_content_type: bool
    http2: bool | None = None

    def build(self, schedule_time: str | None, authorization: str | None) -> DeliveryRequest:
        """The request of one attempt (see :func:`build_request`); a fresh headers dict."""
        headers = dict(self.headers)
        if schedule_time is not None:
            headers[SCHEDULE_TIME_HEADER] = schedule_time
        if self.default_content_type:
            headers["Content-Type"] = DEFAULT_CONTENT_TYPE
        if authorization is not None:
            headers["Authorization"] = authorization
        return DeliveryRequest(self.method, self.url, headers, self.body, self.http2)


def _http_target(job: Job) -> HttpTarget:
    if job.http_target is None:
        raise ValueError(f"job {job.name} has no httpTarget; only HTTP targets are dispatched.")
    return job.http_target


def _user_headers(target: HttpTarget, token: bool) -> tuple[dict[str, str], bool]:
    """The user's headers that are sent, in order (a token replaces their ``Authorization``),
    and whether one of them is a Content-Type."""
    headers: dict[str, str] = {}
    has_content_type = False
    for name, value in target.headers.items():
        if not _kept(name):
            continue
        lowered = name.lower()
        if lowered == "authorization" and token:
            continue
        if lowered == "content-type":
            has_content_type = True
        headers[name] = value
    return headers, has_content_type


def request_template(job: Job, token: bool = False) -> RequestTemplate:
    """Work out what every attempt of ``job`` sends alike: request line, headers and body.

    :param job: a job with an HTTP target.
    :param token: the attempts carry a token (OIDC/OAuth), which replaces any user
        ``Authorization`` header.
    :raises ValueError: if the job has no HTTP target.
    """
    target = _http_target(job)
    method = target.http_method or HttpMethod.POST
    body = target.body if method in BODY_METHODS else b""
    headers, has_content_type = _user_headers(target, token)
    headers.update(scheduler_headers(job.job_id, None))
    return RequestTemplate(
        method.name,
        sendable_uri(target.uri),
        headers,
        body,
        bool(body) and not has_content_type,
        _http2(target),
    )


def build_request(
    job: Job, schedule_time: str | None, authorization: str | None = None
) -> DeliveryRequest:
    """Return the request of one attempt of ``job``, in one pass: the
    request ``request_template(job, ...).build(schedule_time, authorization)`` gives.

    :param job: a job with an HTTP target.
    :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` value, or ``None`` to omit
        the header (English-like schedules; forced runs under ``force_run_schedule_time="omit"``).
    :param authorization: a ``Bearer …`` value that overrides any user ``Authorization`` header
        (OIDC/OAuth tokens); ``None`` passes the user's header through.
    :raises ValueError: if the job has no HTTP target.
    :return: the request: method, URI as stored but percent-encoded where HTTP needs it
        (:func:`~scheduler_emulator.domain.validation.sendable_uri`), headers in sending order,
        body.
    """
    target = _http_target(job)
    method = target.http_method or HttpMethod.POST
    body = target.body if method in BODY_METHODS else b""
    headers, has_content_type = _user_headers(target, authorization is not None)
    headers.update(scheduler_headers(job.job_id, schedule_time))
    if body and not has_content_type:
        headers["Content-Type"] = DEFAULT_CONTENT_TYPE
    if authorization is not None:
        headers["Authorization"] = authorization
    return DeliveryRequest(method.name, sendable_uri(target.uri), headers, body, _http2(target))
