"""Reading a request's JSON body for the REST API and the ``/_emulator/`` endpoints.

One place decides what a body that is not a JSON object gets: 400 ``INVALID_ARGUMENT``, never a
5xx — including bodies nested so deeply that the JSON parser gives up — and what a body sent
without a JSON content type gets: 415, whatever it holds (gcloud and the client libraries send
``application/json``; a cross-site ``text/plain`` POST from a web page is refused).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request

from ..domain.codec import refuse_lone_surrogates
from ..domain.errors import InvalidArgument
from ..domain.numbers import parse_float, parse_int, refuse_unbounded_numbers

__all__ = [
    "UnsupportedMediaType",
    "is_json_type",
    "request_json",
]


class UnsupportedMediaType(InvalidArgument):
    """415: a request body that is not sent as JSON (``Content-Type`` not ``application/json``
    or ``…+json``)."""

    http_status = 415


def is_json_type(mimetype: str) -> bool:
    """Tell whether a media type (lowercase, without parameters) is JSON: ``application/json``
    or a ``+json`` type.

    >>> is_json_type("application/json"), is_json_type("text/plain")
    (True, False)
    """
    return mimetype == "application/json" or (
        mimetype.startswith("application/") and mimetype.endswith("+json")
    )


class DuplicateKey(ValueError):
    """A JSON object names one key twice."""


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: refuse an object that names a key twice. Python's parser keeps the
    last; protobuf's JSON parser (Google's front end) refuses it, as its conformance suite
    recommends (``JsonInput.FieldNameDuplicate``).

    :raises DuplicateKey: naming the key.
    """
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f"Duplicate field {json.dumps(key)}")
            seen.add(key)
    return data


def request_json(request: Request, *, allow_fields: frozenset[str] | None = None) -> dict[str, Any]:
    """Decode the request body as a JSON object; an empty body is ``{}``.

    :param allow_fields: the only keys allowed in the object (the ``:pause``/``:resume``/``:run``
        bodies may carry only ``name``); ``None`` allows any key.
    :raises RequestEntityTooLarge: for a chunked body that reaches the request's
        ``max_content_length`` (one with a ``Content-Length`` past it is refused unread).
    :raises UnsupportedMediaType: for a ``Content-Type`` that is not JSON, even with an empty
        body (a browser sends text/plain and form bodies across sites without asking), or a
        ``Content-Encoding`` (gzip…): bodies are read uncompressed.
    :raises InvalidArgument: for a body that is not JSON, not an object, nested too deeply,
        naming a key twice in one object, holding a lone surrogate (``"\\ud800"``) in any key
        or string or a number out of range (:mod:`~scheduler_emulator.domain.numbers`), or that
        has a key not allowed.
    :return: the decoded object.
    """
    raw, limit = request.get_data(), request.max_content_length
    if limit is not None and request.content_length is None and len(raw) >= limit:
        raise RequestEntityTooLarge()  # a chunked body: werkzeug's stream ends at the limit
    if not raw.strip() and not request.mimetype:
        return {}
    if not is_json_type(request.mimetype):
        raise UnsupportedMediaType(
            f"The body must be JSON sent with Content-Type: application/json; got "
            f"{json.dumps(request.content_type or '(none)')}. (A browser can send text/plain "
            "across sites without asking, so only JSON is accepted.)",
            field="Content-Type",
        )
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("", "identity"):  # (trial 134: a gzip body read as bad UTF-8)
        raise UnsupportedMediaType(
            f"The body must be sent uncompressed; got Content-Encoding {json.dumps(encoding)}.",
            field="Content-Encoding",
        )
    if not raw.strip():
        return {}
    try:
        data = json.loads(
            raw, parse_int=parse_int, parse_float=parse_float, object_pairs_hook=no_duplicate_keys
        )
    except RecursionError:
        raise InvalidArgument(
            "Invalid JSON payload received. The body is nested too deeply."
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, UnicodeDecodeError):  # (not Python's codec wording)
            byte = exc.object[exc.start : exc.start + 1].hex()
            exc = ValueError(f"The body is not UTF-8: byte 0x{byte} at position {exc.start}")
        raise InvalidArgument(
            f"Invalid JSON payload received. {exc}.", description="The body is not valid JSON."
        ) from exc
    refuse_lone_surrogates(data)
    refuse_unbounded_numbers(data)
    if data == "":  # an empty message as Node's REST fallback sends it (google-gax: trial 56)
        data = {}
    if not isinstance(data, dict):
        kind = {str: "a string", list: "an array", bool: "true or false"}.get(type(data))
        raise InvalidArgument(
            "Invalid JSON payload received. Expected an object, got "
            f"{kind or ('null' if data is None else 'a number')}."
        )
    if allow_fields is not None:
        for key in data:
            if key not in allow_fields:
                near = difflib.get_close_matches(key, sorted(allow_fields), n=1)
                takes = ", ".join(sorted(allow_fields)) or "none"  # (trial 230: "minutes")
                raise InvalidArgument(
                    f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.',
                    field=key,
                    description=f'"{key}" is not a field of this body; '
                    + (f"did you mean {near[0]!r}?" if near else f"it takes {takes}."),
                )
    return data
