"""The REST JSON edge: proto3 JSON mapping of Job and its parts.

Everything inside the emulator is a :class:`~scheduler_emulator.domain.resources.Job` with
snake_case
attributes, ``timedelta`` durations, aware UTC datetimes and raw ``bytes``. This module converts
at the edge:

- :func:`job_from_json` accepts what real clients send — camelCase or snake_case keys, enum names
  or integers (the Python client sends ``"httpMethod": 1``), int32 as numbers or numeric strings,
  standard or URL-safe base64 with or without padding — silently ignores output-only fields,
  rejects unknown fields and wrong JSON types naming the field path and value, then applies the
  server defaults and validates the result.
- :func:`job_to_json` renders what the real service returns: camelCase, proto3 defaults omitted
  except what the service always shows, canonical durations and timestamps.
- For UpdateJob (:mod:`~scheduler_emulator.domain.update_mask`) the parts of :func:`job_from_json`
are
  public: :func:`parse_job` (parse only), :func:`json_fields` (which fields the body *has*, with
  its raw values), :func:`normalise_job` (defaults + validation) and :data:`MESSAGE_FIELDS`
  (the field names of every message, which both the parser and mask paths use).

Worked example::

    >>> job = job_from_json(
    ...     {
    ...         "name": "projects/demo-project/locations/us-central1/jobs/nightly",
    ...         "schedule": "0 3 * * *",
    ...         "http_target": {"uri": "https://svc.example/run", "httpMethod": 1, "body": "e30"},
    ...         "retryConfig": {"retryCount": "3", "minBackoffDuration": "1.500s"},
    ...     }
    ... )
    >>> job.http_target.body, job.retry_config.min_backoff_duration
    (b'{}', datetime.timedelta(seconds=1, microseconds=500000))
    >>> out = job_to_json(job)
    >>> out["httpTarget"]["headers"]
    {'User-Agent': 'Google-Cloud-Scheduler', 'Content-Type': 'application/octet-stream'}
    >>> out["httpTarget"]["body"], out["attemptDeadline"], out["retryConfig"]["minBackoffDuration"]
    ('e30=', '180s', '1.500s')

Errors are :class:`~scheduler_emulator.domain.errors.InvalidArgument`. Messages about the JSON
itself
follow Google's front-end wording, which names the proto (snake_case) path::

    Invalid JSON payload received. Unknown name "foo" at 'job.http_target': Cannot find field.
    Invalid value at 'job.retry_config.retry_count' (TYPE_INT32), "abc"

while the error's ``field`` is the camelCase path the rest of the emulator uses
(``httpTarget.foo``, ``retryConfig.retryCount``) and the field violation's description is a short
sentence naming the value (``retryConfig.retryCount must be an integer; got "abc".``).
"""

from __future__ import annotations

import base64
import binascii
import difflib
import enum
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from .. import wire
from .errors import InvalidArgument, show_value
from .resources import (
    MESSAGE_TYPES,
    AppEngineHttpTarget,
    HttpMethod,
    HttpTarget,
    Job,
    PubsubTarget,
    RetryConfig,
    State,
    Status,
    with_defaults,
)
from .validation import validate_job

__all__ = [
    "MESSAGE_FIELDS",
    "MessageFields",
    "camel_case",
    "default_message",
    "format_duration",
    "job_from_json",
    "job_to_json",
    "json_fields",
    "normalise_job",
    "parse_duration",
    "parse_job",
    "parse_timestamp",
    "lone_surrogate",
    "refuse_lone_surrogates",
    "show_value",
    "status_to_json",
]

#: Largest absolute Duration the proto allows, in seconds (google/protobuf/duration.proto).
MAX_DURATION_SECONDS = 315_576_000_000
_DURATION_RANGE = f"at most {MAX_DURATION_SECONDS} seconds"

_DURATION_RE = re.compile(r"(-)?([0-9]+)(?:\.([0-9]{1,9}))?s")
_BASE64_RE = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_INT_STRING_RE = re.compile(r"-?[0-9]+")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MICROSECOND = timedelta(microseconds=1)
_TYPE_PREFIX = "type.googleapis.com/google.cloud.scheduler.v1."


# ---------------------------------------------------------------------------------------------
# Durations and timestamps


def lone_surrogate(text: str) -> bool:
    """Tell whether ``text`` holds a lone surrogate (U+D800–U+DFFF), which JSON's ``\\ud800``
    escape can produce but no UTF-8 text, header or URI can carry.

    :param text: any string.
    :return: ``True`` when ``text`` cannot be encoded as UTF-8.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def refuse_lone_surrogates(data: Any, *, field: str = "") -> None:
    """Refuse a decoded JSON (or YAML) document that holds a lone surrogate in any key or string.

    Walks ``data`` without recursion (any depth) and raises for the first bad string, naming its
    path and showing it with the surrogate escaped.

    :param data: the decoded document: dicts, lists and scalars.
    :param field: the path of ``data`` itself, for messages (``""`` for the whole body).
    :raises InvalidArgument: ``field`` is the camelCase-or-as-written path of the bad value
        (``httpTarget.headers.X-A``), the message names it and the value.
    """
    stack: list[tuple[str, Any]] = [(field, data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if lone_surrogate(value):
                _surrogate_error(path, value)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and lone_surrogate(key):
                    _surrogate_error(child, key)
                stack.append((child, item))
        elif isinstance(value, list | tuple):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))


def _surrogate_error(path: str, value: str) -> None:
    where = show_value(path) if lone_surrogate(path) else path
    raise InvalidArgument(
        f"Invalid JSON payload received. {where or 'The body'} holds a lone surrogate, which is "
        f"not valid Unicode text: {show_value(value)}.",
        field=where.strip('"') or None,
        description=f"{where or 'The body'} must be valid Unicode text (no lone surrogate); "
        f"got {show_value(value)}.",
    )


def parse_duration(text: str, *, field: str | None = None) -> timedelta:
    """Parse a proto3 JSON Duration string.

    Accepts seconds with an optional leading ``-``, up to 9 fractional digits and the ``s``
    suffix: ``"600s"``, ``"3.5s"``, ``"1.500s"``, ``"-0.25s"``. Proto3 JSON encodes a Duration
    as a *string*, so a JSON number (``180``) is rejected, as are ``"3m"``, ``"1.s"`` and
    ``" 5s"``. Digits beyond microseconds (``timedelta``'s resolution) are dropped, except
    that a nonzero duration shorter than 1 µs is kept as 1 µs (never as 0, which means unset).

    :param text: the JSON value.
    :param field: optional camelCase field path to attach to the error.
    :raises InvalidArgument: when ``text`` is not a string of that form or exceeds the proto's
        range of ±315,576,000,000 s.
    :return: the duration.
    """
    if not isinstance(text, str):
        raise InvalidArgument(
            f'Invalid duration {show_value(text)}: a duration is a JSON string such as "180s" or '
            '"1.500s" (proto3 JSON), not a number.',
            field=field,
        )
    match = _DURATION_RE.fullmatch(text)
    if match is None:
        raise InvalidArgument(
            f"Invalid duration {show_value(text)}: expected seconds with up to 9 fractional digits "
            'and an "s" suffix, such as "180s" or "1.500s".',
            field=field,
        )
    sign, whole, fraction = match.groups()
    # Count the digits before converting: int() of thousands of digits is slow or refused.
    digits = whole.lstrip("0")
    if len(digits) > len(str(MAX_DURATION_SECONDS)) or int(digits or 0) > MAX_DURATION_SECONDS:
        raise InvalidArgument(
            f"Invalid duration {show_value(text)}: {_DURATION_RANGE}.",
            field=field,
        )
    micros = int((fraction or "").ljust(9, "0")[:6])
    if not (micros or digits) and (fraction or "").strip("0"):
        micros = 1  # shorter than 1 µs, but not the 0 that means "unset" (trial 99)
    value = timedelta(seconds=int(digits or 0), microseconds=micros)
    return -value if sign else value


def format_duration(value: timedelta) -> str:
    """Render a duration in the canonical shortest proto3 JSON form.

    Whole seconds as ``"Ns"`` (``"180s"``, ``"0s"``), otherwise 3 or 6 fractional digits
    (``"1.500s"``, ``"0.000250s"``); negative values get a leading ``-``.

    :param value: the duration (microsecond resolution).
    :return: the JSON string.
    """
    micros = value // _MICROSECOND
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), 1_000_000)
    if fraction == 0:
        return f"{sign}{seconds}s"
    if fraction % 1000 == 0:
        return f"{sign}{seconds}.{fraction // 1000:03d}s"
    return f"{sign}{seconds}.{fraction:06d}s"


def parse_timestamp(text: str, *, field: str | None = None) -> datetime:
    """Parse an RFC 3339 timestamp with any UTC offset; see
    :func:`scheduler_emulator.wire.parse_timestamp`.

    :param text: the JSON value.
    :param field: optional camelCase field path to attach to the error.
    :raises InvalidArgument: when ``text`` is not an RFC 3339 date-time with an offset, or names
        a date or time that does not exist.
    :return: a timezone-aware datetime in UTC.
    """
    try:
        return wire.parse_timestamp(text)
    except ValueError as exc:
        raise InvalidArgument(
            f"Invalid timestamp {show_value(text)}: {exc}.", field=field
        ) from None


# ---------------------------------------------------------------------------------------------
# Reading JSON


@dataclass(frozen=True)
class MessageFields:
    """The JSON-visible fields of one message type of the Job resource.

    Names are the proto (snake_case) names, which are also the attribute names of the
    :mod:`~scheduler_emulator.domain.resources` dataclasses; JSON accepts each in camelCase too.

    :param settable: the fields a request may set, in proto order.
    :param output_only: fields a request may carry but that are ignored once read (a value of
        the wrong type or form is refused).
    :param messages: the message-typed fields among ``settable``, as ``(field, type name)``
        pairs; the type name is a key of :data:`MESSAGE_FIELDS`. Every other field is a scalar,
        an enum, bytes, a Duration or a string map.
    :param oneofs: groups of fields of which at most one may be set (Job's ``target``,
        HttpTarget's ``authorization_header``).
    """

    settable: tuple[str, ...]
    output_only: tuple[str, ...]
    messages: tuple[tuple[str, str], ...]
    oneofs: tuple[tuple[str, ...], ...]

    @functools.cached_property
    def _message_types(self) -> dict[str, str]:
        return dict(self.messages)

    def message_type(self, name: str) -> str | None:
        """The message type name of field ``name``, or ``None`` for a non-message field."""
        return self._message_types.get(name)


#: The fields of every message of the Job resource, by type name (``"Job"``, ``"HttpTarget"``…).
#: The one table the JSON parser and the update-mask paths both read.
MESSAGE_FIELDS: Mapping[str, MessageFields] = MappingProxyType(
    {
        "Job": MessageFields(
            settable=(
                "name",
                "description",
                "pubsub_target",
                "app_engine_http_target",
                "http_target",
                "schedule",
                "time_zone",
                "retry_config",
                "attempt_deadline",
            ),
            output_only=(
                "user_update_time",
                "state",
                "status",
                "schedule_time",
                "last_attempt_time",
            ),
            messages=(
                ("pubsub_target", "PubsubTarget"),
                ("app_engine_http_target", "AppEngineHttpTarget"),
                ("http_target", "HttpTarget"),
                ("retry_config", "RetryConfig"),
            ),
            oneofs=(("pubsub_target", "app_engine_http_target", "http_target"),),
        ),
        "HttpTarget": MessageFields(
            settable=("uri", "http_method", "headers", "body", "oauth_token", "oidc_token"),
            output_only=(),
            messages=(("oauth_token", "OAuthToken"), ("oidc_token", "OidcToken")),
            oneofs=(("oauth_token", "oidc_token"),),
        ),
        "OidcToken": MessageFields(
            settable=("service_account_email", "audience"), output_only=(), messages=(), oneofs=()
        ),
        "OAuthToken": MessageFields(
            settable=("service_account_email", "scope"), output_only=(), messages=(), oneofs=()
        ),
        "AppEngineHttpTarget": MessageFields(
            settable=("http_method", "app_engine_routing", "relative_uri", "headers", "body"),
            output_only=(),
            messages=(("app_engine_routing", "AppEngineRouting"),),
            oneofs=(),
        ),
        "AppEngineRouting": MessageFields(
            settable=("service", "version", "instance"),
            output_only=("host",),
            messages=(),
            oneofs=(),
        ),
        "PubsubTarget": MessageFields(
            settable=("topic_name", "data", "attributes"), output_only=(), messages=(), oneofs=()
        ),
        "RetryConfig": MessageFields(
            settable=(
                "retry_count",
                "max_retry_duration",
                "min_backoff_duration",
                "max_backoff_duration",
                "max_doublings",
            ),
            output_only=(),
            messages=(),
            oneofs=(),
        ),
    }
)


@functools.lru_cache(maxsize=256)
def camel_case(proto_name: str) -> str:
    """The JSON (lowerCamelCase) spelling of a proto field name: ``time_zone`` → ``timeZone``.

    :param proto_name: a snake_case proto field name (one of a few dozen: kept once made).
    :return: the camelCase name.
    """
    head, *rest = proto_name.split("_")
    return head + "".join(part.title() for part in rest)


@functools.cache  # one entry per message type of MESSAGE_FIELDS
def _spellings(type_name: str) -> dict[str, str]:
    """Every key a message's JSON object may use (snake_case or camelCase) → proto name."""
    schema = MESSAGE_FIELDS[type_name]
    by_key: dict[str, str] = {}
    for name in schema.settable + schema.output_only:
        by_key[name] = name
        by_key[camel_case(name)] = name
    return by_key


@dataclass(frozen=True)
class _Path:
    """Where a value sits: proto path for Google-style messages, camelCase for ``field``."""

    proto: str
    json: str

    def child(self, proto_name: str, json_name: str) -> _Path:
        return _Path(
            f"{self.proto}.{proto_name}", f"{self.json}.{json_name}" if self.json else json_name
        )


class _BadValue(Exception):
    """A value of the wrong type or form; the caller knows the field path."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _invalid_value(path: _Path, type_name: str, value: Any, reason: str) -> InvalidArgument:
    return InvalidArgument(
        f"Invalid value at '{path.proto}' ({type_name}), {show_value(value)}",
        field=path.json or None,
        description=f"{path.json or 'The job'} {reason}; got {show_value(value)}.",
    )


def _fields(data: Any, path: _Path, type_name: str) -> dict[str, tuple[_Path, Any]]:
    """Check a JSON object against a message's fields; return proto name → (path, value).

    ``type_name`` is a key of :data:`MESSAGE_FIELDS`. Keys may be camelCase or snake_case; null
    values and output-only fields are dropped; unknown keys and a field given under both
    spellings are errors.
    """
    if not isinstance(data, Mapping):
        raise _invalid_value(path, _TYPE_PREFIX + type_name, data, "must be a JSON object")
    output_only = MESSAGE_FIELDS[type_name].output_only
    by_key = _spellings(type_name)
    result: dict[str, tuple[_Path, Any]] = {}
    seen: dict[str, str] = {}
    for key, value in data.items():
        found = by_key.get(key) if isinstance(key, str) else None
        if found is None:
            unknown = path.child(str(key), str(key))
            snake = "_" in str(key)  # the names offered are spelt as the caller spells them
            settable = MESSAGE_FIELDS[type_name].settable
            fields = [name if snake else camel_case(name) for name in settable]
            near = difflib.get_close_matches(str(key), fields, n=1)
            other = near and settable[fields.index(near[0])]  # (trial 226: Python's timezone=)
            also = f" (or {other})" if near and str(key).islower() and other != near[0] else ""
            raise InvalidArgument(  # Google's message; the violation says what would be known
                f"Invalid JSON payload received. Unknown name {show_value(key)} at '{path.proto}': "
                "Cannot find field.",
                field=unknown.json,
                description=f"{show_value(key)} is not a field of {type_name}"
                + (
                    f'; did you mean "{near[0]}"{also}?'
                    if near
                    else f"; it has {', '.join(fields)}."
                ),
            )
        name = found
        if name in output_only:  # dropped, once read as production's JSON front end reads it
            if value is not None:  # (trial 223: "state": "BOGUS" was taken)
                _convert(_OUTPUT_ONLY[name], path.child(name, camel_case(name)), value)
            continue
        if name in seen:
            raise InvalidArgument(
                f"Invalid JSON payload received. {show_value(seen[name])} and {show_value(key)} at "
                f"'{path.proto}' name the same field.",
                field=path.child(name, camel_case(name)).json,
            )
        seen[name] = key
        if value is None:
            continue
        result[name] = (path.child(name, camel_case(name)), value)
    return result


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _BadValue("must be a string")
    if lone_surrogate(value):
        raise _BadValue("must be valid Unicode text (it holds a lone surrogate)")
    return value


def _int32(value: Any) -> int:
    integral = (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer())
        or (isinstance(value, str) and _INT_STRING_RE.fullmatch(value) is not None)
    )
    if not integral:
        raise _BadValue("must be an integer")
    if isinstance(value, str) and len(value.lstrip("-").lstrip("0")) > 10:
        raise _BadValue("must be a 32-bit integer")  # before int(): no 5000-digit conversion
    number = int(value)
    if not _INT32_MIN <= number <= _INT32_MAX:
        raise _BadValue("must be a 32-bit integer")
    return number


def _enum_reader(kind: type[enum.IntEnum]) -> Callable[[Any], Any]:
    """The reader of an enum field: its value's name or number."""

    def read(value: Any) -> Any:
        if isinstance(value, str) and value in kind.__members__:
            return kind[value]
        try:
            return kind(_int32(value))
        except (_BadValue, ValueError):
            names = ", ".join(kind.__members__)
            raise _BadValue(f"must be one of {names} or its number") from None

    return read


_http_method = _enum_reader(HttpMethod)
_state = _enum_reader(State)


def _timestamp(value: Any) -> datetime:
    try:
        return parse_timestamp(_string(value))
    except (_BadValue, InvalidArgument):
        raise _BadValue('must be an RFC 3339 timestamp such as "2026-09-24T02:00:00Z"') from None


def _object(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise _BadValue("must be a JSON object")
    return value


def _bytes(value: Any) -> bytes:
    if not isinstance(value, str) or not _BASE64_RE.fullmatch(value):
        raise _BadValue("must be a base64 string")
    text = value.rstrip("=").replace("-", "+").replace("_", "/")
    if len(text) % 4 == 1:
        raise _BadValue("must be a base64 string")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise _BadValue("must be a base64 string") from None


def _duration(value: Any) -> timedelta:
    if isinstance(value, timedelta):  # from Python (the plugin's keywords): as its JSON text
        value = format_duration(value)
    try:
        return parse_duration(value)
    except InvalidArgument as exc:
        if exc.message.endswith(f"{_DURATION_RANGE}."):
            raise _BadValue(f"must be {_DURATION_RANGE}") from None
        if isinstance(value, str) and value.startswith("seconds "):  # a gRPC Duration (trial 105)
            raise _BadValue(
                "is not a valid Duration: its seconds and nanos must have the same sign, and "
                "nanos be at most 999,999,999 in size"
            ) from None
        raise _BadValue(
            'must be a duration string: seconds with at most 9 digits after the point and an "s", '
            'such as "180s" or "1.500s"'
        ) from None


def _string_map(value: Any) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise _BadValue("must be a JSON object of strings")
    result: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            continue  # gcloud's "remove this header"; dropped on create
        if not isinstance(key, str) or not isinstance(item, str):
            raise _BadValue(
                f"must map strings to strings, but {show_value(key)} maps to {show_value(item)}"
            )
        if lone_surrogate(key) or lone_surrogate(item):
            raise _BadValue(
                f"must hold valid Unicode text, but {show_value(key)}: {show_value(item)} has a "
                "lone surrogate"
            )
        result[key] = item
    return MappingProxyType(result)


_SCALAR_TYPES: dict[Callable[[Any], Any], str] = {
    _string: "TYPE_STRING",
    _int32: "TYPE_INT32",
    _bytes: "TYPE_BYTES",
    _http_method: _TYPE_PREFIX + "HttpMethod",
    _duration: "type.googleapis.com/google.protobuf.Duration",
    _string_map: "map<string, string>",
    _state: _TYPE_PREFIX + "Job.State",
    _timestamp: "type.googleapis.com/google.protobuf.Timestamp",
    _object: "type.googleapis.com/google.rpc.Status",
}
#: How each output-only field reads: only to refuse a value of the wrong type or form.
_OUTPUT_ONLY: Mapping[str, Callable[[Any], Any]] = {
    "state": _state,
    "status": _object,
    "user_update_time": _timestamp,
    "schedule_time": _timestamp,
    "last_attempt_time": _timestamp,
    "host": _string,
}

_Conversion = tuple[Callable[[Any], Any], Any]
_STRING: _Conversion = (_string, "")
_METHOD: _Conversion = (_http_method, HttpMethod.HTTP_METHOD_UNSPECIFIED)
_MAP: _Conversion = (_string_map, MappingProxyType({}))
_BYTES: _Conversion = (_bytes, b"")
_RETRY_DEFAULTS = RetryConfig()

#: How each non-message field of a message reads from JSON, and the value of an absent one:
#: type name → proto field name → (converter, default). A message-typed field (the
#: ``messages`` of :data:`MESSAGE_FIELDS`) is read by its own type's entry, ``None`` when
#: absent.
_CONVERSIONS: Mapping[str, Mapping[str, _Conversion]] = {
    "Job": {
        "name": _STRING,
        "description": _STRING,
        "schedule": _STRING,
        "time_zone": _STRING,
        "attempt_deadline": (_duration, None),
    },
    "HttpTarget": {"uri": _STRING, "http_method": _METHOD, "headers": _MAP, "body": _BYTES},
    "OidcToken": {"service_account_email": _STRING, "audience": _STRING},
    "OAuthToken": {"service_account_email": _STRING, "scope": _STRING},
    "AppEngineHttpTarget": {
        "http_method": _METHOD,
        "relative_uri": _STRING,
        "headers": _MAP,
        "body": _BYTES,
    },
    "AppEngineRouting": {"service": _STRING, "version": _STRING, "instance": _STRING},
    "PubsubTarget": {"topic_name": _STRING, "data": _BYTES, "attributes": _MAP},
    "RetryConfig": {  # an absent field takes the server's default (maxDoublings 5), not zero
        "retry_count": (_int32, _RETRY_DEFAULTS.retry_count),
        "max_retry_duration": (_duration, _RETRY_DEFAULTS.max_retry_duration),
        "min_backoff_duration": (_duration, _RETRY_DEFAULTS.min_backoff_duration),
        "max_backoff_duration": (_duration, _RETRY_DEFAULTS.max_backoff_duration),
        "max_doublings": (_int32, _RETRY_DEFAULTS.max_doublings),
    },
}


def _field_values(data: Any, path: _Path, type_name: str) -> dict[str, Any]:
    """Read a message's JSON object: proto field name → value, an absent field at its default.

    :raises InvalidArgument: for an unknown field, a field given in both spellings, or a value
        of the wrong JSON type or form, naming its path.
    """
    schema = MESSAGE_FIELDS[type_name]
    conversions = _CONVERSIONS[type_name]
    fields = _fields(data, path, type_name)
    values: dict[str, Any] = {}
    for name in schema.settable:
        child_type = schema.message_type(name)
        if name not in fields:
            values[name] = None if child_type is not None else conversions[name][1]
            continue
        child_path, value = fields[name]
        if child_type is not None:
            values[name] = _message(value, child_path, child_type)
            continue
        values[name] = _convert(conversions[name][0], child_path, value)
    return values


def _convert(convert: Callable[[Any], Any], path: _Path, value: Any) -> Any:
    try:
        return convert(value)
    except _BadValue as exc:
        raise _invalid_value(path, _SCALAR_TYPES[convert], value, exc.reason) from None


def _message(data: Any, path: _Path, type_name: str) -> Any:
    """The resource dataclass of a message-typed field's JSON object."""
    return MESSAGE_TYPES[type_name](**_field_values(data, path, type_name))


def parse_job(data: Mapping[str, Any], *, default_name: str | None = None) -> Job:
    """Convert a REST JSON body to a Job as it stands: no defaults, no validation.

    The parsing half of :func:`job_from_json`: the same spellings are accepted and the same
    :class:`~scheduler_emulator.domain.errors.InvalidArgument` is raised for unknown fields and
    values
    of the wrong type or form. Fields absent from ``data`` take the value the parser gives an
    absent field: empty strings and maps, ``HTTP_METHOD_UNSPECIFIED``, no target, no token,
    ``attempt_deadline=None`` and a :class:`~scheduler_emulator.domain.resources.RetryConfig` of the
    server's defaults (also for each absent field of a given ``retryConfig``). Output-only fields
    are ignored and left at their initial values.

    :param data: the decoded JSON object.
    :param default_name: the name to use when ``data`` has no or an empty ``name``.
    :raises InvalidArgument: for an unknown field or a value of the wrong JSON type or form
        (see :func:`job_from_json`).
    :return: the job; ``name`` is ``""`` when neither ``data`` nor ``default_name`` gives one.
    """
    values = _field_values(data, _Path("job", ""), "Job")
    values["name"] = values["name"] or default_name or ""
    values["retry_config"] = values["retry_config"] or RetryConfig()
    return Job(**values)


def default_message(type_name: str) -> Any:
    """The value :func:`parse_job` gives a message whose JSON object is empty (``{}``).

    That is what an update-mask path "clears" a message to: ``HttpTarget(uri="",
    http_method=HTTP_METHOD_UNSPECIFIED)``, ``OidcToken(service_account_email="")``, the
    default ``RetryConfig()``…

    :param type_name: a key of :data:`MESSAGE_FIELDS` other than ``"Job"``.
    :raises KeyError: for any other name.
    :return: the resource dataclass instance.
    """
    if type_name == "Job":
        raise KeyError(type_name)
    return _message({}, _Path(type_name, type_name), type_name)


def json_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return a Job JSON body keyed by proto (snake_case) field names, values as given.

    Message-typed fields are converted recursively; every other value (strings, numbers, maps —
    with their ``null`` values, which gcloud uses to remove headers) is returned untouched.
    Fields whose value is ``null`` and output-only fields are left out. Tells which fields a
    body *has* (proto3 JSON presence), which :func:`parse_job` cannot.

    :param data: the decoded JSON object.
    :raises InvalidArgument: for an unknown field, a field given in both spellings, or a
        message-typed field that is not a JSON object — as :func:`job_from_json` does.
    :return: a new dict; e.g. ``{"http_target": {"headers": {"X-A": None}}, "schedule": "…"}``.
    """

    def walk(value: Any, path: _Path, type_name: str) -> dict[str, Any]:
        schema = MESSAGE_FIELDS[type_name]
        out: dict[str, Any] = {}
        for name, (child_path, child) in _fields(value, path, type_name).items():
            child_type = schema.message_type(name)
            out[name] = child if child_type is None else walk(child, child_path, child_type)
        return out

    return walk(data, _Path("job", ""), "Job")


def normalise_job(job: Job) -> Job:
    """Apply the server defaults and check every rule, as CreateJob does.

    :param job: a job as parsed (:func:`parse_job`) or as changed by an update.
    :raises InvalidArgument: for any rule of
    :func:`~scheduler_emulator.domain.validation.validate_job`.
    :return: :func:`~scheduler_emulator.domain.resources.with_defaults` of ``job``.
    """
    job = with_defaults(job)
    validate_job(job)
    return job


def same_configuration(job: Job, stored: Job) -> bool:
    """Whether ``job`` and ``stored`` differ at most in their output-only fields (state,
    status, times): what a restart with the same jobs file leaves as it is."""
    kept = {name: getattr(stored, name) for name in MESSAGE_FIELDS["Job"].output_only}
    return replace(job, **kept) == stored


def job_from_json(data: Mapping[str, Any], *, default_name: str | None = None) -> Job:
    """Build a valid, normalised Job from a REST JSON body.

    Accepts camelCase and snake_case keys at every level; enum names or integers
    (``"httpMethod": "POST"`` or ``1``, also ``"1"``); int32 as numbers or numeric strings;
    Duration strings (:func:`parse_duration`); base64 bytes, standard or URL-safe, padded or not;
    JSON ``null`` anywhere meaning "not set" (a null header or attribute value is dropped).
    Output-only fields (``state``, ``status``, ``scheduleTime``, ``lastAttemptTime``,
    ``userUpdateTime``, ``appEngineRouting.host``) are ignored once read (a value of the wrong
    type or form is refused, as production's JSON front end refuses it);
    ``attemptDeadline`` of a Pub/Sub job is ignored. Missing RetryConfig fields get the
    server's defaults (``maxDoublings`` 5). :func:`parse_job` followed by
    :func:`normalise_job`.

    :param data: the decoded JSON object (the request body of CreateJob, a jobs-file entry…).
    :param default_name: full job name to use when ``data`` has no or an empty ``name`` (e.g. a
        generated name on create).
    :raises InvalidArgument: for an unknown field (``Invalid JSON payload received. Unknown
        name "foo" at 'job': Cannot find field.``), a value of the wrong JSON type or form
        (``Invalid value at 'job.retry_config.retry_count' (TYPE_INT32), "abc"``), a missing
        name without ``default_name`` (``field="name"``), or any rule of
        :func:`~scheduler_emulator.domain.validation.validate_job`.
    :return: the job with :func:`~scheduler_emulator.domain.resources.with_defaults` applied and
        validated; output-only fields are at their initial values (``ENABLED``, no status, no
        times).
    """
    job = parse_job(data, default_name=default_name)
    if not job.name:
        raise InvalidArgument("name is required.", field="name")
    return normalise_job(job)


# ---------------------------------------------------------------------------------------------
# Writing JSON


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _enum(value: HttpMethod | int, enum_int: bool) -> str | int:
    if enum_int:
        return int(value)
    return value.name if isinstance(value, HttpMethod) else HttpMethod(value).name


def status_to_json(status: Status | None) -> dict[str, Any] | None:
    """Render ``Job.status``: absent before the first attempt, then ``{}`` or the failure.

    :param status: the last attempt's result, or ``None`` when the job never ran.
    :return: ``None`` (omit the field) for a job that never ran, ``{}`` for code 0 (OK), else
        ``{"code": n, "message": text}`` (``message`` omitted when empty).
    """
    if status is None:
        return None
    if status.code == 0:
        return {}
    out: dict[str, Any] = {"code": status.code}
    if status.message:
        out["message"] = status.message
    return out


def _set(**fields: Any) -> dict[str, Any]:
    """The given fields (camelCase) that are not at their proto3 default, which JSON leaves
    out: empty strings, maps, bytes and 0; maps are rendered as dicts, bytes as base64."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, bytes):
            value = _b64(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        if value:
            out[key] = value
    return out


def _http_target_json(target: HttpTarget, enum_int: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "uri": target.uri,
        "httpMethod": _enum(target.http_method or HttpMethod.POST, enum_int),
        **_set(headers=target.headers, body=target.body),
    }
    if target.oauth_token is not None:
        out["oauthToken"] = {
            "serviceAccountEmail": target.oauth_token.service_account_email,
            **_set(scope=target.oauth_token.scope),
        }
    if target.oidc_token is not None:
        out["oidcToken"] = {
            "serviceAccountEmail": target.oidc_token.service_account_email,
            **_set(audience=target.oidc_token.audience),
        }
    return out


def _app_engine_json(target: AppEngineHttpTarget, enum_int: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"httpMethod": _enum(target.http_method or HttpMethod.POST, enum_int)}
    routing = target.app_engine_routing
    if routing is not None:
        out["appEngineRouting"] = _set(
            service=routing.service,
            version=routing.version,
            instance=routing.instance,
            host=routing.host,
        )
    out["relativeUri"] = target.relative_uri or "/"
    return out | _set(headers=target.headers, body=target.body)


def _pubsub_json(target: PubsubTarget) -> dict[str, Any]:
    return {"topicName": target.topic_name} | _set(data=target.data, attributes=target.attributes)


def _retry_config_json(config: RetryConfig) -> dict[str, Any]:
    return _set(retryCount=config.retry_count) | {
        "maxRetryDuration": format_duration(config.max_retry_duration),
        "minBackoffDuration": format_duration(config.min_backoff_duration),
        "maxBackoffDuration": format_duration(config.max_backoff_duration),
        # Shown even when 0 (unlike proto3), so that an explicit 0 survives a round trip: an
        # absent maxDoublings means 5 on input.
        "maxDoublings": config.max_doublings,
    }


def job_to_json(job: Job, *, enum_int: bool = False) -> dict[str, Any]:
    """Render a Job as the real service returns it.

    camelCase keys in the order the real service uses; proto3 defaults omitted (empty
    ``description``, ``retryCount`` 0, empty headers/body/attributes, empty token
    ``audience``/``scope``), except what the service always shows: ``state``, ``httpMethod``,
    ``attemptDeadline`` (HTTP and App Engine targets), and the full ``retryConfig``
    (``maxRetryDuration: "0s"``, backoffs, ``maxDoublings``). Durations and timestamps are canonical
    (:func:`format_duration`, :func:`~scheduler_emulator.wire.format_timestamp`), bytes are
    standard base64 with padding,
    ``status`` is absent until the first attempt (:func:`status_to_json`), and unset timestamps are
    omitted.

    :param job: the job (normally already defaulted by ``with_defaults``).
    :param enum_int: render ``state`` and ``httpMethod`` as integers, as asked for by the Python
        client's ``$alt=json;enum-encoding=int``; names otherwise.
    :return: a JSON-serialisable dict. For the configuration fields
        ``job_from_json(job_to_json(job)) == job`` holds.
    """
    out: dict[str, Any] = {"name": job.name, **_set(description=job.description)}
    if job.pubsub_target is not None:
        out["pubsubTarget"] = _pubsub_json(job.pubsub_target)
    if job.app_engine_http_target is not None:
        out["appEngineHttpTarget"] = _app_engine_json(job.app_engine_http_target, enum_int)
    if job.http_target is not None:
        out["httpTarget"] = _http_target_json(job.http_target, enum_int)
    out["schedule"] = job.schedule
    out["timeZone"] = job.time_zone
    if job.user_update_time is not None:
        out["userUpdateTime"] = wire.format_timestamp(job.user_update_time)
    out["state"] = int(job.state) if enum_int else job.state.name
    status = status_to_json(job.status)
    if status is not None:
        out["status"] = status
    if job.schedule_time is not None:
        out["scheduleTime"] = wire.format_timestamp(job.schedule_time)
    if job.last_attempt_time is not None:
        out["lastAttemptTime"] = wire.format_timestamp(job.last_attempt_time)
    out["retryConfig"] = _retry_config_json(job.retry_config)
    if job.attempt_deadline is not None and job.pubsub_target is None:
        out["attemptDeadline"] = format_duration(job.attempt_deadline)
    return out
