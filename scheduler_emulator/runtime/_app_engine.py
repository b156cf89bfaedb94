"""App Engine HTTP targets: the request goes to a local base URL the user maps.

Production sends an App Engine target's request to the app's host, routed by
``appEngineRouting`` (service, version, instance). Locally there is no App Engine, so each
service is mapped to a base URL (``--app-engine-url URL`` for every service,
``--app-engine-url SERVICE=URL`` for one)::

    urls = parse_app_engine_urls(["http://127.0.0.1:8081", "worker=http://127.0.0.1:8082"])
    dispatcher = AppEngineDispatcher(HttpTransport(), urls)

What is reproduced from the ``AppEngineHttpTarget`` reference (cloud.google.com/scheduler/docs/
reference/rest/v1/projects.locations.jobs#appenginehttptarget):

- URL = the mapped base URL + ``relativeUri``; method as stored (POST by default); the body
  only for POST and PUT.
- Headers: the user's (minus the ones the service replaces or drops: ``Host``,
  ``Content-Length``, ``X-Google-*``, ``X-AppEngine-*``, ``X-CloudScheduler*``), then
  ``User-Agent`` = the user's value followed by ``AppEngine-Google;
  (+http://code.google.com/appengine)`` (that alone by default), ``X-CloudScheduler: true``,
  ``X-CloudScheduler-JobName``, ``X-CloudScheduler-ScheduleTime`` and ``Content-Type:
  application/octet-stream`` when there is a body and no Content-Type.
- "Error 503 is considered an App Engine system error instead of an application error.
  Requests returning error 503 will be retried regardless of retry configuration and not
  counted against retry counts."
- The host production would route to (``AppEngineRouting.host``: ``[instance.][version.]
  [service.]<project>.appspot.com``) is shown in the attempt record as ``appEngineHost``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime

from ..domain.resources import DEFAULT_ATTEMPT_DEADLINE, HttpMethod, Job
from ..domain.validation import sendable_uri
from ..wire import APP_ENGINE_USER_AGENT_SUFFIX, spell_headers
from ._dispatch import request_template
from ._dispatchers import NotDispatched, Prepared, prepared_request
from ._options import DEFAULT_HEADER_CASE
from ._transports import Transport

#: The key of the mapping that serves every service without a mapping of its own.
EVERY_SERVICE = "*"
#: The service a job with no ``appEngineRouting.service`` goes to (App Engine's default).
DEFAULT_SERVICE = "default"
#: Statuses retried whatever the retry config and not counted (AppEngineHttpTarget reference).
APP_ENGINE_RETRY_ALWAYS = frozenset({503})
#: Methods whose body is sent (AppEngineHttpTarget: "A request body is allowed only if the
#: HTTP method is POST or PUT").
_BODY_METHODS = frozenset({HttpMethod.POST, HttpMethod.PUT})
_SERVICE = re.compile(r"[a-z\d][a-z\d-]{0,62}")


def parse_app_engine_urls(values: Iterable[str] | str | Mapping[str, str]) -> dict[str, str]:
    """Turn ``--app-engine-url`` values (or the Python API's argument) into service → base URL.

    :param values: a base URL for every service; ``SERVICE=URL`` entries; or a mapping
        (``{"worker": "http://…", "*": "http://…"}``; ``"*"`` serves unmapped services).
    :raises ValueError: for a URL that is not ``http(s)://`` or a service mapped twice.
    :return: service name (or ``"*"``) → base URL without a trailing ``/``.
    """
    if isinstance(values, str):
        values = [values]
    pairs: list[tuple[str, str]]
    if isinstance(values, Mapping):
        pairs = list(values.items())
    else:
        pairs = []
        for value in values:
            service, sep, url = value.partition("=")
            if sep and _SERVICE.fullmatch(service):
                pairs.append((service, url))
            else:
                pairs.append((EVERY_SERVICE, value))
    urls: dict[str, str] = {}
    for service, url in pairs:
        if not url.startswith(("http://", "https://")):
            raise ValueError(
                f"--app-engine-url needs an http(s) base URL, as URL or SERVICE=URL; got {url!r}."
            )
        if service in urls:
            which = "every service" if service == EVERY_SERVICE else f"service {service!r}"
            raise ValueError(f"--app-engine-url maps {which} twice ({urls[service]} and {url}).")
        urls[service] = url.rstrip("/")
    return urls


def app_engine_host(job: Job) -> str:
    """The host production routes the job's requests to (``AppEngineRouting.host``).

    Per the AppEngineRouting reference: ``[instance.][version.][service.]`` followed by the
    application domain name, here ``<project>.appspot.com``.
    """
    target = job.app_engine_http_target
    routing = target.app_engine_routing if target is not None else None
    parts = [routing.instance, routing.version, routing.service] if routing else []
    return ".".join([p for p in parts if p] + [f"{job.project}.appspot.com"])


class AppEngineDispatcher:
    """Dispatcher of App Engine HTTP targets (``job.target_type == "APP_ENGINE_HTTP"``).

    :param transport: how requests reach the mapped URLs.
    :param urls: service → base URL, ``"*"`` for every other service (see
        :func:`parse_app_engine_urls`).
    """

    def __init__(
        self,
        transport: Transport,
        urls: Mapping[str, str],
        *,
        header_case: str = DEFAULT_HEADER_CASE,
    ) -> None:
        self.transport = transport
        self.urls = dict(urls)
        self.header_case = header_case

    def base_url(self, service: str) -> str:
        """The base URL of ``service`` (``""`` means ``default``).

        :raises NotDispatched: when neither the service nor every service is mapped, naming
            the ``--app-engine-url`` to add.
        """
        service = service or DEFAULT_SERVICE
        url = self.urls.get(service) or self.urls.get(EVERY_SERVICE)
        if url is None:
            mapped = ", ".join(sorted(self.urls)) or "none"
            raise NotDispatched(
                f"EMULATOR_APP_ENGINE_NOT_MAPPED. No local URL for App Engine service "
                f"{service!r}: start with --app-engine-url {service}=http://HOST:PORT (or "
                f"--app-engine-url http://HOST:PORT for every service; app_engine_urls= in "
                f"Python). Mapped services: {mapped}."
            )
        return url

    def prepare(self, job: Job, schedule_time: str | None, now: datetime) -> Prepared:
        """Build the attempt's request (see :class:`~scheduler_emulator.runtime._dispatchers.
        Dispatcher`); the record adds ``appEngineHost``.

        :raises NotDispatched: when the job's service has no mapped URL.
        :raises ValueError: if the job has no App Engine target.
        """
        target = job.app_engine_http_target
        if target is None:
            raise ValueError(f"job {job.name} has no appEngineHttpTarget.")
        routing = target.app_engine_routing
        url = self.base_url(routing.service if routing else "") + sendable_uri(
            target.relative_uri or "/"
        )
        request = request_template(
            job.job_id,
            target.http_method,
            url,
            target.headers,
            target.body,
            body_methods=_BODY_METHODS,
            user_agent_suffix=APP_ENGINE_USER_AGENT_SUFFIX,
        ).build(schedule_time, None)
        request = replace(request, headers=spell_headers(dict(request.headers), self.header_case))
        record = {
            "method": request.method,
            "url": request.url,
            "headers": dict(request.headers),
            "appEngineHost": app_engine_host(job),
        }
        deadline = job.attempt_deadline or DEFAULT_ATTEMPT_DEADLINE
        return prepared_request(
            record, deadline.total_seconds(), self.transport, request, APP_ENGINE_RETRY_ALWAYS
        )
