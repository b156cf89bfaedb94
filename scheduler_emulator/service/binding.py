"""Binding a timer's JSON body to its handler's payload parameter; pure functions.

The body is read as JSON whatever its ``Content-Type`` (Cloud Scheduler sends
``application/octet-stream`` unless the job sets another), then bound to the parameter's
annotation. Binding is strict, so a job that sends the wrong shape fails loudly instead of
running with half a payload:

- ``bool``, ``int``, ``float``, ``str``: the JSON type itself (``int`` takes no ``true``, no
  ``1.0`` and no ``"1"``; ``float`` takes any JSON number);
- ``list[T]``, ``tuple[T, ...]``, ``tuple[A, B]``, ``set[T]``, ``frozenset[T]``: a JSON array;
- ``dict[str, V]`` (and ``Mapping``): a JSON object;
- a dataclass: a JSON object keyed by the field names; an unknown key, a missing required field or
  a ``ValueError``/``TypeError`` from ``__post_init__`` is an error;
- a ``TypedDict``: a JSON object, with the same rules, bound to a ``dict``;
- a pydantic model (when pydantic is installed): ``Model.model_validate``, under the model's own
  configuration;
- ``X | None``, unions (first arm that binds wins), ``Literal``, ``Enum`` (by value),
  ``datetime``/``date`` (ISO 8601 strings), ``UUID``, ``Any``.

Every error is reported with its path from the parameter, so a 400 names what to fix::

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Order:
    ...     sku: str
    ...     quantity: int = 1
    >>> bind_body(b'{"sku": "A-1", "quantity": 2}', Order, "order")
    Order(sku='A-1', quantity=2)
    >>> try:
    ...     bind_body(b'{"quantity": "2", "colour": "red"}', Order, "order")
    ... except BindingError as error:
    ...     print(error.errors)
    {'order.colour': ["Order has no field 'colour'; its fields are sku, quantity."], \
'order.sku': ["Order requires the field 'sku'."], \
'order.quantity': ["Expected an integer, got the string '2'."]}
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections import abc
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict
from uuid import UUID

__all__ = [
    "BindingError",
    "NO_JSON_TOKENS",
    "bind",
    "bind_body",
    "check_bindable",
    "encode_payload",
    "parse_json",
    "type_name",
]

#: The message for an empty (or whitespace-only) body bound to a payload parameter.
NO_JSON_TOKENS = "The input does not contain any JSON tokens."

_NONE_TYPE = type(None)
_FAILED: Any = object()
_LIST_ORIGINS = (list, abc.Sequence, abc.MutableSequence, abc.Collection, abc.Iterable)
_SET_ORIGINS = (set, frozenset, abc.Set, abc.MutableSet)
_DICT_ORIGINS = (dict, abc.Mapping, abc.MutableMapping)
_SCALARS: dict[Any, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    datetime: "an ISO 8601 date-time string",
    date: "an ISO 8601 date string",
    UUID: "a UUID string",
}


class BindingError(ValueError):
    """A body that does not bind to a payload parameter; the route answers 400.

    :param errors: path from the parameter (``order``, ``order.items[0].sku``) → the messages
        for that path, one sentence each, in the order they were found.
    """

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors: dict[str, list[str]] = {path: list(msgs) for path, msgs in errors.items()}
        super().__init__(self.summary())

    def summary(self) -> str:
        """Return every error on one line: the message alone for the parameter itself,
        ``path: message`` for a part of it.

        :return: e.g. ``"order.quantity: Expected an integer, got the string '2'."``.
        """
        parts = [
            message if path.isidentifier() else f"{path}: {message}"
            for path, messages in self.errors.items()
            for message in messages
        ]
        return " ".join(parts)


# ------------------------------------------------------------------------------- descriptions


def type_name(tp: Any) -> str:
    """Return a short readable name for an annotation (``Order``, ``list[int]``, ``int | None``).

    :param tp: any annotation.
    :return: the name.
    """
    if isinstance(tp, type) and not get_args(tp):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _expected(tp: Any) -> str:
    if tp in _SCALARS:
        return _SCALARS[tp]
    return f"{type_name(tp)}"


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


# ------------------------------------------------------------------------------ classification


def _strip(tp: Any) -> Any:
    while True:
        if get_origin(tp) is typing.Annotated:
            tp = get_args(tp)[0]
        elif isinstance(tp, typing.NewType):
            tp = tp.__supertype__
        else:
            return tp


def _is_pydantic_model(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and callable(getattr(tp, "model_validate", None))
        and hasattr(tp, "model_fields")
    )


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _dataclass_fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.init]


def _unsupported(tp: Any, seen: set[Any]) -> str | None:
    """Return why ``tp`` cannot bind from JSON (naming the offending part), or ``None``."""
    tp = _strip(tp)
    if tp is Any or tp is object or tp is None or tp is _NONE_TYPE or tp in _SCALARS:
        return None
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union or origin is types.UnionType or origin is tuple:
        return next((r for r in (_unsupported(a, seen) for a in args if a is not ...) if r), None)
    if origin is Literal:
        bad = [a for a in args if not isinstance(a, str | int | bool) and a is not None]
        return f"Literal value {bad[0]!r} is not a JSON value" if bad else None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return None
    if tp in _LIST_ORIGINS or tp in _SET_ORIGINS or tp in _DICT_ORIGINS or tp is tuple:
        return None
    if origin in _LIST_ORIGINS or origin in _SET_ORIGINS:
        return _unsupported(args[0], seen) if args else None
    if origin in _DICT_ORIGINS:
        if args and _strip(args[0]) not in (str, Any):
            return f"{type_name(tp)} has keys of type {type_name(args[0])}; JSON keys are strings"
        return _unsupported(args[1], seen) if args else None
    if tp in seen:
        return None
    if is_typeddict(tp) or _is_dataclass_type(tp):
        seen.add(tp)
        try:
            hints = get_type_hints(tp)
        except Exception as exc:  # unresolvable forward references, mostly
            return f"the annotations of {type_name(tp)} do not resolve ({exc})"
        names = list(hints) if is_typeddict(tp) else [f.name for f in _dataclass_fields(tp)]
        for name in names:
            reason = _unsupported(hints[name], seen)
            if reason:
                return f"{type_name(tp)}.{name}: {reason}"
        return None
    if _is_pydantic_model(tp):
        return None
    return f"{type_name(tp)} is not a type a JSON value binds to"


def check_bindable(tp: Any) -> None:
    """Check at registration that a payload annotation can bind from JSON.

    :param tp: the payload parameter's resolved annotation.
    :raises TypeError: naming the part that cannot bind (e.g. ``Order.when: set[bytes]``...).
    """
    reason = _unsupported(tp, set())
    if reason:
        raise TypeError(reason)


# ------------------------------------------------------------------------------------ binding


def parse_json(body: bytes, path: str) -> Any:
    """Parse a request body as strict JSON (no ``NaN``/``Infinity``).

    :param body: the raw body; UTF-8 (UTF-16/32 and a BOM are detected too).
    :param path: the parameter's name, used as the error path.
    :raises BindingError: for an empty or whitespace-only body (:data:`NO_JSON_TOKENS`) or for
        text that is not JSON.
    :return: the parsed JSON value.
    """
    if not body.strip():
        raise BindingError({path: [NO_JSON_TOKENS]})

    def reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    try:
        return json.loads(body, parse_constant=reject_constant)
    except json.JSONDecodeError as exc:
        message = f"The body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
    except UnicodeDecodeError:
        message = "The body is not valid JSON: it is not UTF-8 text."
    except ValueError as exc:
        message = f"The body is not valid JSON: {exc}."
    raise BindingError({path: [message]})


def bind(value: Any, tp: Any, path: str) -> Any:
    """Bind a parsed JSON value to an annotation.

    :param value: a value as :func:`json.loads` returns it.
    :param tp: the annotation (see the module docstring for what binds).
    :param path: the parameter's name, the root of every error path.
    :raises BindingError: with every error found.
    :return: the bound value (a dataclass instance, a ``dict`` for a ``TypedDict``...).
    """
    errors: list[tuple[str, str]] = []
    result = _bind(value, tp, path, errors)
    if errors:
        grouped: dict[str, list[str]] = {}
        for where, message in errors:
            grouped.setdefault(where, []).append(message)
        raise BindingError(grouped)
    return result


def bind_body(body: bytes, tp: Any, path: str) -> Any:
    """Parse ``body`` as JSON and bind it to ``tp`` (:func:`parse_json` then :func:`bind`).

    :param body: the raw request body.
    :param tp: the payload parameter's annotation.
    :param path: the parameter's name.
    :raises BindingError: when the body is empty, not JSON, or does not bind.
    :return: the bound value.
    """
    return bind(parse_json(body, path), tp, path)


def _bind(value: Any, tp: Any, path: str, errors: list[tuple[str, str]]) -> Any:
    tp = _strip(tp)
    if tp is Any or tp is object:
        return value

    def fail(message: str, where: str = path) -> Any:
        errors.append((where, message))
        return _FAILED

    if tp is None or tp is _NONE_TYPE:
        return None if value is None else fail(f"Expected null, got {_describe(value)}.")
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union or origin is types.UnionType:
        return _bind_union(value, args, path, errors)
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in args):
            return value
        allowed = ", ".join(json.dumps(a) for a in args)
        return fail(f"Expected one of {allowed}, got {_describe(value)}.")
    if tp in _SCALARS:
        return _bind_scalar(value, tp, fail)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            allowed = ", ".join(json.dumps(m.value, default=str) for m in tp)
            return fail(f"Expected one of {allowed} ({tp.__name__}), got {_describe(value)}.")
    if tp is tuple or origin is tuple:
        return _bind_tuple(value, args, path, errors, fail)
    if (
        tp in _LIST_ORIGINS
        or origin in _LIST_ORIGINS
        or tp in _SET_ORIGINS
        or origin in _SET_ORIGINS
    ):
        if not isinstance(value, list):
            return fail(f"Expected an array, got {_describe(value)}.")
        item_type = args[0] if args else Any
        items = [_bind(item, item_type, _child(path, i), errors) for i, item in enumerate(value)]
        if any(item is _FAILED for item in items):
            return _FAILED
        if tp in _SET_ORIGINS or origin in _SET_ORIGINS:
            return frozenset(items) if (origin or tp) is frozenset else set(items)
        return items
    if tp in _DICT_ORIGINS or origin in _DICT_ORIGINS:
        if not isinstance(value, dict):
            return fail(f"Expected an object, got {_describe(value)}.")
        value_type = args[1] if args else Any
        bound = {k: _bind(v, value_type, _child(path, k), errors) for k, v in value.items()}
        return _FAILED if any(v is _FAILED for v in bound.values()) else bound
    if is_typeddict(tp):
        return _bind_typeddict(value, tp, path, errors, fail)
    if _is_dataclass_type(tp):
        return _bind_dataclass(value, tp, path, errors, fail)
    if _is_pydantic_model(tp):
        return _bind_pydantic(value, tp, path, errors)
    return fail(f"{type_name(tp)} is not a type a JSON value binds to.")


def _bind_scalar(value: Any, tp: Any, fail: Callable[[str], Any]) -> Any:
    expected = f"Expected {_SCALARS[tp]}, got {_describe(value)}."
    if tp is bool:
        return value if isinstance(value, bool) else fail(expected)
    if tp is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else fail(expected)
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if ok else fail(expected)
    if not isinstance(value, str):
        return fail(expected)
    if tp is str:
        return value
    parsers: dict[Any, Callable[[str], Any]] = {
        datetime: datetime.fromisoformat,
        date: date.fromisoformat,
        UUID: UUID,
    }
    parse = parsers[tp]
    try:
        return parse(value)
    except ValueError:
        return fail(expected)


def _bind_union(value: Any, args: tuple[Any, ...], path: str, errors: list[tuple[str, str]]) -> Any:
    if value is None and _NONE_TYPE in args:
        return None
    arms = [a for a in args if a is not _NONE_TYPE]
    if len(arms) == 1:
        return _bind(value, arms[0], path, errors)
    for arm in arms:
        attempt: list[tuple[str, str]] = []
        result = _bind(value, arm, path, attempt)
        if not attempt:
            return result
    expected = " or ".join(_expected(a) for a in args)
    errors.append((path, f"Expected {expected}, got {_describe(value)}."))
    return _FAILED


def _bind_tuple(
    value: Any,
    args: tuple[Any, ...],
    path: str,
    errors: list[tuple[str, str]],
    fail: Callable[[str], Any],
) -> Any:
    if not isinstance(value, list):
        return fail(f"Expected an array, got {_describe(value)}.")
    if not args or (len(args) == 2 and args[1] is ...):
        item_types = [args[0] if args else Any] * len(value)
    elif len(args) != len(value):
        return fail(f"Expected an array of {len(args)} items, got {len(value)}.")
    else:
        item_types = list(args)
    items = [
        _bind(v, t, _child(path, i), errors)
        for i, (v, t) in enumerate(zip(value, item_types, strict=True))
    ]
    return _FAILED if any(item is _FAILED for item in items) else tuple(items)


def _bind_fields(
    value: Any,
    cls: type,
    names: list[str],
    required: abc.Set[str],
    path: str,
    errors: list[tuple[str, str]],
    fail: Callable[..., Any],
) -> dict[str, Any] | None:
    """Bind an object's keys to a class's fields; ``None`` when anything failed."""
    if not isinstance(value, dict):
        fail(f"Expected an object ({cls.__name__}), got {_describe(value)}.")
        return None
    before = len(errors)
    hints = _hints(cls)
    for key in value:
        if key not in names:
            fail(
                f"{cls.__name__} has no field {key!r}; its fields are {', '.join(names)}.",
                _child(path, key),
            )
    bound: dict[str, Any] = {}
    for name in names:
        if name in value:
            bound[name] = _bind(value[name], hints[name], _child(path, name), errors)
        elif name in required:
            fail(f"{cls.__name__} requires the field {name!r}.", _child(path, name))
    return None if len(errors) > before else bound


def _bind_dataclass(
    value: Any, cls: type, path: str, errors: list[tuple[str, str]], fail: Callable[..., Any]
) -> Any:
    fields = _dataclass_fields(cls)
    required = {
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    bound = _bind_fields(value, cls, [f.name for f in fields], required, path, errors, fail)
    if bound is None:
        return _FAILED
    try:
        return cls(**bound)
    except (TypeError, ValueError) as exc:
        return fail(f"{cls.__name__} rejected the values: {exc}")


def _bind_typeddict(
    value: Any, cls: Any, path: str, errors: list[tuple[str, str]], fail: Callable[..., Any]
) -> Any:
    names = list(_hints(cls))
    required = _typeddict_required(cls)
    bound = _bind_fields(value, cls, names, required, path, errors, fail)
    return _FAILED if bound is None else bound


@functools.cache
def _typeddict_required(cls: Any) -> frozenset[str]:
    """The required keys, with ``Required``/``NotRequired`` read from the resolved hints:
    ``__required_keys__`` misses them in string annotations (``from __future__ import
    annotations``) on Python 3.11."""
    required = set(cls.__required_keys__)
    for name, hint in get_type_hints(cls, include_extras=True).items():
        while get_origin(hint) is typing.Annotated:
            hint = get_args(hint)[0]
        if get_origin(hint) is typing.NotRequired:
            required.discard(name)
        elif get_origin(hint) is typing.Required:
            required.add(name)
    return frozenset(required)


def _bind_pydantic(value: Any, model: Any, path: str, errors: list[tuple[str, str]]) -> Any:
    try:
        return model.model_validate(value)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        details = getattr(exc, "errors", None)
        if not callable(details):
            raise
        for detail in details():
            where = path
            for part in detail.get("loc", ()):
                where = _child(where, part)
            message = str(detail.get("msg", "Invalid value"))
            errors.append((where, message if message.endswith(".") else message + "."))
        return _FAILED


# ----------------------------------------------------------------------------------- encoding


def _to_json(value: Any) -> Any:
    if _is_pydantic_model(type(value)):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__qualname__} is not JSON serialisable")


def encode_payload(payload: Any) -> bytes:
    """Serialise a message as the JSON body a job would send (the inverse of :func:`bind`).

    For the Cloud Run style testing façades, which post it: ``bind(json.loads(encode_payload(x)),
    type(x), ...) == x`` for the types :func:`bind` supports.

    :param payload: a dataclass, ``TypedDict``/``dict``, pydantic model, list, primitive...;
        ``bytes`` are sent as they are (to test a body that is not JSON).
    :raises TypeError: for a value JSON cannot carry.
    :return: compact UTF-8 JSON.
    """
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    return json.dumps(
        payload, default=_to_json, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()
