"""Validation of a whole Job against Google's rules: names, fields, targets, retry config, limits.

:func:`validate_job` is pure: it looks only at the job and raises the first problem it finds as
:class:`~scheduler_emulator.domain.errors.InvalidArgument`. Messages are Google's verbatim text
where it is known (the job-name format and ``Schedule or time zone is invalid.``); every other
message is a short stable sentence naming the field (camelCase, as the REST API spells it) and the
bad value (our choice, as Google's texts are unknown), e.g. ``retryConfig.retryCount must be between
0 and 5; got 9.``. The error's ``field`` is always that camelCase path.

The job may be raw or already passed through
:func:`~scheduler_emulator.domain.resources.with_defaults`:
an UNSPECIFIED method counts as POST and a missing attempt deadline as the default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from datetime import timedelta
from urllib.parse import quote, urlsplit

from ..wire import EMULATOR_HTTP2_HEADER, emulator_http2
from .errors import INVALID_SCHEDULE_MESSAGE, InvalidArgument
from .names import parse_job_name
from .resources import (
    BODY_METHODS,
    AppEngineHttpTarget,
    HttpMethod,
    HttpTarget,
    Job,
    OAuthToken,
    OidcToken,
    PubsubTarget,
    RetryConfig,
)
from .schedule import parse_schedule

__all__ = [
    "APP_ENGINE_BODY_METHODS",
    "APP_ENGINE_DEADLINE_RANGE",
    "APP_ENGINE_METHODS",
    "HOP_BY_HOP_HEADERS",
    "HTTP_DEADLINE_RANGE",
    "MAX_BACKOFF_DURATION",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_HEADERS_BYTES",
    "MAX_JOB_SIZE_BYTES",
    "MAX_URI_LENGTH",
    "encoded_uri_length",
    "job_size_bytes",
    "sendable_uri",
    "show_text",
    "validate_app_engine_http_target",
    "validate_http_target",
    "validate_job",
    "validate_pubsub_target",
    "validate_retry_config",
]

#: Longest ``description`` in characters.
MAX_DESCRIPTION_LENGTH = 500
#: Longest ``httpTarget.uri`` / ``appEngineHttpTarget.relativeUri`` after percent-encoding.
MAX_URI_LENGTH = 2083
#: Headers must total *less* than this many bytes (80 KB).
MAX_HEADERS_BYTES = 80 * 1024
#: Largest job, in bytes as estimated by :func:`job_size_bytes`: Google's "1 MB total including
#: ~1 KB request overhead" (cloud.google.com/scheduler/quotas), read as 1 MiB, so a job with a
#: 1,000,000-byte body fits.
MAX_JOB_SIZE_BYTES = 1024 * 1024
#: ``retryConfig.retryCount`` bounds.
MIN_RETRY_COUNT, MAX_RETRY_COUNT = 0, 5
#: ``attemptDeadline`` bounds of an HTTP target, inclusive.
HTTP_DEADLINE_RANGE = (timedelta(seconds=15), timedelta(minutes=30))
#: ``attemptDeadline`` bounds of an App Engine target when not 0, inclusive.
APP_ENGINE_DEADLINE_RANGE = (timedelta(seconds=15), timedelta(hours=24, seconds=15))
#: Methods an App Engine target may use (no PATCH, no OPTIONS).
APP_ENGINE_METHODS = frozenset(HttpMethod) - {HttpMethod.PATCH, HttpMethod.OPTIONS}
#: Methods that may carry a body on an App Engine target.
APP_ENGINE_BODY_METHODS = frozenset({HttpMethod.POST, HttpMethod.PUT})

# Characters the service does not percent-encode: RFC 3986 reserved + unreserved, and "%".
_URI_SAFE = "-._~:/?#[]@!$&'()*+,;=%"
# An RFC 7230 header field name (a "token").
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Characters a header value must not contain (they would split or end the header).
_HEADER_VALUE_FORBIDDEN = re.compile(r"[\r\n\x00]")
# A header value that can be sent: field-vchar (RFC 9110, section 5.5), SP and HTAB, i.e. visible
# ASCII and obs-text (U+0080-U+00FF, what HTTP/1.1 clients write as latin-1); no other control
# character and nothing beyond U+00FF (U+2603, U+2028…), which no HTTP/1.1 client can encode.
_HEADER_VALUE_SENDABLE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
#: Hop-by-hop headers (RFC 9110, section 7.6.1; RFC 9112, sections 6.1 and 9.6): they describe
#: one connection, not the request, and the HTTP client that delivers the attempt sets them
#: itself. A user value next to the client's own ``Content-Length`` would make a request that
#: proxies and servers read differently (request smuggling), so a job may not set them.
HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# "Email-shaped": one "@" with something on both sides and no whitespace.
_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+")
_TOPIC_RE = re.compile(r"projects/([^/]+)/topics/([^/]+)")
#: A Pub/Sub topic ID (cloud.google.com/pubsub/docs/pubsub-basics#resource_names): a letter,
#: then 2 to 254 letters, digits and ``- . _ ~ % +``; not starting with ``goog``.
_TOPIC_ID_RE = re.compile(r"(?!goog)[A-Za-z][-A-Za-z0-9._~%+]{2,254}")
#: Longest ``minBackoffDuration`` / ``maxBackoffDuration`` (10 years, an emulator limit; Google
#: documents none). A longer wait would never end within the dates a clock can reach, and the
#: retry time of a run must stay a date (see docs/differences-from-production.md).
MAX_BACKOFF_DURATION = timedelta(days=3650)


def show_text(value: str, limit: int = 80) -> str:
    """Quote ``value`` for a message: JSON-style, at most ``limit`` characters, printable.

    :param value: any string (a lone surrogate comes out as ``\\udXXX``).
    :param limit: the longest result in characters; a shortened one ends with ``…``.
    :return: e.g. ``"chunked"``.
    """
    text = json.dumps(value[:limit], ensure_ascii=False)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


#: A URI host: a DNS name or IPv4 address, or an IPv6 address (``urlsplit`` strips brackets).
_HOST_RE = re.compile(r"[A-Za-z0-9_.~-]+|[0-9A-Fa-f:.]+(%[A-Za-z0-9._~-]+)?")


def validate_job(job: Job) -> None:
    """Check every rule of Google's (names, fields, targets, retry config, limits) a job can break.

    Checked, in this order: the name; exactly one target; schedule present and valid
    and time zone valid (via :func:`~scheduler_emulator.domain.schedule.parse_schedule`);
    ``description`` ≤ 500 characters; ``attemptDeadline`` range per target type (HTTP 15 s…30 min,
    App Engine 0 or 15 s…24 h 15 s, Pub/Sub ignored); the target's own rules; the
    RetryConfig; the total size ≤ 1 MB.

    :param job: the job to check, raw or defaulted.
    :raises InvalidArgument: for the first broken rule, with ``field`` set to the camelCase path
        (``retryConfig.retryCount``) and a message per the module docstring.
    """
    parse_job_name(job.name)
    _validate_target_count(job)
    _validate_schedule(job)
    if len(job.description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidArgument(
            f"description must be at most {MAX_DESCRIPTION_LENGTH} characters; "
            f"got {len(job.description)}.",
            field="description",
        )
    _validate_attempt_deadline(job)
    if job.http_target is not None:
        validate_http_target(job.http_target)
    elif job.app_engine_http_target is not None:
        validate_app_engine_http_target(job.app_engine_http_target)
    elif job.pubsub_target is not None:
        validate_pubsub_target(job.pubsub_target, project=job.project)
    validate_retry_config(job.retry_config)
    size = job_size_bytes(job)
    if size > MAX_JOB_SIZE_BYTES:
        target = job.http_target or job.app_engine_http_target or job.pubsub_target
        body = len(getattr(target, "body", None) or getattr(target, "data", None) or b"")
        what = "data" if job.pubsub_target is not None else "body"  # (trial 189: "body")
        raise InvalidArgument(
            f"The job is {size} bytes, {size - MAX_JOB_SIZE_BYTES} over the limit of 1 MB "
            f"({MAX_JOB_SIZE_BYTES} bytes)"  # (trial 199: the excess read as the body's)
            + (f"; its {what} is {body} bytes of them." if body else "."),
            field="job",
        )


def _validate_target_count(job: Job) -> None:
    targets = [
        name
        for name, target in (
            ("httpTarget", job.http_target),
            ("appEngineHttpTarget", job.app_engine_http_target),
            ("pubsubTarget", job.pubsub_target),
        )
        if target is not None
    ]
    if not targets:
        raise InvalidArgument(
            "A job needs exactly one target (httpTarget, appEngineHttpTarget or pubsubTarget); "
            "got none.",
            field="target",
        )
    if len(targets) > 1:
        raise InvalidArgument(
            f"A job needs exactly one target; got {' and '.join(targets)}.",
            field="target",
        )


def _validate_schedule(job: Job) -> None:
    if not job.schedule.strip():
        raise InvalidArgument(
            INVALID_SCHEDULE_MESSAGE, field="schedule", description="schedule is required."
        )
    parse_schedule(job.schedule, job.time_zone or "Etc/UTC")


def _format_seconds(td: timedelta) -> str:
    # A duration as REST spells it, for messages ("180s", "14.5s", "-0.000001s").
    micros = td // timedelta(microseconds=1)
    whole, fraction = divmod(abs(micros), 1_000_000)
    text = f"{whole}.{fraction:06d}".rstrip("0").rstrip(".")
    return f"{'-' if micros < 0 else ''}{text}s"


def _validate_attempt_deadline(job: Job) -> None:
    deadline = job.attempt_deadline
    if job.pubsub_target is not None or deadline is None:
        return  # ignored for Pub/Sub; unset means the default
    if job.http_target is not None:
        if not deadline:
            return  # 0 is "unset": with_defaults stores 180 s
        low, high = HTTP_DEADLINE_RANGE
        kind = "an HTTP target"
    else:
        if not deadline:
            return  # 0 = the App Engine default
        low, high = APP_ENGINE_DEADLINE_RANGE
        kind = "an App Engine target"
    if not low <= deadline <= high:
        raise InvalidArgument(
            f"attemptDeadline of {kind} must be between {_format_seconds(low)} and "
            f"{_format_seconds(high)}; got {_format_seconds(deadline)}.",
            field="attemptDeadline",
        )


#: Characters a URI may not hold at all: C0 controls (NUL, tab, CR, LF…) and DEL. A line break
#: in a request target would end the request line; Google documents no handling, so the
#: emulator refuses them when the job is created (docs/differences-from-production.md).
_URI_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def sendable_uri(uri: str) -> str:
    """``uri`` as it goes on the wire: characters outside RFC 3986's reserved and unreserved
    sets (a space, ``"``, ``<``, non-ASCII text…) percent-encoded as UTF-8, existing ``%XX``
    escapes kept. Google: "Cloud Scheduler will encode some characters for safety and
    compatibility" (``HttpTarget.uri``, google/cloud/scheduler/v1/target.proto).

    >>> sendable_uri("http://a.test/a b/\u2603?q=x y")
    'http://a.test/a%20b/%E2%98%83?q=x%20y'

    :param uri: a URI that passed :func:`validate_http_target` (no control character).
    :return: the URI to send.
    """
    return quote(uri, safe=_URI_SAFE)


def _refuse_unsendable_uri(uri: str, uri_field: str) -> None:
    """Refuse a control character (:data:`_URI_CONTROL_RE`) in a URI, naming the field and
    showing the URI escaped.

    :raises InvalidArgument: naming ``uri_field``.
    """
    bad = _URI_CONTROL_RE.search(uri)
    if bad is not None:
        raise InvalidArgument(
            f"{uri_field} must not contain control characters (line breaks, tabs, NUL); got "
            f"{show_text(uri)} ({json.dumps(bad.group())} at position {bad.start()}).",
            field=uri_field,
        )


def encoded_uri_length(uri: str) -> int:
    """Length of ``uri`` after percent-encoding unsafe characters, as the service counts it.

    Characters outside RFC 3986's reserved and unreserved sets (spaces, quotes, non-ASCII, …)
    are percent-encoded as UTF-8 (``é`` counts 6); existing ``%XX`` escapes count as they are.

    :param uri: an absolute URI or an App Engine relative URI.
    :return: the length in characters (Google's limit: at most 2083).
    """
    return len(sendable_uri(uri))


def _validate_body_and_headers(
    target: HttpTarget | AppEngineHttpTarget,
    method: HttpMethod,
    body_methods: Collection[HttpMethod],
    body_methods_text: str,
    field: str,
) -> None:
    """Check a target's body is sent only with a method that carries one, then its headers.

    :param body_methods: the methods a body is allowed with; ``body_methods_text`` names them.
    :raises InvalidArgument: naming ``{field}.body`` or the broken header.
    """
    if target.body and method not in body_methods:
        raise InvalidArgument(
            f"{field}.body is only allowed with httpMethod {body_methods_text}; "
            f"got httpMethod {method.name}.",
            field=f"{field}.body",
        )
    _validate_headers(target.headers, f"{field}.headers")


def _validate_headers(headers: Mapping[str, str], field: str) -> None:
    seen: dict[str, str] = {}
    total = 0
    for name, value in headers.items():
        if not _HEADER_NAME_RE.fullmatch(name):
            raise InvalidArgument(f'{field} has an invalid header name "{name}".', field=field)
        if _HEADER_VALUE_FORBIDDEN.search(value):
            raise InvalidArgument(
                f"{field} has a line break or NUL in the value of {name!r}: {value!r:.200}.",
                field=field,
            )
        bad = _HEADER_VALUE_SENDABLE.match(value)
        if bad is not None and bad.end() < len(value):
            char = value[bad.end()]
            raise InvalidArgument(
                f"{field} has a character that cannot be sent in an HTTP header, "
                f'U+{ord(char):04X}, in the value of "{name}": {show_text(value)}. Header '
                "values may hold visible ASCII, spaces, tabs and U+0080-U+00FF only; "
                "percent-encode or base64 anything else.",
                field=field,
            )
        if name.lower() in HOP_BY_HOP_HEADERS:
            raise InvalidArgument(
                f'{field} must not set "{name}" (got {show_text(value)}): it is a hop-by-hop '
                "header, which describes one connection and is set by the HTTP client that "
                "delivers the attempt (RFC 9110, section 7.6.1).",
                field=field,
            )
        if name.lower() in seen:
            raise InvalidArgument(
                f'{field} must have one value per header name; got "{seen[name.lower()]}" and '
                f'"{name}" (names are case-insensitive).',
                field=field,
            )
        seen[name.lower()] = name
        total += len(name.encode()) + len(value.encode())
    if total >= MAX_HEADERS_BYTES:
        raise InvalidArgument(
            f"{field} must total less than 80 KB ({MAX_HEADERS_BYTES} bytes); got {total} bytes.",
            field=field,
        )


def _validate_http2_header(target: HttpTarget, field: str) -> None:
    """The emulator-only ``X-Emulator-Http2`` (never sent): ``true`` or ``false``
    (case-insensitive), and ``true`` only with an ``http://`` URI (h2c; ``https://`` attempts
    go over HTTP/1.1)."""
    value = emulator_http2(target.headers)
    if value is None:
        return
    wanted = value.strip().lower()
    if wanted not in ("true", "false"):
        raise InvalidArgument(
            f"{field} {EMULATOR_HTTP2_HEADER} (emulator-only) must be true or false; got "
            f"{show_text(value)}.",
            field=field,
        )
    if wanted == "true" and not target.uri.lower().startswith("http://"):
        raise InvalidArgument(
            f"{field} {EMULATOR_HTTP2_HEADER}: true needs an http:// uri (HTTP/2 with prior "
            f"knowledge, h2c); https:// attempts go over HTTP/1.1; got {show_text(target.uri)}.",
            field=field,
        )


def _validate_service_account(email: str, field: str) -> None:
    if not email:  # (trial 73: the bare "is required." said nothing of its form)
        raise InvalidArgument(
            f"{field} is required: the email of the service account the token is for, such as "
            "scheduler-invoker@my-project.iam.gserviceaccount.com.",
            field=field,
        )
    if not _EMAIL_RE.fullmatch(email):
        raise InvalidArgument(f'{field} must be an email address; got "{email}".', field=field)


def validate_http_target(target: HttpTarget, *, field: str = "httpTarget") -> None:
    """Check an HttpTarget.

    Rules: ``uri`` present, ``http://``/``https://`` with a host, no control character (tab,
    CR, LF, NUL…) and no user information (``user:password@``), ≤ 2083 characters after
    percent-encoding (:func:`sendable_uri`: a space or non-ASCII text is sent encoded); a body
    only with POST, PUT or PATCH (UNSPECIFIED counts as POST); one value per header name
    (case-insensitive), valid header names, values that HTTP/1.1 can carry (no
    line break or other control character but tab, nothing beyond U+00FF), no hop-by-hop header
    (:data:`HOP_BY_HOP_HEADERS`), headers total < 80 KB; the emulator-only ``X-Emulator-Http2``
    ``true`` or ``false``, ``true`` only with ``http://``; at most one of
    ``oidcToken``/``oauthToken``, each with an email-shaped ``serviceAccountEmail``.

    :param target: the target to check.
    :param field: the path of the target in the job, for messages.
    :raises InvalidArgument: for the first broken rule (``field`` = camelCase path).
    """
    uri_field = f"{field}.uri"
    if not target.uri:
        raise InvalidArgument(f"{uri_field} is required.", field=uri_field)
    check_url(target.uri, uri_field)
    length = encoded_uri_length(target.uri)
    if length > MAX_URI_LENGTH:
        raise InvalidArgument(
            f"{uri_field} must be at most {MAX_URI_LENGTH} characters after percent-encoding; "
            f"got {length}.",
            field=uri_field,
        )
    method = target.http_method or HttpMethod.POST
    _validate_body_and_headers(target, method, BODY_METHODS, "POST, PUT or PATCH", field)
    _validate_http2_header(target, f"{field}.headers")
    if target.oidc_token is not None and target.oauth_token is not None:
        raise InvalidArgument(
            f"{field} can have oidcToken or oauthToken, not both.", field=f"{field}.oauthToken"
        )
    token: OidcToken | OAuthToken | None = target.oidc_token or target.oauth_token
    if token is not None:
        kind = "oidcToken" if isinstance(token, OidcToken) else "oauthToken"
        _validate_service_account(
            token.service_account_email, f"{field}.{kind}.serviceAccountEmail"
        )


def check_url(url: str, field: str, *, base: bool = False) -> None:
    """Check an ``http(s)://`` URL: no control character, a valid host and port, and no user
    information (a password would be kept in the job, every attempt record and the log; Google
    documents no handling of it). A ``base`` URL (``--app-engine-url``, to which each
    ``relativeUri`` is appended) has no space, query or fragment either.

    :raises InvalidArgument: naming ``field`` and the URL (a password shown as ``***``).
    """
    _refuse_unsendable_uri(url, field)
    if base and any(c.isspace() for c in url):
        raise InvalidArgument(f'{field} must be a base URL: no space; got "{url}".', field=field)
    if not url.lower().startswith(("http://", "https://")):
        raise InvalidArgument(
            f"{field} must start with http:// or https://; got {show_text(url)}.", field=field
        )
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number 0-65535
    except ValueError:
        parts, host = None, None
    if parts is not None and "@" in parts.netloc:
        userinfo, _, hostport = parts.netloc.rpartition("@")
        shown = f"{parts.scheme}://{userinfo.split(':', 1)[0]}{':***' if ':' in userinfo else ''}"
        shown += "@" + hostport + ("/…" if parts.path.strip("/") or parts.query else "")
        where = "appEngineHttpTarget.headers (Authorization)" if base else (
            "httpTarget.headers (Authorization) or with an oidcToken or oauthToken"
        )  # fmt: skip
        raise InvalidArgument(
            f"{field} must not contain a user name or password (user:password@host); send "
            f"credentials in {where}; got {show_text(shown)}.",
            field=field,
        )
    if not host or not _HOST_RE.fullmatch(host):
        raise InvalidArgument(
            f'{field} must be a URL with a valid host and port; got "{url}".', field=field
        )
    if base and (parts is None or parts.query or parts.fragment):
        raise InvalidArgument(
            f'{field} must be a base URL: no "?" or "#"; got "{url}".', field=field
        )


def validate_app_engine_http_target(
    target: AppEngineHttpTarget, *, field: str = "appEngineHttpTarget"
) -> None:
    """Check an AppEngineHttpTarget.

    Rules: no PATCH or OPTIONS; ``relativeUri`` empty (means ``/``) or starting with ``/``, no
    whitespace, ≤ 2083 characters after percent-encoding; a body only with POST or PUT; headers
    as for an HTTP target (one value per name, < 80 KB).

    :param target: the target to check.
    :param field: the path of the target in the job, for messages.
    :raises InvalidArgument: for the first broken rule (``field`` = camelCase path).
    """
    method = target.http_method or HttpMethod.POST
    if method not in APP_ENGINE_METHODS:
        raise InvalidArgument(
            f"{field}.httpMethod must not be PATCH or OPTIONS; got {method.name}.",
            field=f"{field}.httpMethod",
        )
    uri_field = f"{field}.relativeUri"
    uri = target.relative_uri or "/"
    if not uri.startswith("/"):
        raise InvalidArgument(f'{uri_field} must start with "/"; got "{uri}".', field=uri_field)
    _refuse_unsendable_uri(uri, uri_field)
    if any(c.isspace() for c in uri):
        raise InvalidArgument(f'{uri_field} must not contain spaces; got "{uri}".', field=uri_field)
    length = encoded_uri_length(uri)
    if length > MAX_URI_LENGTH:
        raise InvalidArgument(
            f"{uri_field} must be at most {MAX_URI_LENGTH} characters after percent-encoding; "
            f"got {length}.",
            field=uri_field,
        )
    _validate_body_and_headers(target, method, APP_ENGINE_BODY_METHODS, "POST or PUT", field)
    if emulator_http2(target.headers) is not None:
        raise InvalidArgument(
            f"{field}.headers must not set {EMULATOR_HTTP2_HEADER}: the emulator-only HTTP/2 "
            "switch applies to httpTarget jobs only.",
            field=f"{field}.headers",
        )


def validate_pubsub_target(
    target: PubsubTarget, *, project: str, field: str = "pubsubTarget"
) -> None:
    """Check a PubsubTarget.

    Rules: ``topicName`` is ``projects/P/topics/T`` with P the job's project and T a topic ID
    Pub/Sub allows (:data:`_TOPIC_ID_RE`); the message has
    non-empty ``data`` or at least one attribute.

    :param target: the target to check.
    :param project: the job's project ID.
    :param field: the path of the target in the job, for messages.
    :raises InvalidArgument: for the first broken rule (``field`` = camelCase path).
    """
    topic_field = f"{field}.topicName"
    if not target.topic_name:
        raise InvalidArgument(
            f'{topic_field} is required: "projects/{project}/topics/<TOPIC_ID>".',
            field=topic_field,
        )
    match = _TOPIC_RE.fullmatch(target.topic_name)
    if match is None:
        raise InvalidArgument(
            f'{topic_field} must be formatted "projects/<PROJECT_ID>/topics/<TOPIC_ID>"; '
            f'got "{target.topic_name}".',
            field=topic_field,
        )
    if match.group(1) != project:
        raise InvalidArgument(
            f'{topic_field} must be in the job\'s project "{project}"; got "{target.topic_name}".',
            field=topic_field,
        )
    if not _TOPIC_ID_RE.fullmatch(match.group(2)):  # (trial 115: "bad topic!" was stored)
        raise InvalidArgument(
            f"{topic_field} must name a topic ID Pub/Sub allows (a letter, then 2 to 254 "
            f'letters, digits and - . _ ~ % +, not starting with "goog"); '
            f'got "{match.group(2)}".',
            field=topic_field,
        )
    if not target.data and not target.attributes:
        raise InvalidArgument(
            f"{field} must have non-empty data or at least one attribute.",
            field=f"{field}.data",
        )


def validate_retry_config(config: RetryConfig, *, field: str = "retryConfig") -> None:
    """Check a RetryConfig.

    Rules: ``retryCount`` 0–5; no negative duration; ``minBackoffDuration`` and
    ``maxBackoffDuration`` at most :data:`MAX_BACKOFF_DURATION` (10 years, an emulator limit);
    ``minBackoffDuration`` ≤ ``maxBackoffDuration``; ``maxDoublings`` ≥ 0 (any larger value is
    accepted: the wait is capped at ``maxBackoffDuration`` whatever the doublings).

    :param config: the retry settings to check.
    :param field: the path of the config in the job, for messages.
    :raises InvalidArgument: for the first broken rule (``field`` = camelCase path).
    """
    if not MIN_RETRY_COUNT <= config.retry_count <= MAX_RETRY_COUNT:
        raise InvalidArgument(
            f"{field}.retryCount must be between {MIN_RETRY_COUNT} and {MAX_RETRY_COUNT}; "
            f"got {config.retry_count}.",
            field=f"{field}.retryCount",
        )
    for name, value in (
        ("maxRetryDuration", config.max_retry_duration),
        ("minBackoffDuration", config.min_backoff_duration),
        ("maxBackoffDuration", config.max_backoff_duration),
    ):
        if value < timedelta(0):
            raise InvalidArgument(
                f"{field}.{name} must not be negative; got {_format_seconds(value)}.",
                field=f"{field}.{name}",
            )
    for name, value in (
        ("minBackoffDuration", config.min_backoff_duration),
        ("maxBackoffDuration", config.max_backoff_duration),
    ):
        if value > MAX_BACKOFF_DURATION:
            raise InvalidArgument(
                f"{field}.{name} must be at most {_format_seconds(MAX_BACKOFF_DURATION)} "
                f"(10 years); got {_format_seconds(value)}.",
                field=f"{field}.{name}",
            )
    if config.min_backoff_duration > config.max_backoff_duration:
        default = config.max_backoff_duration == RetryConfig.max_backoff_duration
        raise InvalidArgument(
            f"{field}.minBackoffDuration must not exceed maxBackoffDuration; got "
            f"{_format_seconds(config.min_backoff_duration)} > "
            f"{_format_seconds(config.max_backoff_duration)}"
            + (" (maxBackoffDuration's default, when none is given)." if default else "."),
            field=f"{field}.minBackoffDuration",
        )
    if config.max_doublings < 0:
        raise InvalidArgument(
            f"{field}.maxDoublings must not be negative; got {config.max_doublings}.",
            field=f"{field}.maxDoublings",
        )


def _text_size(*texts: str) -> int:
    return sum(len(t.encode()) for t in texts)


def _map_size(mapping: Mapping[str, str]) -> int:
    return sum(_text_size(k, v) for k, v in mapping.items())


def job_size_bytes(job: Job) -> int:
    """Estimate a job's size the way the 1 MB limit counts it.

    The sum of the UTF-8 sizes of every string, header/attribute name and value, and the raw
    size of ``body``/``data``. It leaves out the few framing bytes per field of the protobuf
    encoding and Google's "~1 KB request overhead", so it is a slight underestimate.

    :param job: the job.
    :return: the size in bytes.
    """
    size = _text_size(job.name, job.schedule, job.time_zone, job.description)
    http = job.http_target
    if http is not None:
        size += _text_size(http.uri) + _map_size(http.headers) + len(http.body)
        if http.oidc_token is not None:
            size += _text_size(http.oidc_token.service_account_email, http.oidc_token.audience)
        if http.oauth_token is not None:
            size += _text_size(http.oauth_token.service_account_email, http.oauth_token.scope)
    ae = job.app_engine_http_target
    if ae is not None:
        size += _text_size(ae.relative_uri) + _map_size(ae.headers) + len(ae.body)
        routing = ae.app_engine_routing
        if routing is not None:
            size += _text_size(routing.service, routing.version, routing.instance, routing.host)
    ps = job.pubsub_target
    if ps is not None:
        size += _text_size(ps.topic_name) + len(ps.data) + _map_size(ps.attributes)
    return size
