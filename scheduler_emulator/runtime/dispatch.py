"""Build the HTTP request Cloud Scheduler sends for an attempt of an HTTP-target job (spec §10).

Pure: a function of the job and the run's ScheduleTime header value.

Headers (§10.2): the user's headers minus the ones the service ignores or replaces (``Host``,
``Content-Length``, ``User-Agent``, ``X-Google-*``, ``X-AppEngine-*``, ``X-CloudScheduler*``),
then ``User-Agent: Google-Cloud-Scheduler``, ``X-CloudScheduler: true``,
``X-CloudScheduler-JobName: <short job ID>``, ``X-CloudScheduler-ScheduleTime`` (when the run has
one), and ``Content-Type: application/octet-stream`` when there is a body and the user set no
Content-Type. The body is sent only for POST, PUT and PATCH (§10.3).
"""

from __future__ import annotations

from ..domain.resources import BODY_METHODS, HttpMethod, Job
from ..wire import (
    DEFAULT_CONTENT_TYPE,
    REPLACED_HEADERS,
    RESERVED_HEADER_PREFIXES,
    scheduler_headers,
)
from .transports import DeliveryRequest


def _kept(name: str) -> bool:
    lowered = name.lower()
    return lowered not in REPLACED_HEADERS and not lowered.startswith(RESERVED_HEADER_PREFIXES)


def build_request(
    job: Job, schedule_time: str | None, authorization: str | None = None
) -> DeliveryRequest:
    """Return the request of one attempt of ``job`` (spec §10.1–§10.3).

    :param job: a job with an HTTP target.
    :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` value (P2), or ``None`` to omit
        the header (English-like schedules, P16; forced runs with P3 ``omit``).
    :param authorization: a ``Bearer …`` value that overrides any user ``Authorization`` header
        (OIDC/OAuth tokens, §13); ``None`` passes the user's header through.
    :raises ValueError: if the job has no HTTP target.
    :return: the request: method, URI as stored, headers in sending order, body.
    """
    target = job.http_target
    if target is None:
        raise ValueError(f"job {job.name} has no httpTarget; only HTTP targets are dispatched.")
    method = target.http_method or HttpMethod.POST
    body = target.body if method in BODY_METHODS else b""
    headers: dict[str, str] = {}
    has_content_type = False
    for name, value in target.headers.items():
        if not _kept(name):
            continue
        lowered = name.lower()
        if lowered == "authorization" and authorization is not None:
            continue
        if lowered == "content-type":
            has_content_type = True
        headers[name] = value
    headers.update(scheduler_headers(job.job_id, schedule_time))
    if body and not has_content_type:
        headers["Content-Type"] = DEFAULT_CONTENT_TYPE
    if authorization is not None:
        headers["Authorization"] = authorization
    return DeliveryRequest(method.name, target.uri, headers, body)
