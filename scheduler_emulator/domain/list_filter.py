"""List filters in Google's filtering language (AIP-160, https://google.aip.dev/160), over a
resource's REST JSON: what ListLocations' ``filter`` takes
(https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations/list).

A filter is restrictions ``field OP value`` joined by ``AND``, ``OR`` (which binds tighter, so
``a AND b OR c`` is ``a AND (b OR c)``), juxtaposition (an ``AND``), ``NOT`` or ``-`` and
parentheses. ``OP`` is ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` or ``:`` (has). A field is
named in camelCase or snake_case; ``.`` traverses a map (``labels.env``; a key with dots,
``labels.cloud.googleapis.com/region``, may be written bare or quoted). Values are bare words
or quoted strings; ``=``, ``!=`` and ``:`` compare without regard to case (Google's own
example ``displayName=tokyo`` matches ``Tokyo``) and take ``*`` at either end as a wildcard.
``m:key`` and ``m.key:*`` ask whether a map has a key. A bare word with no field matches a
resource having it inside any of its string values::

    >>> keep = parse_filter('labels."cloud.googleapis.com/region" = europe-* AND NOT name:*west1',
    ...                     ("name", "labels"))
    >>> keep({"name": "projects/p/locations/europe-north1",
    ...       "labels": {"cloud.googleapis.com/region": "europe-north1"}})
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .codec import camel_case, show_value
from .errors import InvalidArgument

__all__ = ["MAX_FILTER_CHARS", "Predicate", "parse_filter"]

#: The longest filter taken, in characters; deeper nesting than :data:`_MAX_DEPTH` is refused.
MAX_FILTER_CHARS = 4096
_MAX_DEPTH = 32

Predicate = Callable[[Mapping[str, Any]], bool]

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op><=|>=|!=|=|<|>|:)
    | (?P<paren>[()])
    | (?P<text>[^\s()=!<>:"']+)
    )""",
    re.VERBOSE | re.DOTALL,
)
_COMPARE: dict[str, Callable[[str, str], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _matches(actual: str, pattern: str) -> bool:
    """Case-insensitive equality, ``*`` at either end of ``pattern`` a wildcard."""
    actual, pattern = actual.casefold(), pattern.casefold()
    if pattern == "*":
        return bool(actual)
    if pattern.startswith("*") and pattern.endswith("*"):
        return pattern[1:-1] in actual
    if pattern.startswith("*"):
        return actual.endswith(pattern[1:])
    if pattern.endswith("*"):
        return actual.startswith(pattern[:-1])
    return actual == pattern


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in _strings(item)]
    return []


def parse_filter(text: str, fields: Sequence[str], *, field: str = "filter") -> Predicate:
    """Compile a filter into a predicate over a resource's REST JSON.

    :param text: the filter; blank keeps everything.
    :param fields: the camelCase fields a filter may name (the resource's).
    :param field: the request field the filter came in, for errors.
    :return: a function of one resource's JSON (camelCase keys) → kept or not.
    :raises InvalidArgument: (naming ``field``) for a filter longer than
        :data:`MAX_FILTER_CHARS`, malformed, nested too deeply, or naming a field not in
        ``fields``; the message names the filter and what is wrong.
    """

    def fail(reason: str) -> InvalidArgument:
        return InvalidArgument(f"Invalid filter {show_value(text)}: {reason}.", field=field)

    if len(text) > MAX_FILTER_CHARS:
        raise fail(f"longer than {MAX_FILTER_CHARS} characters")
    tokens: list[tuple[str, str]] = []
    position = 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        if match is None:
            raise fail(f"unexpected {text[position:].lstrip()[:1]!r}")
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "string":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        tokens.append((kind, value))
        position = match.end()
    at = 0

    def peek() -> tuple[str, str]:
        return tokens[at] if at < len(tokens) else ("end", "")

    def take() -> tuple[str, str]:
        nonlocal at
        token = peek()
        at += 1
        return token

    def expression(depth: int) -> Predicate:  # sequence (AND sequence)*
        if depth > _MAX_DEPTH:
            raise fail(f"nested more than {_MAX_DEPTH} deep")
        parts = [sequence(depth)]
        while peek() == ("text", "AND"):
            take()
            parts.append(sequence(depth))
        return parts[0] if len(parts) == 1 else lambda r: all(p(r) for p in parts)

    def sequence(depth: int) -> Predicate:  # factor factor*: juxtaposition is AND
        parts = [factor(depth)]
        while peek() not in (("text", "AND"), ("text", "OR"), ("paren", ")")) and at < len(tokens):
            parts.append(factor(depth))
        return parts[0] if len(parts) == 1 else lambda r: all(p(r) for p in parts)

    def factor(depth: int) -> Predicate:  # term (OR term)*
        parts = [term(depth)]
        while peek() == ("text", "OR"):
            take()
            parts.append(term(depth))
        return parts[0] if len(parts) == 1 else lambda r: any(p(r) for p in parts)

    def term(depth: int) -> Predicate:
        kind, value = peek()
        negate = kind == "text" and (value == "NOT" or (value.startswith("-") and value != "-"))
        if negate:
            if value == "NOT":
                take()
            else:
                tokens[at] = (kind, value[1:])
        inner = simple(depth)
        return (lambda r: not inner(r)) if negate else inner

    def simple(depth: int) -> Predicate:
        kind, value = take()
        if (kind, value) == ("paren", "("):
            inner = expression(depth + 1)
            if take() != ("paren", ")"):
                raise fail("a '(' is not closed")
            return inner
        if kind not in ("text", "string") or value in ("AND", "OR", "NOT"):
            raise fail("a restriction is missing" if kind == "end" else f"unexpected {value!r}")
        member = value
        while kind == "text" and member.endswith(".") and peek()[0] == "string":
            member += take()[1]  # labels."cloud.googleapis.com/region"
        if peek()[0] != "op":
            needle = member.casefold()
            return lambda r: any(needle in s.casefold() for s in _strings(r))
        operator = take()[1]
        arg_kind, arg = take()
        if arg_kind not in ("text", "string"):
            raise fail(f"{member} {operator} has no value")
        return restriction(member, operator, arg)

    def restriction(member: str, operator: str, arg: str) -> Predicate:
        name, _, key = member.partition(".")
        name = camel_case(name)
        if name not in fields:
            raise fail(f"unknown field {name!r}; a filter may name {', '.join(fields)}")
        key = key.strip("\"'") if key else ""

        def value_of(resource: Mapping[str, Any]) -> Any:
            value = resource.get(name)
            if key:
                return value.get(key) if isinstance(value, Mapping) else None
            return value

        def keep(resource: Mapping[str, Any]) -> bool:
            value = value_of(resource)
            if isinstance(value, Mapping):  # a map itself: only ``m:key`` asks anything
                return operator == ":" and arg in value
            actual = "" if value is None else str(value)
            if operator in ("=", ":"):
                return _matches(actual, arg)
            if operator == "!=":
                return not _matches(actual, arg)
            return value is not None and _COMPARE[operator](actual, arg)

        return keep

    predicate = (lambda r: True) if not tokens else expression(0)
    if at < len(tokens):
        raise fail(f"unexpected {tokens[at][1]!r}")
    return predicate
