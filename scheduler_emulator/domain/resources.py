"""The Cloud Scheduler v1 resources: Job, its targets, RetryConfig, tokens and State.

These are plain immutable values (``dataclasses.replace`` makes a changed copy). They hold
already-validated, already-defaulted data: build them from REST JSON with
:func:`scheduler_emulator.domain.codec.job_from_json`, which validates (``validation``) and applies
the defaults the real service fills in on create in one place (:func:`with_defaults`).
The fields and their rules are Google's:
https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs

Durations are :class:`datetime.timedelta`; timestamps are timezone-aware UTC
:class:`datetime.datetime`; ``body``/``data`` are raw ``bytes`` (base64 only at the JSON edge).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import MappingProxyType

from ..wire import USER_AGENT

__all__ = [
    "AppEngineHttpTarget",
    "AppEngineRouting",
    "BODY_METHODS",
    "DEFAULT_ATTEMPT_DEADLINE",
    "DEFAULT_OAUTH_SCOPE",
    "DEFAULT_TIME_ZONE",
    "HttpMethod",
    "HttpTarget",
    "Job",
    "MESSAGE_TYPES",
    "OAuthToken",
    "OidcToken",
    "PubsubTarget",
    "RetryConfig",
    "State",
    "Status",
    "with_defaults",
]

#: Default attempt deadline of an HTTP target (Google's; allowed 15 s to 30 min).
DEFAULT_ATTEMPT_DEADLINE = timedelta(seconds=180)
#: Scope filled into an OAuth token that names none (as the real service does).
DEFAULT_OAUTH_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
#: Time zone stored when a job names none (Google documents UTC; gcloud sends ``Etc/UTC``).
DEFAULT_TIME_ZONE = "Etc/UTC"


class State(enum.IntEnum):
    """Job state. Names and integer values are the proto's; only ENABLED jobs run on schedule."""

    STATE_UNSPECIFIED = 0
    ENABLED = 1
    PAUSED = 2
    DISABLED = 3
    UPDATE_FAILED = 4


class HttpMethod(enum.IntEnum):
    """HTTP method of a target. ``HTTP_METHOD_UNSPECIFIED`` is stored as POST."""

    HTTP_METHOD_UNSPECIFIED = 0
    POST = 1
    GET = 2
    HEAD = 3
    PUT = 4
    DELETE = 5
    PATCH = 6
    OPTIONS = 7


#: Methods that may carry a body on an HTTP target (a body with another method is refused).
BODY_METHODS = frozenset({HttpMethod.POST, HttpMethod.PUT, HttpMethod.PATCH})


def _frozen_map(value: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True)
class OidcToken:
    """Ask for an OIDC ID token, sent as ``Authorization: Bearer <JWT>``.

    :param service_account_email: the service account the token is minted for.
    :param audience: the token's ``aud``; empty means the target URI at dispatch time.
    """

    service_account_email: str
    audience: str = ""


@dataclass(frozen=True)
class OAuthToken:
    """Ask for an OAuth access token, sent as ``Authorization: Bearer <token>``.

    :param service_account_email: the service account the token is minted for.
    :param scope: OAuth scope; filled with :data:`DEFAULT_OAUTH_SCOPE` when empty.
    """

    service_account_email: str
    scope: str = ""


@dataclass(frozen=True)
class HttpTarget:
    """Deliver to an HTTP(S) URL.

    :param uri: ``http://`` or ``https://`` URL, at most 2083 characters.
    :param http_method: the request method; UNSPECIFIED is normalised to POST.
    :param headers: user headers, name → value (one value per name).
    :param body: raw request body; only for POST, PUT and PATCH.
    """

    uri: str
    http_method: HttpMethod = HttpMethod.POST
    headers: Mapping[str, str] = field(default_factory=_frozen_map)
    body: bytes = b""
    oidc_token: OidcToken | None = None
    oauth_token: OAuthToken | None = None


@dataclass(frozen=True)
class AppEngineRouting:
    """App Engine routing; ``host`` is output only."""

    service: str = ""
    version: str = ""
    instance: str = ""
    host: str = ""


@dataclass(frozen=True)
class AppEngineHttpTarget:
    """Deliver to an App Engine app; locally, to the base URL mapped to its service
    (docs/differences-from-production.md)."""

    relative_uri: str = "/"
    http_method: HttpMethod = HttpMethod.POST
    app_engine_routing: AppEngineRouting | None = None
    headers: Mapping[str, str] = field(default_factory=_frozen_map)
    body: bytes = b""

    @property
    def service(self) -> str:
        """The service routed to: ``default`` when none is (App Engine's default service)."""
        return (self.app_engine_routing and self.app_engine_routing.service) or "default"


@dataclass(frozen=True)
class PubsubTarget:
    """Publish to a Pub/Sub topic: the Pub/Sub emulator's, or an in-memory publisher in-process.

    :param topic_name: ``projects/P/topics/T`` in the job's project.
    """

    topic_name: str
    data: bytes = b""
    attributes: Mapping[str, str] = field(default_factory=_frozen_map)


@dataclass(frozen=True)
class RetryConfig:
    """Retry settings of a job; the defaults are those the real service fills in (``maxDoublings``
    5, as Google documents; https://cloud.google.com/scheduler/docs/configuring/retry-jobs).

    :param retry_count: retries after a failed attempt, 0–5 (0 with ``max_retry_duration`` 0
        means no retry; with both set, retries go on while either limit is unmet).
    :param max_retry_duration: retry time limit from the first attempt's start; 0 = no limit.
    :param min_backoff_duration: wait before the first retry.
    :param max_backoff_duration: cap on every wait.
    :param max_doublings: doublings of the wait before it grows linearly.
    """

    retry_count: int = 0
    max_retry_duration: timedelta = timedelta(0)
    min_backoff_duration: timedelta = timedelta(seconds=5)
    max_backoff_duration: timedelta = timedelta(seconds=3600)
    max_doublings: int = 5


@dataclass(frozen=True)
class Status:
    """A ``google.rpc.Status``: ``code`` 0 is OK (rendered ``{}``); else the failure, rendered
    ``{"code": <google.rpc code number>, "message": <the attempt's debugInfo text>}``."""

    code: int = 0
    message: str = ""


class JobPath:
    """The segments of a job's ``name``, ``projects/P/locations/L/jobs/J``: a base of the
    resources named so (a scheduler :class:`Job`, a Cloud Run job)."""

    name: str

    @property
    def job_id(self) -> str:
        """The short job ID, the last segment of :attr:`name` (a scheduler job's is what
        X-CloudScheduler-JobName carries)."""
        return self.name.rsplit("/", 1)[-1]

    @property
    def project(self) -> str:
        """The project ID segment of :attr:`name`."""
        return self.name.split("/")[1]

    @property
    def location(self) -> str:
        """The location ID segment of :attr:`name`."""
        return self.name.split("/")[3]


@dataclass(frozen=True)
class Job(JobPath):
    """A Cloud Scheduler job (Google's ``Job`` resource, in Python types).

    Exactly one of ``http_target``, ``app_engine_http_target`` and ``pubsub_target`` is set.
    The fields after ``attempt_deadline`` are output only: the engine keeps them.

    :param name: ``projects/P/locations/L/jobs/J``.
    :param schedule: a unix-cron schedule (five fields) or an English-like one of the forms the
        emulator supports (``every N minutes|mins|hours``, ``every day HH:MM``,
        ``every <weekday> HH:MM``, ``1st monday of month HH:MM``…:
        :func:`~scheduler_emulator.domain.schedule.parse_schedule`).
    :param time_zone: IANA zone name, stored as the user gave it; empty becomes ``Etc/UTC``.
    :param attempt_deadline: per-attempt deadline; ``None`` for a Pub/Sub target.
    """

    name: str
    schedule: str
    time_zone: str = DEFAULT_TIME_ZONE
    description: str = ""
    http_target: HttpTarget | None = None
    app_engine_http_target: AppEngineHttpTarget | None = None
    pubsub_target: PubsubTarget | None = None
    retry_config: RetryConfig = RetryConfig()
    attempt_deadline: timedelta | None = DEFAULT_ATTEMPT_DEADLINE
    # output only
    state: State = State.ENABLED
    status: Status | None = None
    schedule_time: datetime | None = None
    last_attempt_time: datetime | None = None
    user_update_time: datetime | None = None

    @property
    def target_type(self) -> str:
        """``HTTP``, ``APP_ENGINE_HTTP`` or ``PUBSUB`` (the execution log's ``targetType``)."""
        if self.http_target is not None:
            return "HTTP"
        if self.app_engine_http_target is not None:
            return "APP_ENGINE_HTTP"
        return "PUBSUB"


#: The Job resource and its message types, by proto type name (``"Job"``, ``"HttpTarget"``…:
#: the keys of :data:`~scheduler_emulator.domain.codec.MESSAGE_FIELDS`).
MESSAGE_TYPES: Mapping[str, type] = MappingProxyType(
    {
        cls.__name__: cls
        for cls in (
            Job,
            HttpTarget,
            OidcToken,
            OAuthToken,
            AppEngineHttpTarget,
            AppEngineRouting,
            PubsubTarget,
            RetryConfig,
        )
    }
)


def with_defaults(job: Job) -> Job:
    """Return ``job`` with the defaults the real service fills in on create applied.

    UNSPECIFIED methods become POST; an HTTP target gains ``User-Agent: Google-Cloud-Scheduler``
    and, when it has a body and no Content-Type (any case), ``Content-Type:
    application/octet-stream``; an OAuth token without scope gets the cloud-platform scope; an
    empty time zone becomes ``Etc/UTC``; a missing attempt deadline becomes 180 s for HTTP and
    App Engine targets, and a Pub/Sub target's is dropped (``None``: Google ignores it). The single
    place where defaults are applied.
    """
    changes: dict[str, object] = {}
    if not job.time_zone:
        changes["time_zone"] = DEFAULT_TIME_ZONE
    target = job.http_target
    if target is not None:
        headers = {k: v for k, v in target.headers.items() if k.lower() != "user-agent"}
        headers["User-Agent"] = USER_AGENT  # stored too, as the real service shows
        if target.body and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/octet-stream"
        method = target.http_method or HttpMethod.POST
        oauth = target.oauth_token
        if oauth is not None and not oauth.scope:
            oauth = replace(oauth, scope=DEFAULT_OAUTH_SCOPE)
        changes["http_target"] = replace(
            target, headers=_frozen_map(headers), http_method=method, oauth_token=oauth
        )
    ae = job.app_engine_http_target
    if ae is not None:
        changes["app_engine_http_target"] = replace(
            ae,
            http_method=ae.http_method or HttpMethod.POST,
            relative_uri=ae.relative_uri or "/",
            headers=_frozen_map(ae.headers),
        )
    if job.pubsub_target is None and not job.attempt_deadline:
        changes["attempt_deadline"] = DEFAULT_ATTEMPT_DEADLINE
    elif job.pubsub_target is not None and job.attempt_deadline is not None:
        changes["attempt_deadline"] = None  # Google ignores the attempt deadline of Pub/Sub targets
    return replace(job, **changes) if changes else job  # type: ignore[arg-type]
