"""Dispatchers: one per target kind (``job.target_type``: ``"HTTP"``, ``"PUBSUB"``,
``"APP_ENGINE_HTTP"``), each turning an attempt of a job into a :class:`Prepared` for the engine
to send (fault injection may send it several times, or not at all). A kind with no dispatcher
gets an attempt recorded as failed with :class:`NotDispatched`'s message;
:meth:`~scheduler_emulator.Emulator.set_dispatcher` replaces one (the Firebase bridge wraps them).

HTTP and App Engine targets share one request builder, :func:`request_template`, whose
:class:`RequestTemplate` is kept per job configuration. Headers: the user's headers minus the
ones the service ignores or replaces (``Host``, ``Content-Length``, ``User-Agent``,
``X-Google-*``, ``X-AppEngine-*``, ``X-CloudScheduler*``) and the emulator-only
``X-Emulator-Http2`` (it sets :attr:`DeliveryRequest.http2` instead), then ``User-Agent:
Google-Cloud-Scheduler``, ``X-CloudScheduler: true``, ``X-CloudScheduler-JobName: <short job
ID>``, ``X-CloudScheduler-ScheduleTime`` (when the run has one), and ``Content-Type:
application/octet-stream`` when there is a body and the user set no Content-Type. The body is
sent only for POST, PUT and PATCH.

App Engine HTTP targets: production sends the request to the app's host, routed by
``appEngineRouting`` (service, version, instance). Locally there is no App Engine, so each
service is mapped to a base URL (``--app-engine-url URL`` for every service,
``--app-engine-url SERVICE=URL`` for one)::

    urls = parse_app_engine_urls(["http://127.0.0.1:8081", "worker=http://127.0.0.1:8082"])
    dispatcher = AppEngineDispatcher(HttpTransport(), urls)

What is reproduced from the ``AppEngineHttpTarget`` reference (cloud.google.com/scheduler/docs/
reference/rest/v1/projects.locations.jobs#appenginehttptarget):

- URL = the mapped base URL + ``relativeUri``; method as stored (POST by default); the body
  only for POST and PUT.
- Headers as above, except ``User-Agent`` = the user's value followed by ``AppEngine-Google;
  (+http://code.google.com/appengine)`` (that alone by default).
- "Error 503 is considered an App Engine system error instead of an application error.
  Requests returning error 503 will be retried regardless of retry configuration and not
  counted against retry counts."
- The host production would route to (``AppEngineRouting.host``: ``[instance.][version.]
  [service.]<project>.appspot.com``) is shown in the attempt record as ``appEngineHost``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ...domain.errors import InvalidArgument
from ...domain.resources import BODY_METHODS, DEFAULT_ATTEMPT_DEADLINE, HttpMethod, Job
from ...domain.validation import APP_ENGINE_BODY_METHODS, check_url, sendable_uri
from ...wire import (
    APP_ENGINE_USER_AGENT_SUFFIX,
    DEFAULT_CONTENT_TYPE,
    EMULATOR_HTTP2_HEADER,
    REPLACED_HEADERS,
    RESERVED_HEADER_PREFIXES,
    SCHEDULE_TIME_HEADER,
    emulator_http2,
    scheduler_headers,
    spell_headers,
)
from .._options import CACHED_JOBS, DEFAULT_HEADER_CASE
from .transports import DeliveryRequest, Transport, TransportResult, startable

if TYPE_CHECKING:
    from ...domain.resources import AppEngineHttpTarget, HttpTarget
    from .tokens import TokenAuthority


class NotDispatched(Exception):
    """The attempt cannot be made: the message (its debug text) says why and what to do."""


class Sender(Protocol):
    """Sends one prepared request: a :class:`~scheduler_emulator.Transport` for HTTP kinds
    (``request`` a :class:`DeliveryRequest`), the Pub/Sub dispatcher for a publish."""

    def send(self, request: Any, timeout_seconds: float) -> TransportResult:
        """Send ``request`` once, giving up after ``timeout_seconds``; never raise for a
        target's failure (the result says what happened)."""


#: The longest request body an attempt record keeps (as text, when it is UTF-8).
RECORDED_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class Prepared:
    """One attempt, ready to send with ``transport.send(request, timeout_seconds)`` (or the
    transport's ``start``, when ``startable``).

    :param record: what the attempt record shows as ``request`` (``{"method", "url",
        "headers", "body"}`` for HTTP kinds, ``body`` the text of a UTF-8 body of at most
        :data:`RECORDED_BODY_BYTES`, else absent; kind-specific keys otherwise).
        JSON-serialisable.
    :param timeout_seconds: the attempt deadline, in seconds.
    :param transport: what sends ``request``.
    :param request: what is sent (a :class:`DeliveryRequest` for HTTP kinds).
    :param retry_always: HTTP statuses retried whatever the retry config and not counted
        against ``retryCount`` (App Engine targets: ``{503}``).
    :param startable: ``transport`` can begin ``request`` without holding the calling thread
        (:func:`~scheduler_emulator.runtime.delivery.transports.startable`).
    """

    record: dict[str, Any]
    timeout_seconds: float
    transport: Sender
    request: Any
    retry_always: frozenset[int] = frozenset()
    startable: bool = False


class Dispatcher(Protocol):
    """Prepares attempts of the jobs of one target kind."""

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Prepare one attempt of ``job`` at ``now`` (aware UTC).

        :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` value, or ``None``.
        :raises NotDispatched: when the attempt cannot be made (say why in the message).
        """


# ---------------------------------------------------------------------------- requests

#: User headers never sent: replaced, emulator-only (``X-Emulator-Http2``) or reserved prefixes.
_DROPPED = REPLACED_HEADERS | {EMULATOR_HTTP2_HEADER.lower()}


class RequestTemplate(NamedTuple):
    """What the requests of one job's attempts share: everything but the ScheduleTime header
    and the token, worked out once per job configuration (see :func:`request_template`).

    :param method: HTTP method name.
    :param url: the URL sent.
    :param headers: the user's kept headers, then ``User-Agent``, ``X-CloudScheduler`` and
        ``X-CloudScheduler-JobName``, in sending order.
    :param body: the body sent (empty for a method that sends none).
    :param default_content_type: add ``Content-Type: application/octet-stream`` (a body and no
        user Content-Type).
    :param http2: :attr:`DeliveryRequest.http2`, from the job's ``X-Emulator-Http2``.
    """

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes
    default_content_type: bool
    http2: bool | None = None

    def build(self, schedule_time: str | None, authorization: str | None) -> DeliveryRequest:
        """The request of one attempt; a fresh headers dict.

        :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` value; ``None`` omits it
            (English-like schedules; forced runs under ``force_run_schedule_time="omit"``).
        :param authorization: a ``Bearer …`` value (OIDC/OAuth tokens), sent last, or ``None``.
        """
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
    target: HttpTarget | AppEngineHttpTarget,
    url: str,
    *,
    token: bool = False,
    app_engine: bool = False,
) -> RequestTemplate:
    """Work out what every attempt of one job configuration sends alike — the one request
    builder of HTTP and App Engine targets.

    :param job_id: the job's short ID (``X-CloudScheduler-JobName``).
    :param target: the job's target: its method (``None`` is POST); its body, sent only for
        POST, PUT and PATCH (POST and PUT on App Engine); its headers, those the service
        replaces or reserves and the emulator-only ``X-Emulator-Http2`` dropped.
    :param url: the URL sent, percent-encoded where HTTP needs it.
    :param token: the attempts carry an OIDC/OAuth token, which replaces a user Authorization.
    :param app_engine: an App Engine target: its body methods, no ``X-Emulator-Http2``, and the
        ``User-Agent`` is the user's followed by :data:`~scheduler_emulator.wire.
        APP_ENGINE_USER_AGENT_SUFFIX` (otherwise ``Google-Cloud-Scheduler`` whatever the user set).
    """
    method = target.http_method or HttpMethod.POST
    body_methods = APP_ENGINE_BODY_METHODS if app_engine else BODY_METHODS
    body = target.body if method in body_methods else b""
    dropped = (_DROPPED | {"authorization"}) if token else _DROPPED
    lowered = {name.lower(): value for name, value in target.headers.items()}
    headers = {
        name: value
        for name, value in target.headers.items()
        if (low := name.lower()) not in dropped and not low.startswith(RESERVED_HEADER_PREFIXES)
    }
    headers.update(scheduler_headers(job_id, None))
    if app_engine:
        user_agent = lowered.get("user-agent", "").strip()
        headers["User-Agent"] = " ".join(filter(None, [user_agent, APP_ENGINE_USER_AGENT_SUFFIX]))
    default_content_type = bool(body) and "content-type" not in lowered
    value = None if app_engine else emulator_http2(target.headers)
    http2 = None if value is None else value.strip().lower() == "true"
    return RequestTemplate(method.name, url, headers, body, default_content_type, http2)


def http_template(job: Job, token: bool = False) -> RequestTemplate:
    """The :class:`RequestTemplate` of an HTTP-target job (``token`` as :func:`request_template`'s):
    the URI as stored but percent-encoded where HTTP needs it
    (:func:`~scheduler_emulator.domain.validation.sendable_uri`).

    :raises ValueError: if the job has no HTTP target.
    """
    target = job.http_target
    if target is None:
        raise ValueError(f"job {job.name} has no httpTarget; only HTTP targets are dispatched.")
    return request_template(job.job_id, target, sendable_uri(target.uri), token=token)


def _prepared(
    job: Job,
    request: DeliveryRequest,
    header_case: str,
    transport: Transport,
    retry_always: frozenset[int] = frozenset(),
    **record: Any,
) -> Prepared:
    """The :class:`Prepared` of ``request``, its header names spelled in ``header_case``."""
    if header_case != "google":
        request = replace(request, headers=spell_headers(dict(request.headers), header_case))
    shown = {"method": request.method, "url": request.url, "headers": dict(request.headers)}
    if len(request.body) <= RECORDED_BODY_BYTES:  # what replay --attempts sends again
        with contextlib.suppress(UnicodeDecodeError):
            shown["body"] = request.body.decode()
    deadline = (job.attempt_deadline or DEFAULT_ATTEMPT_DEADLINE).total_seconds()
    return Prepared(
        shown | record, deadline, transport, request, retry_always, startable(transport, request)
    )


def _route(url: str, transport: Transport, google_apis: Transport | None) -> Transport:
    """The transport of ``url``: ``google_apis`` for ``*.googleapis.com`` (see HttpDispatcher)."""
    return google_apis if google_apis is not None and ".googleapis.com" in url else transport


# ---------------------------------------------------------------------------- HTTP targets


@dataclass(eq=False)
class HttpDispatcher:
    """HTTP targets: the request of :func:`http_template` (kept per job configuration), with an
    OIDC/OAuth token when the job asks for one, sent by ``transport``.

    :param transport: how requests reach targets.
    :param tokens: mints ``Authorization`` tokens; ``None`` sends none.
    :param header_case: how header names are spelled (:data:`~scheduler_emulator.wire.
        HEADER_CASES`): the scheduler's and the job's own alike.
    :param google_apis: the transport of ``*.googleapis.com`` URLs (the
        :class:`~scheduler_emulator.Emulator` gives one that answers the Cloud Run Admin API
        in-process and refuses every other Google API); ``None``: ``transport`` sends them.
    """

    transport: Transport
    tokens: TokenAuthority | None = None
    _: KW_ONLY
    header_case: str = DEFAULT_HEADER_CASE
    google_apis: Transport | None = None
    # Job name -> (its configuration, the authority of its tokens, template, transport).
    _templates: dict[str, tuple[Job, TokenAuthority | None, RequestTemplate, Transport]] = field(
        default_factory=dict, init=False, repr=False
    )

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Build the attempt's request (see :class:`Dispatcher`)."""
        known = self._templates.get(job.name)
        if known is None or known[0] is not job:  # a new job configuration
            if len(self._templates) >= CACHED_JOBS:  # jobs deleted or renamed: start afresh
                self._templates.clear()
            target = job.http_target
            asks = target is not None and (target.oidc_token or target.oauth_token) is not None
            tokens = self.tokens if asks else None
            template = http_template(job, tokens is not None)
            transport = _route(template.url, self.transport, self.google_apis)
            known = self._templates[job.name] = (job, tokens, template, transport)
        authorization = None if known[1] is None else known[1].authorization(job, now)
        request = known[2].build(schedule_time, authorization)
        return _prepared(job, request, self.header_case, known[3])


# ---------------------------------------------------------------------------- App Engine targets

#: The key of the mapping that serves every service without a mapping of its own.
EVERY_SERVICE = "*"
#: Statuses retried whatever the retry config and not counted (AppEngineHttpTarget reference).
APP_ENGINE_RETRY_ALWAYS = frozenset({503})


def parse_app_engine_urls(values: Iterable[str] | str | Mapping[str, str]) -> dict[str, str]:
    """Turn ``--app-engine-url`` values (or the Python API's argument) into service → base URL.

    :param values: a base URL for every service; ``SERVICE=URL`` entries; or a mapping
        (``{"worker": "http://…", "*": "http://…"}``; ``"*"`` serves unmapped services).
    :raises ValueError: for a URL that is not an ``http(s)://`` base URL
        (:func:`~scheduler_emulator.domain.validation.check_url`) or a service mapped twice.
    :return: service name (or ``"*"``) → base URL without a trailing ``/``.
    """
    if isinstance(values, str):
        values = [values]
    pairs = values.items() if isinstance(values, Mapping) else map(_service_url, values)
    urls: dict[str, str] = {}
    for service, url in pairs:
        if not service:
            raise ValueError(f"--app-engine-url ={url}: the service name before = is empty.")
        flag = "--app-engine-url" + ("" if service == EVERY_SERVICE else f" {service}=URL")
        try:
            check_url(url, flag, base=True)
        except InvalidArgument as exc:
            named = service == EVERY_SERVICE and "=" in url  # a service name it did not take
            hint = " (a service name before = holds no ':', '/' or space)" if named else ""
            meant = url.partition(":http")[0]  # worker:http://… (trial 229)
            if service == EVERY_SERVICE and meant not in (url, ""):
                hint = f" (to map service {meant!r}, write {meant}=URL)"
            raise ValueError(exc.message.rstrip(".") + hint + ".") from None
        if service in urls:
            which = "every service" if service == EVERY_SERVICE else f"service {service!r}"
            raise ValueError(f"--app-engine-url maps {which} twice ({urls[service]} and {url}).")
        urls[service] = url.rstrip("/")
    return urls


def _service_url(value: str) -> tuple[str, str]:
    """A ``--app-engine-url`` value as ``(service, URL)``; ``"*"`` for a URL alone (what comes
    before an ``=`` is a service unless it holds a ``:`` or ``/``, as a URL's query would)."""
    service, sep, url = value.partition("=")
    return (service, url) if sep and re.fullmatch(r"[^:/\s]*", service) else (EVERY_SERVICE, value)


def app_engine_url(target: AppEngineHttpTarget, urls: Mapping[str, str]) -> str | None:
    """Where an App Engine target's attempts go locally: the base URL ``urls`` maps to its
    service (else to every service, ``"*"``) and its relative URI, percent-encoded where HTTP
    needs it; ``None`` when neither is mapped."""
    base = urls.get(target.service) or urls.get(EVERY_SERVICE)
    return None if base is None else base + sendable_uri(target.relative_uri or "/")


@dataclass(eq=False)
class AppEngineDispatcher:
    """Dispatcher of App Engine HTTP targets (``job.target_type == "APP_ENGINE_HTTP"``).

    :param transport: how requests reach the mapped URLs.
    :param urls: service → base URL, ``"*"`` for every other service (see
        :func:`parse_app_engine_urls`).
    :param header_case: as :class:`HttpDispatcher`'s; so is ``google_apis``.
    """

    transport: Transport
    urls: Mapping[str, str]
    _: KW_ONLY
    header_case: str = DEFAULT_HEADER_CASE
    google_apis: Transport | None = None

    def __post_init__(self) -> None:
        self.urls = dict(self.urls)  # the caller's mapping may change later

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Build the attempt's request (see :class:`Dispatcher`); its record adds appEngineHost.

        :raises NotDispatched: when neither the job's service nor every service is mapped,
            naming the ``--app-engine-url`` to add.
        :raises ValueError: if the job has no App Engine target.
        """
        target = job.app_engine_http_target
        if target is None:
            raise ValueError(f"job {job.name} has no appEngineHttpTarget.")
        routing, service = target.app_engine_routing, target.service
        url = app_engine_url(target, self.urls)
        if url is None:
            mapped = ", ".join(sorted(self.urls)) or "none"
            raise NotDispatched(
                f"EMULATOR_APP_ENGINE_NOT_MAPPED. No local URL for App Engine service "
                f"{service!r}: start with --app-engine-url {service}=http://HOST:PORT (or "
                f"--app-engine-url http://HOST:PORT for every service; app_engine_urls= in "
                f"Python). Mapped services: {mapped}."
            )
        template = request_template(job.job_id, target, url, app_engine=True)
        request = template.build(schedule_time, None)
        transport = _route(url, self.transport, self.google_apis)
        parts = [routing.instance, routing.version, routing.service] if routing else []
        host = ".".join([*filter(None, parts), f"{job.project}.appspot.com"])  # routing's host
        return _prepared(
            job, request, self.header_case, transport, APP_ENGINE_RETRY_ALWAYS, appEngineHost=host
        )
