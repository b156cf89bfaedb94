"""The wire contract between Cloud Scheduler and a target: header names and values (Google's,
from https://cloud.google.com/scheduler/docs/configuring/deduplicate-job-requests and the
``HttpTarget`` reference), the timer path prefix, and the RFC 3339 time formats.

This module is the one home of these facts. It imports nothing but the standard library, so
the dispatchers, the pytest façades, ``replay`` and the target-side helpers
(:mod:`scheduler_emulator.service`, which loads no engine code) all use it::

    >>> from datetime import UTC, datetime
    >>> format_timestamp(datetime(2026, 9, 24, 2, 0, 0, 500, tzinfo=UTC))
    '2026-09-24T02:00:00.000500Z'
    >>> parse_timestamp("2026-09-24T04:00:00+02:00")
    datetime.datetime(2026, 9, 24, 2, 0, tzinfo=datetime.timezone.utc)
    >>> format_schedule_time(parse_timestamp("2026-09-24T02:00:00.7Z"))
    '2026-09-24T02:00:00Z'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import urlsplit

from .realtime import CLASSES, new_datetime, unfreeze

__all__ = [
    "APP_ENGINE_USER_AGENT_SUFFIX",
    "DEFAULT_CONTENT_TYPE",
    "EMULATOR_HTTP2_HEADER",
    "GOOGLE_ISSUER",
    "JOB_NAME_HEADER",
    "NaiveDatetimeError",
    "REPLACED_HEADERS",
    "RESERVED_HEADER_PREFIXES",
    "SCHEDULER_HEADER",
    "SCHEDULE_TIME_HEADER",
    "TIMER_PREFIX",
    "USER_AGENT",
    "emulator_http2",
    "format_schedule_time",
    "format_timestamp",
    "host_port",
    "cloud_run_job_of",
    "is_cloud_run_host",
    "parse_schedule_time",
    "parse_timestamp",
    "scheduler_headers",
    "to_instant",
]

#: ``User-Agent`` of every HTTP-target attempt (a job's own value is replaced).
USER_AGENT = "Google-Cloud-Scheduler"
#: ``iss`` of Google's ID tokens (the emulator's OIDC tokens, unless configured otherwise).
GOOGLE_ISSUER = "https://accounts.google.com"
#: What App Engine appends to the User-Agent of App Engine HTTP targets.
APP_ENGINE_USER_AGENT_SUFFIX = "AppEngine-Google; (+http://code.google.com/appengine)"
#: Set to ``"true"`` on every attempt.
SCHEDULER_HEADER = "X-CloudScheduler"
#: The job's short ID (``nightly``).
JOB_NAME_HEADER = "X-CloudScheduler-JobName"
#: The run's scheduled instant, in the job's UTC offset (unix-cron jobs only; English-like
#: schedules get none); the same on every retry of a run.
SCHEDULE_TIME_HEADER = "X-CloudScheduler-ScheduleTime"
#: Header-name prefixes a job cannot set: the service replaces or drops them.
RESERVED_HEADER_PREFIXES = ("x-google-", "x-appengine-", "x-cloudscheduler")
#: Header names a job cannot set: the service computes them.
REPLACED_HEADERS = frozenset({"host", "content-length", "user-agent"})
#: Emulator-only ``httpTarget.headers`` entry: ``"true"`` sends the job's ``http://`` attempts
#: over HTTP/2 with prior knowledge (h2c) even without ``--http2``, ``"false"`` over HTTP/1.1
#: as usual. Never sent to the target; Cloud Scheduler has no such setting.
EMULATOR_HTTP2_HEADER = "X-Emulator-Http2"
#: ``Content-Type`` sent with a body when the job sets none.
DEFAULT_CONTENT_TYPE = "application/octet-stream"
#: The path under which a service's timer router serves its timers by default.
TIMER_PREFIX = "/_triggers/timer/"

_TIMESTAMP_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def emulator_http2(headers: Mapping[str, str]) -> str | None:
    """The value of a job's :data:`EMULATOR_HTTP2_HEADER` (name matched case-insensitively), or
    ``None`` when the job has none.

    :param headers: a target's ``headers`` map (name → value).
    """
    wanted = EMULATOR_HTTP2_HEADER.lower()
    return next((value for name, value in headers.items() if name.lower() == wanted), None)


def scheduler_headers(job_id: str, schedule_time: str | None) -> dict[str, str]:
    """Return the headers Cloud Scheduler adds to every HTTP attempt, in order.

    :param job_id: the job's short ID.
    :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` value, or ``None`` to omit it.
    :return: ``User-Agent``, ``X-CloudScheduler``, ``X-CloudScheduler-JobName`` and, when
        given, ``X-CloudScheduler-ScheduleTime``.
    """
    headers = {"User-Agent": USER_AGENT, SCHEDULER_HEADER: "true", JOB_NAME_HEADER: job_id}
    if schedule_time is not None:
        headers[SCHEDULE_TIME_HEADER] = schedule_time
    return headers


class NaiveDatetimeError(ValueError):
    """A datetime without a UTC offset where an instant is needed: the one error every time
    input of the package (clocks, schedules, formats, the target-side helpers, the pytest
    marker) raises for a naive datetime, via :func:`to_instant`."""


def to_instant(value: datetime | str, what: str = "the datetime") -> datetime:
    """Check a time input and return it as an instant: a real ``datetime`` in UTC.

    Every function that takes an instant reads it through here, so a naive datetime is refused
    the same way everywhere::

        >>> to_instant(datetime(2026, 9, 24, 4, 0, tzinfo=timezone(timedelta(hours=2))))
        datetime.datetime(2026, 9, 24, 2, 0, tzinfo=datetime.timezone.utc)
        >>> to_instant("2026-09-24T04:00:00+02:00")
        datetime.datetime(2026, 9, 24, 2, 0, tzinfo=datetime.timezone.utc)

    :param value: a timezone-aware datetime (any zone; freezegun's fakes too), or its RFC 3339
        text (:func:`parse_timestamp`).
    :param what: how the error names the value (``"move_to target"``, ``"now"``…).
    :raises NaiveDatetimeError: when ``value`` has no UTC offset; the message names ``what``
        and the value and says what to pass.
    :raises ValueError: when ``value`` is text but not an RFC 3339 timestamp, naming ``what``.
    :raises TypeError: when ``value`` is neither a datetime nor text.
    :return: the same instant in UTC, a real (never freezegun's) ``datetime``.
    """
    if type(value) is CLASSES[0] and value.tzinfo is UTC:  # the commonest: nothing to do
        return value
    if isinstance(value, str):
        try:
            return parse_timestamp(value)
        except ValueError as exc:
            raise ValueError(f"{what} {value[:80]!r}: {exc}") from None
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime; got {type(value).__name__} {value!r}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{what} {value.isoformat()} is naive; pass a timezone-aware datetime, such as "
            "datetime(2026, 9, 24, 2, 0, tzinfo=UTC) (from datetime import UTC)."
        )
    return unfreeze(value).astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    """Render an instant as the service does in JSON: RFC 3339 UTC with ``Z``.

    No fraction for whole seconds (``"2021-06-10T23:34:48Z"``), otherwise 6 fractional digits
    (``"2026-05-07T05:46:25.029067Z"``).

    :param value: a timezone-aware datetime (any zone).
    :raises NaiveDatetimeError: when ``value`` is naive.
    """
    utc = to_instant(value, "a timestamp").replace(tzinfo=None)
    timespec = "seconds" if utc.microsecond == 0 else "microseconds"
    return utc.isoformat(timespec=timespec) + "Z"


def parse_timestamp(text: str) -> datetime:
    """Parse an RFC 3339 timestamp with ``Z`` or an offset into aware UTC.

    Up to 9 fractional digits; digits beyond microseconds are dropped.

    :raises ValueError: when ``text`` is not such a timestamp, or names a date or time that
        does not exist (the message says why, not what ``text`` was).
    """
    match = _TIMESTAMP_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            'expected RFC 3339 such as "2026-05-07T05:46:25Z" or "2026-05-07T07:46:25.5+02:00"'
        )
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    offset = timedelta(0)
    if not zulu:
        if int(off_h) > 23 or int(off_m) > 59:  # RFC 3339's time-numoffset
            raise ValueError(f"the UTC offset {sign}{off_h}:{off_m} is not from -23:59 to +23:59")
        offset = timedelta(hours=int(off_h), minutes=int(off_m))
        if sign == "-":
            offset = -offset
    micros = int((fraction or "").ljust(9, "0")[:6])
    try:
        local = new_datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micros,
            tzinfo=timezone(offset),
        )  # fmt: skip
        return local.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ValueError(str(exc)) from None


def format_schedule_time(instant: datetime) -> str:
    """Render an instant as the ``X-CloudScheduler-ScheduleTime`` value.

    RFC 3339 with no fractional seconds, in the instant's own UTC offset; ``Z`` when the offset
    is zero. An offset with a seconds part (historic local mean time) cannot be written in
    RFC 3339, so such an instant is rendered in UTC.

    :param instant: a timezone-aware datetime (typically in the job's zone).
    :raises NaiveDatetimeError: when ``instant`` is naive.
    :return: e.g. ``"2026-11-01T01:30:00-04:00"`` or ``"2026-09-24T02:00:00Z"``.
    """
    to_instant(instant, "a ScheduleTime")
    offset = instant.utcoffset()
    assert offset is not None  # to_instant refused a naive one
    total = offset.days * 86400 + offset.seconds
    if total % 60 or offset.microseconds:
        instant = instant.astimezone(UTC)
        total = 0
    stamp = (
        f"{instant.year:04d}-{instant.month:02d}-{instant.day:02d}"
        f"T{instant.hour:02d}:{instant.minute:02d}:{instant.second:02d}"
    )
    if total == 0:
        return stamp + "Z"
    sign = "+" if total > 0 else "-"
    hours, minutes = divmod(abs(total) // 60, 60)
    return f"{stamp}{sign}{hours:02d}:{minutes:02d}"


def parse_schedule_time(value: str) -> datetime:
    """Parse an ``X-CloudScheduler-ScheduleTime`` value into an aware datetime in its offset.

    :param value: e.g. ``"2026-09-24T02:00:00Z"`` or ``"2026-01-01T00:00:00.000+00:00"``.
    :raises ValueError: when ``value`` is not an RFC 3339 timestamp (:class:`NaiveDatetimeError`
        when it has no ``Z`` or offset).
    """
    try:
        parsed = unfreeze(datetime.fromisoformat(value.strip()))
    except ValueError:
        raise ValueError(
            f"{SCHEDULE_TIME_HEADER} {value!r} is not an RFC 3339 timestamp; Cloud Scheduler "
            "sends one such as '2026-09-24T02:00:00Z'."
        ) from None
    if parsed.tzinfo is None:
        raise NaiveDatetimeError(
            f"{SCHEDULE_TIME_HEADER} {value!r} has no UTC offset; RFC 3339 needs 'Z' or an offset "
            "such as '+00:00'."
        )
    return parsed


#: Host names that always mean this machine (besides ``*.localhost``, RFC 6761).
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


def is_loopback(host: str) -> bool:
    """Tell whether a host, or an absolute URL's host, is this machine's loopback.

    The one home of this rule: the daemon's ``--host`` and ``Host``/``Origin`` checks and the
    pytest plugin's network guard all ask it. Loopback: ``localhost``,
    ``localhost.localdomain``, any ``*.localhost`` name (RFC 6761), an address in
    ``127.0.0.0/8`` and ``::1``; a trailing dot (``localhost.``) and IPv6 brackets are allowed,
    and case does not matter::

        >>> [is_loopback(h) for h in ("localhost.", "[::1]", "http://api.localhost:8/x")]
        [True, True, True]
        >>> [is_loopback(h) for h in ("localhost.evil.com", "10.0.0.1", "")]
        [False, False, False]

    :param host: a host name or address (``--host``, a ``Host`` header's name), or an absolute
        URL (``http://127.0.0.1:8000/run``).
    :return: ``True`` for a loopback name or address.
    """
    if "://" in host:
        host = urlsplit(host).hostname or ""
    host = host.strip().strip("[]").rstrip(".").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host_port(value: str, field: str, example: str) -> str:
    """Return ``value`` if it is ``HOST:PORT``: a name or address (IPv6 in brackets) and a TCP
    port, 1 to 65535 (``localhost:8085``, ``[::1]:8085``).

    :param field: how the message names where ``value`` came from (``--firebase``).
    :param example: a right value for the message (``127.0.0.1:4400``).
    :raises ValueError: naming ``field`` and ``value`` otherwise (a URL, no port, no host).
    """
    name, _, port = value.rpartition(":")
    if not (name.strip("[]") and "/" not in name and port.isascii() and port.isdigit()):
        scheme = " (no http://)" if "://" in value else ""
        raise ValueError(f"{field} must be HOST:PORT{scheme}, such as {example}; got {value!r}.")
    if not 0 < int(port) < 65536:
        raise ValueError(f"{field}: the port must be 1 to 65535; got {value!r}.")
    return value


def host_port(host: str, port: int) -> str:
    """``HOST:PORT`` of a name or address (IPv6 without brackets) and a TCP port, an IPv6
    address in brackets (``[::1]:8095``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


#: How header names are spelled on the wire (``--header-case``): ``google`` as Cloud
#: Scheduler's documentation spells them (``X-CloudScheduler-JobName``, today's default),
#: ``lower`` as an HTTP/2 front end (Cloud Run) hands them on (``x-cloudscheduler-jobname``),
#: ``canonical`` as Go's and many HTTP/1.1 servers' canonical form (``X-Cloudscheduler-Jobname``).
HEADER_CASES = ("google", "lower", "canonical")


def spell_header(name: str, header_case: str) -> str:
    """Spell one header name in ``header_case`` (one of :data:`HEADER_CASES`)::

        >>> [spell_header("X-CloudScheduler-JobName", c) for c in HEADER_CASES]
        ['X-CloudScheduler-JobName', 'x-cloudscheduler-jobname', 'X-Cloudscheduler-Jobname']

    :raises ValueError: for another ``header_case``, naming the accepted ones.
    """
    if header_case == "google":
        return name
    if header_case == "lower":
        return name.lower()
    if header_case == "canonical":
        return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))
    raise ValueError(f"header_case must be one of {', '.join(HEADER_CASES)}; got {header_case!r}.")


def spell_headers(headers: dict[str, str], header_case: str) -> dict[str, str]:
    """``headers`` with every name spelled in ``header_case`` (the same dict for ``google``).

    :raises ValueError: for an unknown ``header_case``.
    """
    if header_case == "google":
        return headers
    return {spell_header(name, header_case): value for name, value in headers.items()}


#: A regional endpoint of the Cloud Run Admin API: ``REGION-run.googleapis.com``.
CLOUD_RUN_REGIONAL_HOST = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-run\.googleapis\.com$")


def is_cloud_run_host(host: str) -> bool:
    """Whether ``host`` is the Cloud Run Admin API: ``run.googleapis.com`` or
    ``REGION-run.googleapis.com``."""
    return host == "run.googleapis.com" or CLOUD_RUN_REGIONAL_HOST.match(host) is not None


#: The path of the Cloud Run Admin API's run method, v2 and v1 (the job ID its group).
_CLOUD_RUN_RUN = re.compile(
    r"^/(?:v2/projects/[^/]+/locations|apis/run\.googleapis\.com/v1/namespaces)/[^/]+/jobs/"
    r"([^/:]+):run$"
)


def cloud_run_job_of(uri: str) -> str | None:
    """The ID of the Cloud Run job ``uri`` runs, when it calls the Cloud Run Admin API's run
    method (``/v2/projects/P/locations/L/jobs/J:run`` or
    ``/apis/run.googleapis.com/v1/namespaces/P/jobs/J:run``), else ``None``."""
    url = urlsplit(uri)
    run = _CLOUD_RUN_RUN.match(url.path) if is_cloud_run_host(url.hostname or "") else None
    return run and run[1]
