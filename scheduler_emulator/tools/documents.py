"""Reading the files users write: jobs files, fault-plan files and scenarios (YAML or JSON).

One home for what any such file may hold, whatever its kind:

- its size: at most :data:`DEFAULT_MAX_FILE_BYTES` (a jobs file's limit is raised with
  ``--max-jobs-file-bytes``); a larger file — or ``/dev/zero`` — is refused after reading one
  byte more than the limit;
- its nesting: at most :data:`MAX_DEPTH` levels;
- its aliases: a YAML file that uses aliases (``*name``) may expand to at most
  :data:`MAX_NODES` values, each alias counted as everything it repeats (a "billion laughs"
  file of a few hundred bytes is refused before it is built);
- its numbers: every whole number fits 64 bits and every float is finite
  (:func:`~scheduler_emulator.domain.numbers.refuse_unbounded_numbers`), so a 5,000-digit
  ``retryCount`` is refused naming where it is, not with Python's message about
  ``sys.set_int_max_str_digits``;
- its text: valid Unicode, no lone surrogate (a JSON ``"\\ud800"`` escape);
- its items: a jobs file's list may hold at most ``--max-jobs-per-file`` items, counted while
  parsing (:class:`TooManyItems`), so a file over the limit is refused without being built.

A YAML file is read once by libyaml (PyYAML's C parser) for its nesting, its lists' items and
whether it uses aliases; one without aliases is then built by PyYAML's own composer and safe
constructor from libyaml's events, a list one item at a time; one with aliases by the bounded
pure-Python loader, which counts what each alias repeats. Either way the document is PyYAML's
``SafeLoader``'s. A JSON array is decoded item by item.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from ..domain.codec import refuse_lone_surrogates, show_value
from ..domain.errors import ApiError, ConfigurationError
from ..domain.numbers import (
    HugeNumber,
    is_huge,
    parse_float,
    parse_int,
    refuse_unbounded_numbers,
)
from ..server.request_body import no_duplicate_keys

#: Deepest nesting a jobs (or fault, or scenario) file may have; a Job is 4 levels deep.
MAX_DEPTH = 64
#: Most YAML nodes a file with aliases may expand to, every alias counted as the whole node it
#: repeats: refuses a "billion laughs" file of a few hundred bytes before it is built.
MAX_NODES = 100_000
#: Largest file read, in bytes (8 MiB: about 70,000 short jobs). A jobs file's limit is raised
#: with ``scheduler-emulator start --max-jobs-file-bytes``.
DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024

_INT_TAG = "tag:yaml.org,2002:int"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"


class _TooLarge(yaml.YAMLError):
    """The document nests or expands beyond :data:`MAX_DEPTH` / :data:`MAX_NODES`."""


class _TooMany(yaml.YAMLError):
    """A list grew past the item limit while being parsed."""


def read_text(
    path: str | Path,
    what: str,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    option: str | None = None,
) -> str:
    """Read a file's UTF-8 text, at most ``max_bytes`` of it.

    :param path: the file (a pipe or a device is read the same way, never past the limit).
    :param what: what the file is, for messages (``"the jobs file"``).
    :param max_bytes: the largest size accepted.
    :param option: the command-line option that raises the limit, named in the message.
    :raises ConfigurationError: naming the file: it cannot be read, is larger than the limit
        (naming the limit and ``option``), or is not UTF-8.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        where = Path(path)  # a relative path: where it was looked for (the current directory)
        looked = "" if where.is_absolute() else f" (looked for {where.absolute()})"
        raise ConfigurationError(
            f"{path}: cannot read {what}: {exc.strerror or exc}{looked}."
        ) from None
    if len(data) > max_bytes:
        raise ConfigurationError(
            f"{path}: {what} is larger than the limit of {max_bytes} bytes"
            + (f"; raise it with {option} N." if option else ".")
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{path}: cannot read {what}: it is not UTF-8 text (byte {exc.start}: "
            f"{data[exc.start : exc.start + 1]!r})."
        ) from None


def _construct_int(constructor: Any, node: yaml.ScalarNode) -> Any:
    """YAML's int constructor, but a number too long to convert stays a
    :class:`~scheduler_emulator.domain.numbers.HugeNumber` (refused later, naming its path)."""
    if is_huge(str(node.value)):
        return HugeNumber(node.value)
    return yaml.SafeLoader.construct_yaml_int(constructor, node)


def _construct_map(constructor: Any, node: yaml.MappingNode) -> Any:
    """YAML's mapping constructor, refusing a key written twice in one mapping (PyYAML keeps
    the last; a ``<<`` merge's keys may still be overridden), as the API refuses a JSON object
    naming a key twice.

    :raises yaml.constructor.ConstructorError: naming the key and its line.
    """
    seen: set[str] = set()
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
            if key.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"found the key {key.value!r} twice", key.start_mark
                )
            seen.add(key.value)
    return (yield from SafeConstructor.construct_yaml_map(constructor, node))


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's ``SafeLoader`` that refuses, while composing and before any object is built,
    a document nested deeper than :data:`MAX_DEPTH`, expanding to more than
    :data:`MAX_NODES` nodes (an alias counts as every node it repeats, so an alias bomb is
    refused after reading a few hundred bytes of it) or holding a list of more than
    ``max_items`` items (``None``: no limit).

    :raises yaml.YAMLError: (a private subclass) naming the limit and the line.
    """

    def __init__(self, stream: str, max_items: int | None = None) -> None:
        super().__init__(stream)
        self._max_items = max_items
        self._depth = 0
        self._sizes: dict[int, int] = {}

    @staticmethod
    def _line(node_or_event: Any) -> int:
        mark = getattr(node_or_event, "start_mark", None)
        return 0 if mark is None else int(mark.line) + 1

    def compose_node(self, parent: Any, index: Any) -> Any:
        limit = self._max_items  # ``index``: for a list's item, its place in the list
        if isinstance(parent, yaml.SequenceNode) and limit is not None and index >= limit:
            raise _TooMany
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _TooLarge(
                f"nested deeper than {MAX_DEPTH} levels (line {self._line(self.peek_event())})"
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if id(node) not in self._sizes:
            children: list[Any] = []
            if isinstance(node, yaml.SequenceNode):
                children = node.value
            elif isinstance(node, yaml.MappingNode):
                children = [item for pair in node.value for item in pair]
            size = 1 + sum(self._sizes.get(id(child), 1) for child in children)
            if size > MAX_NODES:
                raise _TooLarge(
                    f"expands to more than {MAX_NODES} values, counting what each alias "
                    f"(*name) repeats (line {self._line(node)})"
                )
            self._sizes[id(node)] = size
        return node


BoundedSafeLoader.add_constructor(_INT_TAG, _construct_int)
BoundedSafeLoader.add_constructor(_MAP_TAG, _construct_map)

_CParser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)  # None without libyaml
_ItemLoader: Any = None
if _CParser is not None:

    class _ItemLoader(Composer, _CParser, SafeConstructor, Resolver):  # type: ignore[no-redef]
        """libyaml's parser under PyYAML's own composer, resolver and safe constructor (what
        ``yaml.SafeLoader`` is made of, with libyaml's events), for :func:`_load_items`."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    _ItemLoader.add_constructor(_INT_TAG, _construct_int)
    _ItemLoader.add_constructor(_MAP_TAG, _construct_map)


class TooManyItems(ConfigurationError):
    """A list of the document holds more items than the limit it was read with (counted while
    parsing, so the rest of the file is never built).

    :ivar limit: the limit.
    """

    def __init__(self, source: str, limit: int) -> None:
        super().__init__(f"{source}: a list holds more than {limit} items.")
        self.limit = limit


#: How :func:`_scan` treats each libyaml event: a scalar, the start of a list or a mapping, the
#: end of either, an alias; stream and document events are not listed.
_SCALAR, _LIST, _MAPPING, _END, _ALIAS = range(5)
_EVENT_KINDS = {
    yaml.ScalarEvent: _SCALAR,
    yaml.SequenceStartEvent: _LIST,
    yaml.MappingStartEvent: _MAPPING,
    yaml.SequenceEndEvent: _END,
    yaml.MappingEndEvent: _END,
    yaml.AliasEvent: _ALIAS,
}


def _scan(text: str, max_items: int | None) -> bool:
    """Read the YAML events of ``text`` with libyaml: refuse nesting deeper than
    :data:`MAX_DEPTH` and a list of more than ``max_items`` items (``None``: no limit), and
    tell whether the text uses an alias (the scan stops there: the bounded loader goes on).

    The one pass over a file that is refused for its count: it keeps no event, and each costs
    a dictionary look-up and a comparison or two (a 96,669-job file is refused at its 50,001st
    job in about the time libyaml takes to hand over the events before it).

    :raises _TooLarge: naming the depth and the line.
    :raises _TooMany: at the item after ``max_items``, before the rest is read.
    :raises yaml.YAMLError: for text that is not YAML.
    """
    limit = math.inf if max_items is None else max_items
    kinds = _EVENT_KINDS
    # For each open collection, innermost last: the items of a list so far, -1 for a mapping;
    # the first entry stands for the stream.
    counts = [-1]
    for event in iter(_CParser(text).get_event, None):
        kind = kinds.get(event.__class__)
        if kind is None:
            continue
        if kind == _END:
            counts.pop()
            continue
        if counts[-1] >= 0:
            counts[-1] += 1
            if counts[-1] > limit:
                raise _TooMany
        if kind == _SCALAR:
            continue
        if kind == _ALIAS:
            return True
        if len(counts) > MAX_DEPTH:
            raise _TooLarge(
                f"nested deeper than {MAX_DEPTH} levels (line {BoundedSafeLoader._line(event)})"
            )
        counts.append(0 if kind == _LIST else -1)
    return False


#: A line that starts a list's item at its first column: a ``-`` followed by white space.
_ITEM_LINE = re.compile(r"^-(?=[ \t\r\n]|$)", re.M)


def _surely_over(text: str, limit: int) -> bool:
    """Whether ``text`` is a document whose list at its lines' first column certainly holds
    more than ``limit`` items — found without a Python object per YAML event, so a 96,669-job
    file is refused in a third of the time :func:`_scan` takes to reach its 50,001st job.

    A line starting ``- `` may also be inside a quoted value spread over lines, so such lines
    are only candidates. libyaml counts the events of the text up to the candidate two past the
    limit twice: as it is, and with a ``- x`` line put before each candidate that follows a
    line break — before an item that adds one event (an item ``x``), inside a quoted value
    none, and in a flow collection it makes the text invalid. So the difference is a number of
    true items. ``False`` (and :func:`_scan` decides) when the document is not a list at the
    first column, has too few candidates, or is not YAML up to there.
    """
    found, first_item, end = 0, len(text), len(text)
    for found, match in enumerate(_ITEM_LINE.finditer(text), 1):
        if found == 2:
            first_item = match.start()  # the first item's lines end here
        if found == limit + 3:
            end = match.start()
            break
    if found <= limit:
        return False
    try:
        events = iter(_CParser(text[:first_item]).get_event, None)
        next(events), next(events)  # the stream's and the document's start
        root = next(events, None)
        if not (
            isinstance(root, yaml.SequenceStartEvent)
            and not root.flow_style
            and getattr(root.start_mark, "column", None) == 0
        ):
            return False
        head = text[:end]
        base = _CParser(head).raw_parse()
        for after in " \t\n\r":  # str.replace: no object per line (re.sub makes two)
            head = head.replace("\n-" + after, "\n- x\n-" + after)
        return bool(_CParser(head).raw_parse() - base > limit)
    except yaml.YAMLError:
        return False


def _load_items(text: str, item: _Item) -> Any:
    """The document of ``text`` as ``yaml.load`` with ``SafeLoader`` builds it, by
    :data:`_ItemLoader`, passed through :func:`_finish`; a document that is a list is built
    one item at a time, each handed to ``item`` at once, so the nodes of only one item are
    ever held, and only what ``item`` makes of the others (a 50,000-job file takes a fifth of
    the memory and about half the time of building it whole, which also keeps the garbage
    collector busy walking the whole node graph).

    For text without aliases (an item's alias to an earlier item would build a copy).

    :raises yaml.YAMLError: for text that is not YAML or holds more than one document.
    """
    loader = _ItemLoader(text)
    loader.get_event()  # the stream's start
    if loader.check_event(yaml.StreamEndEvent):
        return None
    loader.get_event()  # the document's start
    start = loader.peek_event()
    if not isinstance(start, yaml.SequenceStartEvent) or start.tag is not None:
        document = _finish(loader.construct_document(loader.compose_node(None, None)), item)
    else:
        loader.get_event()
        parent, document = yaml.SequenceNode(_SEQ_TAG, []), []
        while not loader.check_event(yaml.SequenceEndEvent):
            built = loader.construct_document(loader.compose_node(parent, len(document)))
            document.append(item(len(document), built))
        loader.get_event()
    loader.get_event()  # the document's end
    if not loader.check_event(yaml.StreamEndEvent):
        raise yaml.YAMLError("expected a single document in the stream")
    return document


def _load_yaml(text: str, max_items: int | None, item: _Item) -> Any:
    """The document, as PyYAML's ``SafeLoader`` builds it, through :func:`_finish`: by
    :func:`_load_items` once
    :func:`_scan` found no alias; else (or without libyaml) by :class:`BoundedSafeLoader`,
    which counts what aliases repeat and the rest of a list's items, and words the error for
    text that is not YAML (PyYAML's own message, with the line and column).

    :raises _TooLarge: for nesting deeper than :data:`MAX_DEPTH` or too many values.
    :raises _TooMany: for a list of more than ``max_items`` items.
    :raises yaml.YAMLError: for text that is not YAML.
    """
    if _ItemLoader is not None:
        try:
            if max_items is not None and _surely_over(text, max_items):
                raise _TooMany
            if not _scan(text, max_items):
                return _load_items(text, item)
        except (_TooLarge, _TooMany):
            raise
        except yaml.YAMLError:
            pass  # the bounded loader gives the message
    loader = BoundedSafeLoader(text, max_items)
    try:
        document = loader.get_single_data()
    finally:
        loader.dispose()
    return _finish(document, item)


def load_document(
    text: str,
    source: str,
    *,
    max_items: int | None = None,
    each: Callable[[int, Any], Any] | None = None,
) -> Any:
    """Parse a jobs, fault or scenario file: JSON when it looks like JSON, else YAML.

    :param text: the file's text (see :func:`read_text`).
    :param source: how to name the file in messages.
    :param max_items: the most items a list of the document may hold: any list of a YAML
        document or the whole of a JSON array, counted while parsing (the rest is never built);
        the lists a JSON object holds at its first level, after decoding it. ``None``: no
        limit but the file's size.
    :param each: when the document is a list, called with each item's 0-based index and the
        item, once it is built, as the file is read where the reader allows (a JSON array, a
        YAML file without aliases) — the list returned holds what it returns, so the items
        themselves need not all be held at once. It checks the item with
        :func:`refuse_bad_values` itself (a jobs file names the job then). Not called for
        other documents.
    :raises TooManyItems: naming the file and the limit, for a list over ``max_items``.
    :raises ConfigurationError: one line naming the file and the problem: not JSON or YAML,
        nested deeper than :data:`MAX_DEPTH`, expanding to more than :data:`MAX_NODES` values
        through aliases, holding a lone surrogate or a number out of range (naming where).
    :return: the document.
    """

    def item(index: int, value: Any) -> Any:
        if each is not None:
            return each(index, value)
        refuse_bad_values(value, f"[{index}]")
        return value

    try:
        return _parse(text, source, max_items, item)
    except _TooMany:
        raise TooManyItems(source, max_items or 0) from None
    except ApiError as exc:
        raise ConfigurationError(f"{source}: {exc.describe()}") from None


#: What :func:`load_document` does with each item of a document that is a list, as it is built.
_Item = Callable[[int, Any], Any]


def refuse_bad_values(document: Any, field: str) -> None:
    """Refuse a lone surrogate or a number out of range anywhere in ``document`` (at path
    ``field``, ``""`` for the whole).

    :raises ApiError: naming the path and the value.
    """
    refuse_lone_surrogates(document, field=field)
    refuse_unbounded_numbers(document, field=field)


def _finish(document: Any, item: _Item) -> Any:
    """A document built whole: a list's items passed through ``item`` in order, anything else
    checked by :func:`refuse_bad_values`."""
    if isinstance(document, list):
        return [item(index, value) for index, value in enumerate(document)]
    refuse_bad_values(document, "")
    return document


#: (a key named twice is YAML's to refuse, naming its line: a JSON document is YAML too)
_JSON = json.JSONDecoder(
    parse_int=parse_int, parse_float=parse_float, object_pairs_hook=no_duplicate_keys
)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _space(text: str, index: int = 0) -> int:
    """The index of the first character from ``index`` on that is not JSON white space."""
    match = _JSON_SPACE.match(text, index)
    return index if match is None else match.end()


def _json_list(text: str, max_items: int, item: _Item) -> list[Any]:
    """A JSON array (``text`` starts with ``[`` after white space) decoded one item at a time,
    as ``json.loads`` decodes it, each item handed to ``item`` at once (the list holds what it
    returns).

    :raises _TooMany: at the item after ``max_items``, before the rest is decoded.
    :raises ValueError: for text that is not one JSON array.
    """
    decode, space = _JSON.raw_decode, _space
    items: list[Any] = []
    index = space(text, space(text) + 1)
    if text.startswith("]", index):
        index += 1
    else:
        while True:
            value, index = decode(text, index)
            if len(items) == max_items:
                raise _TooMany
            items.append(item(len(items), value))
            index = space(text, index)
            if text.startswith(",", index):
                index = space(text, index + 1)
            elif text.startswith("]", index):
                index += 1
                break
            else:
                raise ValueError(f"expected , or ] at character {index}")
    if space(text, index) != len(text):
        raise ValueError(f"extra data at character {index}")
    return items


def _parse(text: str, source: str, max_items: int | None, item: _Item) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            if max_items is not None and stripped[:1] == "[":
                return _json_list(text, max_items, item)
            document = _JSON.decode(text)
            if max_items is not None and any(
                isinstance(value, list) and len(value) > max_items for value in document.values()
            ):
                raise _TooMany
            return _finish(document, item)
        except RecursionError:
            raise ConfigurationError(f"{source}: not readable: nested too deeply.") from None
        except ValueError:
            pass  # maybe YAML flow style; let YAML have a go
    try:
        return _load_yaml(text, max_items, item)
    except _TooLarge as exc:
        raise ConfigurationError(f"{source}: not readable: {exc}.") from None
    except RecursionError:
        raise ConfigurationError(f"{source}: not readable: nested too deeply.") from None
    except _TooMany:
        raise
    except yaml.YAMLError as exc:
        hint = ""
        if "alias" in str(exc):
            hint = " (quote schedules that start with '*', e.g. schedule: \"*/5 * * * *\")"
        raise ConfigurationError(
            f"{source}{_where(exc)}: not valid YAML or JSON{hint}: {_problem(exc)}"
        ) from None
    except (ValueError, OverflowError) as exc:  # a value YAML cannot build: 2026-13-45
        raise ConfigurationError(
            f"{source}: not valid YAML: a value is out of range ({exc})."
        ) from None


def _where(exc: yaml.YAMLError) -> str:
    """`` line L column C`` of a PyYAML error, when it has a position."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ""
    return f" line {mark.line + 1} column {mark.column + 1}"


def _problem(exc: yaml.YAMLError) -> str:
    """A PyYAML error's reason in one line, without its source excerpt."""
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem is None:
        return " ".join(show_value(str(exc), 300).strip('"').split("\\n"))
    return f"{context}: {problem}" if context else str(problem)
