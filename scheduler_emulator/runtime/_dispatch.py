"""Build the HTTP request Cloud Scheduler sends for an attempt of an HTTP-target job.

Pure: a function of the job and the run's ScheduleTime header value. What does not change from
one attempt to the next is a :class:`RequestTemplate`, built by :func:`request_template` for
HTTP and App Engine targets alike (each dispatcher keeps one per job configuration).

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

_EMULATOR_ONLY = EMULATOR_HTTP2_HEADER.lower()


def kept_header(name: str) -> bool:
    """Whether a job's own header ``name`` is sent: not one the service replaces (``Host``,
    ``Content-Length``, ``User-Agent``) or reserves (``X-Google-*``, ``X-AppEngine-*``,
    ``X-CloudScheduler*``), nor the emulator-only ``X-Emulator-Http2``."""
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


def request_template(
    job_id: str,
    method: HttpMethod | None,
    url: str,
    user_headers: Mapping[str, str],
    body: bytes,
    *,
    body_methods: frozenset[HttpMethod] = BODY_METHODS,
    token: bool = False,
    user_agent_suffix: str | None = None,
    http2: bool | None = None,
) -> RequestTemplate:
    """Work out what every attempt of one job configuration sends alike — the one request
    builder of HTTP and App Engine targets.

    :param job_id: the job's short ID (``X-CloudScheduler-JobName``).
    :param method: the stored method; ``None`` is POST.
    :param url: the URL sent, percent-encoded where HTTP needs it.
    :param user_headers: the job's headers; those the service replaces or reserves are dropped
        (:func:`kept_header`).
    :param body: the stored body, sent only for ``body_methods``.
    :param token: the attempts carry a token (OIDC/OAuth), which replaces any user
        ``Authorization`` header.
    :param user_agent_suffix: App Engine targets: the ``User-Agent`` is the user's value
        followed by this; ``None``: ``Google-Cloud-Scheduler`` whatever the user set.
    :param http2: see :attr:`RequestTemplate.http2`.
    """
    method = method or HttpMethod.POST
    body = body if method in body_methods else b""
    headers: dict[str, str] = {}
    user_agent = ""
    has_content_type = False
    for name, value in user_headers.items():
        lowered = name.lower()
        if lowered == "user-agent":
            user_agent = value.strip()
        if not kept_header(name) or (lowered == "authorization" and token):
            continue
        has_content_type = has_content_type or lowered == "content-type"
        headers[name] = value
    headers.update(scheduler_headers(job_id, None))
    if user_agent_suffix is not None:
        headers["User-Agent"] = " ".join(filter(None, [user_agent, user_agent_suffix]))
    return RequestTemplate(
        method.name, url, headers, body, bool(body) and not has_content_type, http2
    )


def http_template(job: Job, token: bool = False) -> RequestTemplate:
    """The :class:`RequestTemplate` of an HTTP-target job (see :func:`request_template`).

    :raises ValueError: if the job has no HTTP target.
    """
    target = job.http_target
    if target is None:
        raise ValueError(f"job {job.name} has no httpTarget; only HTTP targets are dispatched.")
    return request_template(
        job.job_id,
        target.http_method,
        sendable_uri(target.uri),
        target.headers,
        target.body,
        token=token,
        http2=_http2(target),
    )


def build_request(
    job: Job, schedule_time: str | None, authorization: str | None = None
) -> DeliveryRequest:
    """Return the request of one attempt of an HTTP-target ``job``.

    :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` value, or ``None`` to omit
        the header (English-like schedules; forced runs under ``force_run_schedule_time="omit"``).
    :param authorization: a ``Bearer …`` value that overrides any user ``Authorization`` header
        (OIDC/OAuth tokens); ``None`` passes the user's header through.
    :raises ValueError: if the job has no HTTP target.
    :return: the request: method, URI as stored but percent-encoded where HTTP needs it
        (:func:`~scheduler_emulator.domain.validation.sendable_uri`), headers in sending order,
        body.
    """
    return http_template(job, authorization is not None).build(schedule_time, authorization)
