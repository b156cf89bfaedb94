"""Google's system parameters the front ends honour: the response field mask (``fields``,
``$fields``, the ``X-Goog-FieldMask`` header, the ``x-goog-fieldmask`` gRPC metadata) and
``X-HTTP-Method-Override`` (https://cloud.google.com/apis/docs/system-parameters).

A field mask selects parts of an answer: a comma-separated list of field paths, ``/`` or
``.`` between levels, ``name(sub,fields)`` for several fields under one name and ``*`` for
every field; a selection applies to every element of a list (``jobs(name,state),nextPageToken``,
``jobs/name``, ``jobs.name``). Fields may be named in camelCase or snake_case; a field the
answer does not have is left out. Errors are never filtered. A malformed selection is
INVALID_ARGUMENT naming the parameter and the value::

    >>> select_fields({"jobs": [{"name": "a", "state": "ENABLED"}], "nextPageToken": "2"},
    ...               parse_fields("jobs/name"))
    {'jobs': [{'name': 'a'}]}
"""

from __future__ import annotations

from typing import Any

from werkzeug.wrappers import Request

from ..domain.codec import camel_case, show_value
from ..domain.errors import InvalidArgument

#: Methods ``X-HTTP-Method-Override`` may turn a POST into.
OVERRIDABLE_METHODS = frozenset({"GET", "PATCH", "PUT", "DELETE", "POST"})
#: Where a REST request may carry its field mask: query parameters, then the header.
REST_FIELD_MASK_PARAMETERS = ("fields", "$fields")
REST_FIELD_MASK_HEADER = "X-Goog-FieldMask"
#: The gRPC metadata key of the field mask (system parameters are lower-case over gRPC).
GRPC_FIELD_MASK_METADATA = "x-goog-fieldmask"
#: The name standing for every field at its level.
ALL_FIELDS = "*"
#: The deepest a field selection's parentheses nest (a Job's fields nest four deep).
MAX_FIELD_DEPTH = 32

Selection = dict[str, "Selection | None"]


def parse_fields(text: str, parameter: str = "fields") -> Selection | None:
    """Parse a field mask into a tree: field name (camelCase) → sub-selection (``None``: all of
    it); ``None`` for an empty mask or ``*`` (the whole answer).

    :param text: the mask as sent.
    :param parameter: the name the request gave it, for the error.
    :raises InvalidArgument: (``field=parameter``) for unbalanced parentheses, parentheses
        nested deeper than :data:`MAX_FIELD_DEPTH`, or an empty name.
    """
    if not text.strip():
        return None
    position = 0

    def fail(reason: str) -> InvalidArgument:
        return InvalidArgument(
            f"Invalid field selection {show_value(text)}: {reason}.", field=parameter
        )

    def parse_list(depth: int = 1) -> Selection:
        nonlocal position
        if depth > MAX_FIELD_DEPTH:  # (trial 181: 1,000 levels ran out of stack, a 500)
            raise fail(f"parentheses nested deeper than {MAX_FIELD_DEPTH}")
        tree: Selection = {}
        while True:
            start = position
            while position < len(text) and text[position] not in ",()":
                position += 1
            names = [n.strip() for n in text[start:position].replace(".", "/").split("/")]
            if not all(names):
                raise fail(f"empty field name at position {start}")
            sub: Selection | None = None
            if position < len(text) and text[position] == "(":
                position += 1
                sub = parse_list(depth + 1)
                if position >= len(text) or text[position] != ")":
                    raise fail("a '(' is not closed")
                position += 1
            node = tree
            for name in names[:-1]:
                child = node.get(camel_case(name))
                if child is None:
                    child = node[camel_case(name)] = {}
                node = child
            node[camel_case(names[-1])] = sub
            if position < len(text) and text[position] == ",":
                position += 1
                continue
            return tree

    tree = parse_list()
    if position != len(text):
        raise fail(f"unexpected {text[position]!r} at position {position}")
    return None if tree == {ALL_FIELDS: None} else tree


def rest_field_mask(request: Request) -> Selection | None:
    """The field mask of a REST request (``fields``, ``$fields`` or ``X-Goog-FieldMask``),
    parsed; ``None`` when it asks for the whole answer.

    :raises InvalidArgument: for a malformed mask, or two of them that differ (naming both).
    """
    args, headers = request.args, request.headers
    given = [(name, args[name]) for name in REST_FIELD_MASK_PARAMETERS if name in args]
    if REST_FIELD_MASK_HEADER in headers:
        given.append((REST_FIELD_MASK_HEADER, headers[REST_FIELD_MASK_HEADER]))
    if not given:
        return None
    (first, text), *others = given
    tree = parse_fields(text, first)
    for other, other_text in others:  # (compared parsed: jobs(name) is jobs.name)
        if parse_fields(other_text, other) != tree:
            raise InvalidArgument(
                f"{first} {show_value(text)} and {other} {show_value(other_text)} ask for "
                "different fields; send the field mask once.",
                field=other,
            )
    return tree


def grpc_field_mask(metadata: Any) -> Selection | None:
    """The field mask of a gRPC call's ``x-goog-fieldmask`` metadata, parsed (``None``: none).

    :param metadata: the call's invocation metadata (``(key, value)`` pairs).
    :raises InvalidArgument: for a malformed mask.
    """
    for key, value in metadata or ():
        if key == GRPC_FIELD_MASK_METADATA:
            return parse_fields(value, GRPC_FIELD_MASK_METADATA)
    return None


def select_fields(payload: Any, tree: Selection | None) -> Any:
    """Return the parts of ``payload`` (a JSON value) that ``tree`` selects; all of it for
    ``None``."""
    if tree is None:
        return payload
    if isinstance(payload, list):
        return [select_fields(item, tree) for item in payload]
    if isinstance(payload, dict):
        every = ALL_FIELDS in tree
        return {
            key: select_fields(value, tree.get(key, tree.get(ALL_FIELDS)))
            for key, value in payload.items()
            if every or key in tree
        }
    return payload


def select_message_fields(message: Any, tree: Selection | None) -> Any:
    """Return a copy of the protobuf ``message`` holding only the fields ``tree`` selects
    (matched by their JSON names, as over REST); ``message`` itself for ``None``."""
    if tree is None:
        return message
    copy = type(message)()
    copy.CopyFrom(message)
    _prune(copy, tree)
    return copy


def _prune(message: Any, tree: Selection) -> None:
    every = ALL_FIELDS in tree
    for field, value in message.ListFields():
        if not every and field.json_name not in tree:
            message.ClearField(field.name)
            continue
        sub = tree.get(field.json_name, tree.get(ALL_FIELDS))
        if sub is None or field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            for key in [k for k in value if k not in sub and ALL_FIELDS not in sub]:
                del value[key]
        elif hasattr(value, "DESCRIPTOR"):  # one message
            _prune(value, sub)
        else:  # a repeated field of messages
            for item in value:
                _prune(item, sub)
