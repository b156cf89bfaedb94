"""Google's REST front-end conveniences the clients rely on: ``fields=`` partial responses and
``X-HTTP-Method-Override``.

``fields`` selects parts of a JSON response: a comma-separated list of field paths, ``/``
between levels, and ``name(sub,fields)`` for several fields under one name; a selection
applies to every element of a list (``fields=jobs(name,state),nextPageToken``,
``fields=jobs/name``). Fields may be named in camelCase or snake_case. Errors are never
filtered. A malformed selection is a 400 naming the parameter and the value::

    >>> select_fields({"jobs": [{"name": "a", "state": "ENABLED"}], "nextPageToken": "2"},
    ...               "jobs/name")
    {'jobs': [{'name': 'a'}]}
"""

from __future__ import annotations

from typing import Any

from ..domain.codec import camel_case, show_value
from ..domain.errors import InvalidArgument

#: Methods ``X-HTTP-Method-Override`` may turn a POST into.
OVERRIDABLE_METHODS = frozenset({"GET", "PATCH", "PUT", "DELETE", "POST"})

Selection = dict[str, "Selection | None"]


def _error(text: str, reason: str) -> InvalidArgument:
    return InvalidArgument(
        f"Invalid field selection {show_value(text)}: {reason}.",
        field="fields",
    )


def parse_fields(text: str) -> Selection:
    """Parse a ``fields`` value into a tree: field name → sub-selection (``None``: all of it).

    :raises InvalidArgument: (``field="fields"``) for unbalanced parentheses or an empty name.
    """
    position = 0

    def parse_list() -> Selection:
        nonlocal position
        tree: Selection = {}
        while True:
            start = position
            while position < len(text) and text[position] not in ",()":
                position += 1
            path = text[start:position].strip()
            names = path.split("/")
            if not path or not all(n.strip() for n in names):
                raise _error(text, f"empty field name at position {start}")
            sub: Selection | None = None
            if position < len(text) and text[position] == "(":
                position += 1
                sub = parse_list()
                if position >= len(text) or text[position] != ")":
                    raise _error(text, "a '(' is not closed")
                position += 1
            node = tree
            for name in names[:-1]:
                child = node.get(camel_case(name.strip()))
                if child is None:
                    child = {}
                    node[camel_case(name.strip())] = child
                node = child
            node[camel_case(names[-1].strip())] = sub
            if position < len(text) and text[position] == ",":
                position += 1
                continue
            return tree

    tree = parse_list()
    if position != len(text):
        raise _error(text, f"unexpected {text[position]!r} at position {position}")
    return tree


def _select(value: Any, tree: Selection | None) -> Any:
    if tree is None:
        return value
    if isinstance(value, list):
        return [_select(item, tree) for item in value]
    if isinstance(value, dict):
        return {key: _select(value[key], sub) for key, sub in tree.items() if key in value}
    return value


def select_fields(payload: Any, fields: str) -> Any:
    """Return the parts of ``payload`` (a JSON value) that ``fields`` selects; all of it for an
    empty ``fields``.

    :raises InvalidArgument: for a malformed selection (see :func:`parse_fields`).
    """
    if not fields.strip():
        return payload
    return _select(payload, parse_fields(fields))
