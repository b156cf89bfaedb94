"""Numbers in request bodies and files: one set of bounds for every field.

JSON and YAML can write numbers no field of a job, a fault plan or a scenario can use: a whole
number of thousands of digits (Python refuses to convert one of more than 4,300 digits, with a
message about ``sys.set_int_max_str_digits``), ``1e999`` (infinity), ``NaN``. Google's JSON
parser (protobuf JSON, for the REST API) refuses a number out of its field's 64-bit range and a
float that is not finite where a number is expected. Here every decoded document — a REST body,
a jobs file, a fault-plan file, a scenario — is checked once, after parsing, by
:func:`refuse_unbounded_numbers`, so a new field gets the same bounds::

    data = json.loads(raw, parse_int=parse_int, parse_float=parse_float)  # kept as written
    refuse_unbounded_numbers(data)  # InvalidArgument naming its path and the value as written

A field's own, narrower range (``retryCount`` 0-5, a fault's ``count``…) is still checked where
the field is read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .errors import InvalidArgument

#: The range of a whole number in any body or file: a signed 64-bit integer, as protobuf's
#: ``int64`` (Google's JSON parser refuses a value outside its field's type).
MIN_WHOLE = -(2**63)
MAX_WHOLE = 2**63 - 1
#: Digits beyond which a number's text is not converted at all (64-bit values have at most 19).
_MAX_DIGITS = 40


class HugeNumber(str):
    """The text of a whole number too long to convert (more than 40 digits), kept as parsed so
    that :func:`refuse_unbounded_numbers` can name where it is."""


class InfiniteNumber(float):
    """A JSON number too large for a float (``1e999``): infinity, shown as its text."""

    text: str

    def __new__(cls, text: str) -> InfiniteNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __str__(self) -> str:
        return self.text


def parse_float(text: str) -> float:
    """``json.loads(..., parse_float=parse_float)``: ``float(text)``, or an
    :class:`InfiniteNumber` that messages show as sent (``1e999``, not ``inf``)."""
    value = float(text)
    return InfiniteNumber(text) if math.isinf(value) else value


def parse_int(text: str) -> int | HugeNumber:
    """``json.loads(..., parse_int=parse_int)`` (and the YAML loader's): convert ``text``, or
    keep it as a :class:`HugeNumber` when it has more than 40 digits.

    >>> parse_int("12"), type(parse_int("9" * 5000)).__name__
    (12, 'HugeNumber')
    """
    if is_huge(text):
        return HugeNumber(text)
    return int(text)


def whole_number(text: str) -> int:
    """The whole number ``text`` writes (digits with an optional sign), refused before it is
    converted when it is out of the 64-bit range: for numbers written inside a text value
    (a scenario's ``"== 12"``), which the document's own check does not see.

    >>> whole_number("-12")
    -12

    :raises ValueError: ``"the number is a whole number out of range (…); got 99999… (5000
        digits)"``.
    """
    value = parse_int(text)
    problem = number_problem(value)
    if problem is not None:
        raise ValueError(f"the number {problem}")
    return int(value)


def is_huge(text: str) -> bool:
    """Whether the text of a whole number has more than 40 digits (leading zeros, signs and
    ``_`` separators not counted): too long to convert."""
    return len(text.lstrip("+-").replace("_", "").lstrip("0")) > _MAX_DIGITS


def show_number(value: Any) -> str:
    """A number as a message shows it: at most 30 characters, with the digit count of a long
    one (``123456789012345678901234567890… (4301 digits)``)."""
    text = str(value)
    if len(text) <= 30:
        return text
    return f"{text[:30]}… ({sum(ch.isdigit() for ch in text)} digits)"


def number_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a number in a body or file, or ``None`` when nothing is
    (also for a value that is not a number).

    :return: e.g. ``"is not a finite number; got inf"``.
    """
    if isinstance(value, HugeNumber) or (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not MIN_WHOLE <= value <= MAX_WHOLE
    ):
        return (
            f"is a whole number out of range (at most {MAX_WHOLE}, a 64-bit integer); got "
            f"{show_number(value)}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        return f"is not a finite number; got {value}"
    return None


def refuse_unbounded_numbers(data: Any, *, field: str = "") -> None:
    """Refuse a decoded document that holds a number no field accepts: a whole number outside
    the 64-bit range (or too long to convert: a :class:`HugeNumber`), or a float that is
    infinite or NaN.

    Walks ``data`` without recursion (any depth).

    :param data: the decoded document: dicts, lists and scalars.
    :param field: the path of ``data`` itself (``""`` for the whole document).
    :raises InvalidArgument: ``field`` is the path of the first such value
        (``retryConfig.retryCount``, ``rules[0].seconds``); the message names it and the value.
    """
    stack: list[tuple[str, Any]] = [(field, data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str | bool) and not isinstance(value, HugeNumber):
            continue
        if isinstance(value, Mapping):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                stack.append((child, item))
        elif isinstance(value, list | tuple):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
        else:
            problem = number_problem(value)
            if problem is not None:
                where = path or "the value"
                raise InvalidArgument(
                    f"Invalid value at '{where}': {where} {problem}.",
                    field=path or None,
                    description=f"{where} {problem}.",
                )
