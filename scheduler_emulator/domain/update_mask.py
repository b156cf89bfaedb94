"""UpdateJob (PATCH) semantics: apply a request body to a stored job under an update mask.

Pure functions of (stored job, body, mask); the API layer adds the lookup, ``userUpdateTime``
and ``scheduleTime``. The rules:

- **The mask governs**. Each path names a field; the field is replaced by the body's
  value, or cleared to its default when the body lacks it (the value the codec gives an absent
  field: ``""``, ``0``, empty map, the default retry config, no message); fields off the mask
  keep their stored value, whatever the body says. gcloud relies on this: its body is full of
  defaults while its mask names only the flags used.
- **Paths** are comma-separated (URL-decoded or not) or a list, camelCase (REST) or snake_case
  (gRPC), segment by segment; ``*`` alone replaces every settable field. A path to a field
  inside a message (``httpTarget.oidcToken.audience``) changes only that field; the message is
  created if the body has it and the job does not, and a token or App Engine routing left with
  every field empty is removed (so gcloud's ``--clear-auth-token`` removes the token).
- **One target** (oneof): setting one target, or a token of an HTTP target, removes the other.
- **No mask** (absent, empty, ``[]``): every field present in the body is applied, down to
  nested fields (our pinned rule; Google documents none).
- **Header edits** (our pinned rule, for gcloud's ``--update-headers``): a map in the body with a
  JSON ``null`` value is an edit of the stored map — ``null`` deletes the entry, other entries are
  added or replace the stored one (header names match case-insensitively, Pub/Sub attribute names
  exactly); a map without ``null`` replaces the stored map.
- The result goes through the create path (``with_defaults`` + ``validate_job``); the stored
  job's name and output-only fields are kept.

Worked example — ``gcloud scheduler jobs update http nightly --schedule="0 4 * * *"`` sends
the flag defaults too, but only ``schedule`` changes::

    >>> from scheduler_emulator.domain.codec import job_from_json
    >>> job = job_from_json({
    ...     "name": "projects/demo-project/locations/us-central1/jobs/nightly",
    ...     "schedule": "0 3 * * *", "timeZone": "Europe/Berlin",
    ...     "httpTarget": {"uri": "https://svc.example/run"},
    ...     "retryConfig": {"retryCount": 3},
    ... })
    >>> body = {
    ...     "name": "projects/demo-project/locations/us-central1/jobs/nightly",
    ...     "schedule": "0 4 * * *", "timeZone": "Etc/UTC",
    ...     "httpTarget": {"httpMethod": "POST"},
    ...     "retryConfig": {"maxBackoffDuration": "3600s", "maxDoublings": 5,
    ...                     "minBackoffDuration": "5s", "retryCount": 0},
    ... }
    >>> updated = apply_update(job, body, "schedule")
    >>> updated.schedule, updated.time_zone, updated.retry_config.retry_count
    ('0 4 * * *', 'Europe/Berlin', 3)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote

from .codec import (
    MESSAGE_FIELDS,
    camel_case,
    default_message,
    json_fields,
    normalise_job,
    parse_job,
)
from .errors import InvalidArgument, show_value
from .resources import Job

__all__ = ["apply_update", "parse_update_mask"]

#: Job fields a mask may name but that an update never changes: the name (the URL names the
#: job) — besides every output-only field.
_IGNORED_JOB_FIELDS = frozenset({"name"})
#: String maps that a body with ``null`` values edits instead of replacing, by message
#: type and field; ``True`` when keys match case-insensitively (HTTP header names).
_MAP_FIELDS: Mapping[tuple[str, str], bool] = MappingProxyType(
    {
        ("HttpTarget", "headers"): True,
        ("AppEngineHttpTarget", "headers"): True,
        ("PubsubTarget", "attributes"): False,
    }
)
#: Optional messages removed when paths inside them leave every field empty (tokens, routing).
_DROPPED_WHEN_EMPTY = frozenset({"OidcToken", "OAuthToken", "AppEngineRouting"})
#: The full-replacement path (AIP-134).
_WILDCARD = "*"

#: Where a lowerCamel JSON name takes an underscore in its proto (snake_case) name.
_SNAKE = re.compile(r"(?<=[a-z0-9])([A-Z])")

# A mask as a tree: proto field name → subtree; an empty subtree means the whole field.
_Tree = dict[str, "_Tree"]


def _mask_error(path: str, reason: str) -> InvalidArgument:
    """Google's message for a path UpdateJob does not know (``Invalid mask for Job: <path>``),
    with a field violation on ``updateMask`` that says why."""
    shown = path if len(path) <= 80 else path[:79] + "…"  # (a 100,000-character path, too)
    return InvalidArgument(
        f"Invalid mask for Job: {shown}",
        field="updateMask",
        description=f'updateMask has an unknown field path "{shown}": {reason}',
    )


def _resolve(path: str, proto_names: bool) -> tuple[str, ...] | None:
    """Turn one mask path into proto field names, or ``None`` when the path is ignored."""
    if path == _WILDCARD:
        return (_WILDCARD,)
    type_name: str | None = "Job"
    resolved: list[str] = []
    segments = path.split(".")
    # Named as the backend sees it: Google's front end hands it a REST mask's lowerCamel
    # segments in proto names (snake_case, converted by rule), so both surfaces name it alike.
    shown = [
        s if proto_names or not s[:1].islower() else _SNAKE.sub(r"_\1", s).lower() for s in segments
    ]
    for index, segment in enumerate(segments):
        path = ".".join(resolved + shown[index:])
        if type_name is None:
            raise _mask_error(path, f"{'.'.join(resolved)} is not a message, so it has no fields.")
        if not segment:
            raise _mask_error(path, "it has an empty segment.")
        schema = MESSAGE_FIELDS[type_name]
        fields = schema.settable + schema.output_only
        by_spelling = {camel_case(name): name for name in fields if not proto_names}
        by_spelling.update((name, name) for name in fields)
        name = by_spelling.get(segment)
        if name is None:
            note = (
                " (over gRPC a FieldMask names proto fields: snake_case)"
                if proto_names and segment.lower() != segment
                else ""
            )
            named = show_value(shown[index])  # (at most 80 characters of a huge one)
            raise _mask_error(
                path, f"{type_name} has no field {named}{note}; it has {', '.join(fields)}."
            )
        if name in schema.output_only or (type_name == "Job" and name in _IGNORED_JOB_FIELDS):
            return None  # output only: "any value specified … will be ignored"
        resolved.append(name)
        type_name = schema.message_type(name)
    return tuple(resolved)


def parse_update_mask(
    update_mask: str | Sequence[str] | None, *, proto_names: bool = False
) -> tuple[str, ...] | None:
    """Normalise an ``updateMask`` to the proto field paths an update changes.

    Paths are split on commas (a list's items too) after percent-decoding, stripped of
    whitespace, and resolved segment by segment, each in camelCase (``httpTarget.oidcToken``)
    or snake_case (``http_target.oidc_token``) — or, with ``proto_names``, in snake_case only,
    as Google's gRPC surface reads a ``FieldMask`` (its REST surface takes the JSON spelling,
    converting it to the proto one, so a snake_case path passes there unchanged). Paths naming
    ``name`` or an output-only field
    (``state``, ``status``, ``scheduleTime``, ``lastAttemptTime``, ``userUpdateTime``,
    ``appEngineHttpTarget.appEngineRouting.host``) are dropped: an update never changes them.
    The result is sorted and minimal: duplicates and paths under another path go.

    :param update_mask: the ``updateMask`` query value (``"schedule,httpTarget.uri"``,
        ``"schedule%2ChttpTarget.uri"``) or a list of paths (gRPC: ``["schedule",
        "http_target.uri"]``); ``None``, ``""`` and ``[]`` mean "no mask".
    :param proto_names: accept only proto (snake_case) field names (a gRPC ``FieldMask``).
    :raises InvalidArgument: ``Invalid mask for Job: <path>`` (Google's message) with
        ``field="updateMask"`` for a path that names no field (an
        unknown name, an empty segment, a path below a non-message field such as
        ``httpTarget.headers.X-A``, or ``*`` anywhere but alone); the message names the path
        and lists the fields that exist at that level.
    :return: dotted snake_case paths, e.g. ``("http_target.uri", "schedule")``; ``("*",)`` for
        the wildcard; ``()`` when every path was ignored; ``None`` when the mask has no paths at
        all (the caller then applies every field present in the body).
    """
    if update_mask is None:
        return None
    items = [update_mask] if isinstance(update_mask, str) else list(update_mask)
    raw_paths = [
        part.strip() for item in items for part in unquote(item).split(",") if part.strip()
    ]
    if not raw_paths:
        return None
    resolved = {path for raw in raw_paths if (path := _resolve(raw, proto_names)) is not None}
    if (_WILDCARD,) in resolved:
        return (_WILDCARD,)
    minimal = [
        path
        for path in resolved
        if not any(path[: len(other)] == other for other in resolved if len(other) < len(path))
    ]
    return tuple(sorted(".".join(path) for path in minimal))


def _tree(paths: tuple[str, ...]) -> _Tree:
    tree: _Tree = {}
    for path in paths:
        node = tree
        for segment in path.split("."):
            node = node.setdefault(segment, {})
    return tree


def _whole(type_name: str) -> _Tree:
    """The tree that replaces every settable field of a message."""
    skip = _IGNORED_JOB_FIELDS if type_name == "Job" else frozenset()
    return {name: {} for name in MESSAGE_FIELDS[type_name].settable if name not in skip}


def _present(raw: Mapping[str, Any], type_name: str) -> _Tree:
    """The implied mask of a PATCH without one: every field present in the body, down to nested
    fields, as proto's merge: a scalar, enum, map or list at its proto3 default (``""``, ``0``,
    ``false``, ``{}``, ``[]``, ``HTTP_METHOD_UNSPECIFIED``) is not present — proto3 keeps no
    presence for it, so neither a gRPC request nor Google's REST front end, which parses JSON
    into the proto, carries it — and a message that sets nothing inside sets nothing (trial 155:
    ``{"retryConfig": {"retryCount": 0}}`` reset the whole retry config)."""
    schema = MESSAGE_FIELDS[type_name]
    tree: _Tree = {}
    for name, value in raw.items():
        if type_name == "Job" and name in _IGNORED_JOB_FIELDS:
            continue
        child_type = schema.message_type(name)
        if child_type is not None and (child := _present(value, child_type)):
            tree[name] = child
        elif child_type is None and value not in ("", 0, [], {}, "HTTP_METHOD_UNSPECIFIED"):
            tree[name] = {}
    return tree


def _edit_map(
    stored: Mapping[str, str], edits: Mapping[str, str | None], case_insensitive: bool
) -> Mapping[str, str]:
    """Edit a stored map: ``null`` deletes an entry, any other value adds it or replaces the
    stored one."""
    fold = str.lower if case_insensitive else str
    result = dict(stored)
    for key, value in edits.items():
        result = {k: v for k, v in result.items() if fold(k) != fold(key)}
        if value is not None:
            result[key] = value
    return MappingProxyType(result)


def _apply(tree: _Tree, stored: Any, body: Any, raw: Mapping[str, Any], type_name: str) -> Any:
    """Return ``stored`` (a resource dataclass) with the fields of ``tree`` taken from ``body``.

    ``body`` is the parsed body message (defaults where the JSON had nothing) and ``raw`` its
    JSON keyed by proto name (:func:`~scheduler_emulator.domain.codec.json_fields`), which keeps the
    ``null`` map values that parsing drops.
    """
    schema = MESSAGE_FIELDS[type_name]
    changes: dict[str, Any] = {}
    for name, subtree in tree.items():
        child_type = schema.message_type(name)
        old, new, raw_child = getattr(stored, name), getattr(body, name), raw.get(name)
        if child_type is None:
            case_insensitive = _MAP_FIELDS.get((type_name, name))
            if (
                case_insensitive is not None
                and isinstance(raw_child, Mapping)
                and any(value is None for value in raw_child.values())
            ):
                new = _edit_map(old, raw_child, case_insensitive)
            changes[name] = new
            continue
        if not subtree:  # the whole message: the body's, or none
            if new is not None:
                base = old if old is not None else default_message(child_type)
                new = _apply(_whole(child_type), base, new, raw_child or {}, child_type)
            changes[name] = new
            continue
        if old is None and new is None:
            continue  # nothing to change inside a message neither side has
        empty = default_message(child_type)
        child = _apply(
            subtree,
            old if old is not None else empty,
            new if new is not None else empty,
            raw_child or {},
            child_type,
        )
        if child_type in _DROPPED_WHEN_EMPTY and child == empty:
            child = None
        changes[name] = child
    for group in schema.oneofs:
        chosen = [name for name in group if changes.get(name) is not None]
        if len(chosen) == 1:  # setting one member clears the others; two are left to validation
            changes.update({name: None for name in group if name != chosen[0]})
    return replace(stored, **changes) if changes else stored


def _check_oneofs(job: Job) -> None:
    """A body may set at most one target and one token, whatever the mask."""
    targets = [
        camel_case(name)
        for name in ("http_target", "app_engine_http_target", "pubsub_target")
        if getattr(job, name) is not None
    ]
    if len(targets) > 1:
        raise InvalidArgument(
            f"A job needs exactly one target; got {' and '.join(targets)}.", field="target"
        )
    http = job.http_target
    if http is not None and http.oidc_token is not None and http.oauth_token is not None:
        raise InvalidArgument(
            "httpTarget can have oidcToken or oauthToken, not both.",
            field="httpTarget.oauthToken",
        )


def apply_update(job: Job, body: Mapping[str, Any], update_mask: str | Sequence[str] | None) -> Job:
    """Return ``job`` updated by a PATCH ``body`` under ``update_mask``.

    The module docstring states the rules. Choices where Google documents nothing:

    - Mask paths naming ``name`` or an output-only field (``state``, ``status``,
      ``scheduleTime``, ``lastAttemptTime``, ``userUpdateTime``, ``appEngineRouting.host``) are
      ignored, like output-only fields in the body ("Output only fields cannot be modified
      using UpdateJob. Any value specified for an output only field will be ignored.", Google's
      reference). A
      mask made only of such paths changes nothing (it is not "no mask").
    - The whole body is parsed, so an unknown field or a badly typed value anywhere, or two
      targets (or two tokens) in the body, is an error even off the mask, as on create.
    - The ``null`` edit of a map also applies when the map comes in with its whole message
      (``httpTarget``) or without a mask, and to ``appEngineHttpTarget.headers`` and
      ``pubsubTarget.attributes`` (names matched exactly).

    :param job: the stored job: valid, defaulted, with its output-only fields. Not changed.
    :param body: the PATCH JSON body, a Job as
    :func:`~scheduler_emulator.domain.codec.job_from_json`
        accepts it (camelCase or snake_case keys, enum names or integers); ``name`` and
        output-only fields in it are ignored. Not changed.
    :param update_mask: the ``updateMask`` query value or a list of paths, as accepted by
        :func:`parse_update_mask`; ``None``, ``""`` or ``[]`` apply every field present in the
        body.
    :raises InvalidArgument: for an unknown field or a badly typed value in ``body`` (the
        codec's error, as on create); for two targets or two tokens in ``body``; for an unknown
        mask path (``field="updateMask"``); or when the updated job breaks a rule of
        :func:`~scheduler_emulator.domain.validation.validate_job` (e.g. ``httpTarget.uri is
        required.`` when ``httpTarget.uri`` is masked but absent from the body).
    :return: a new job: :func:`~scheduler_emulator.domain.resources.with_defaults` applied and
        validated, with ``job``'s name and output-only fields (``state``, ``status``,
        ``scheduleTime``, ``lastAttemptTime``, ``userUpdateTime``, unchanged: the caller sets
        the last two); ``job`` itself for a mask of ignored paths only, or no mask and a body
        that sets nothing.
    """
    parsed = parse_job(body)
    raw = json_fields(body)
    _check_oneofs(parsed)
    paths = parse_update_mask(update_mask)
    if paths is None:
        tree = _present(raw, "Job")
        if not tree:  # a body that sets nothing: nothing changes, ``userUpdateTime`` included
            return job
    elif paths == (_WILDCARD,):
        tree = _whole("Job")
    else:
        tree = _tree(paths)
        if not tree:  # only ignored paths: ``job`` itself, unchanged
            return job
    return normalise_job(_apply(tree, job, parsed, raw, "Job"))
