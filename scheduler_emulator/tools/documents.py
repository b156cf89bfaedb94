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
- its text: valid Unicode, no lone surrogate (a JSON ``"\\ud800"`` escape).

- its items: a jobs file's list may hold at most ``--max-jobs-per-file`` items, counted while
  parsing (:class:`TooManyItems`), so a file over the limit is refused without being built.

A YAML file without aliases or tags is parsed by libyaml (PyYAML's C parser) and built from its
events in one pass, as PyYAML's ``SafeLoader`` builds it but without its nodes (about 6 times
faster than ``yaml.load`` with ``CSafeLoader``); a file with aliases by the bounded pure-Python
loader, which counts what each alias repeats. A JSON array is decoded item by item.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from ..domain.codec import refuse_lone_surrogates, show_value
from ..domain.errors import ApiError, ConfigurationError
from ..domain.numbers import HugeNumber, is_huge, parse_int, refuse_unbounded_numbers

#: Deepest nesting a jobs (or fault, or scenario) file may have; a Job is 4 levels deep.
MAX_DEPTH = 64
#: Most YAML nodes a file with aliases may expand to, every alias counted as the whole node it
#: repeats: refuses a "billion laughs" file of a few hundred bytes before it is built.
MAX_NODES = 100_000
#: Largest file read, in bytes (8 MiB: about 70,000 short jobs). A jobs file's limit is raised
#: with ``scheduler-emulator start --max-jobs-file-bytes``.
DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024

_INT_TAG = "tag:yaml.org,2002:int"


class _TooLarge(yaml.YAMLError):
    """The document nests or expands beyond :data:`MAX_DEPTH` / :data:`MAX_NODES`."""


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
        raise ConfigurationError(f"{path}: cannot read {what}: {exc.strerror or exc}.") from None
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


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's ``SafeLoader`` that refuses, while composing and before any object is built,
    a document nested deeper than :data:`MAX_DEPTH` or expanding to more than
    :data:`MAX_NODES` nodes (an alias counts as every node it repeats, so an alias bomb is
    refused after reading a few hundred bytes of it).

    :raises yaml.YAMLError: (a private subclass) naming the limit and the line.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}

    @staticmethod
    def _line(node_or_event: Any) -> int:
        mark = getattr(node_or_event, "start_mark", None)
        return 0 if mark is None else int(mark.line) + 1

    def compose_node(self, parent: Any, index: Any) -> Any:
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

_CSafeLoader: Any = getattr(yaml, "CSafeLoader", None)  # None without libyaml
_FastLoader: Any = None
if _CSafeLoader is not None:

    class _FastLoader(_CSafeLoader):  # type: ignore[no-redef]
        """libyaml's parser with the safe constructor: for files without aliases, whose size
        bounds their node count (built by :func:`_build`, which checks their depth)."""

    _FastLoader.add_constructor(_INT_TAG, _construct_int)


class _NotPlain(Exception):
    """The document uses what only PyYAML's own loader builds: an alias, an explicit tag, a
    merge key (``<<``), a key that is a list or a mapping, more than one document."""


class TooManyItems(ConfigurationError):
    """A list of the document holds more items than the limit it was read with (counted while
    parsing, so the rest of the file is never built).

    :ivar limit: the limit.
    """

    def __init__(self, source: str, limit: int) -> None:
        super().__init__(f"{source}: a list holds more than {limit} items.")
        self.limit = limit


class _TooMany(yaml.YAMLError):
    """A list grew past the item limit while being built."""


#: The first characters of a plain scalar that PyYAML may read as something other than text
#: (a number, a boolean, null, a date, a merge key): only these are resolved.
_RESOLVED_FIRST = frozenset(yaml.SafeLoader.yaml_implicit_resolvers) - {None}
#: Whether some resolver looks at every plain scalar whatever its first character (none in
#: PyYAML itself): then every one is resolved.
_RESOLVE_ALL = None in yaml.SafeLoader.yaml_implicit_resolvers
#: The tags a plain scalar resolves to whose constructor needs only the scalar itself.
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp", "str")
)


def _build(loader: Any, max_items: int | None) -> Any:
    """The document of ``loader``'s stream built from libyaml's events in one pass, as PyYAML's
    ``SafeLoader`` builds it, refusing on the way nesting deeper than :data:`MAX_DEPTH` and a
    list of more than ``max_items`` items.

    :raises _TooLarge: for the nesting, naming the line.
    :raises _TooMany: for the item count.
    :raises _NotPlain: for what only PyYAML's loader builds (see :class:`_NotPlain`).
    :raises yaml.YAMLError: for text that is not YAML.
    """
    scalar_event, mapping_start = yaml.ScalarEvent, yaml.MappingStartEvent
    starts = (mapping_start, yaml.SequenceStartEvent)
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    constructors, resolve, node = loader.yaml_constructors, loader.resolve, yaml.ScalarNode
    str_tag = "tag:yaml.org,2002:str"
    tags: dict[str, str] = {}  # plain scalar -> its tag: keys repeat in every job
    limit = max_items if max_items is not None else -1
    # The open collections, innermost last, and for each the key read (no_key before it is
    # read; in_list for a list).
    stack: list[Any] = []
    keys: list[Any] = []
    no_key, in_list = _NO_KEY, _IN_LIST
    document: Any = None
    documents = 0
    get_event = loader.get_event
    while True:
        event = get_event()
        kind = type(event)
        if kind is scalar_event:
            if event.tag is not None and event.tag != "!":
                raise _NotPlain
            value: Any = event.value
            if event.implicit[0] and (not value or _RESOLVE_ALL or value[0] in _RESOLVED_FIRST):
                tag = tags.get(value)
                if tag is None:
                    tag = resolve(node, value, event.implicit)
                    if tag not in _SCALAR_TAGS:
                        raise _NotPlain  # a merge key (<<), a value key (=)
                    if len(value) <= 64:
                        tags[value] = tag
                if tag != str_tag:
                    value = constructors[tag](loader, node(tag, value))
        elif kind in starts:
            if event.tag is not None and event.tag != "!":
                raise _NotPlain
            if len(stack) >= MAX_DEPTH:
                raise _TooLarge(
                    f"nested deeper than {MAX_DEPTH} levels (line {BoundedSafeLoader._line(event)})"
                )
            stack.append({} if kind is mapping_start else [])
            keys.append(no_key if kind is mapping_start else in_list)
            continue
        elif kind in ends:
            value = stack.pop()
            keys.pop()
        elif kind is yaml.StreamEndEvent:
            return document
        elif kind is yaml.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _NotPlain  # PyYAML's message: expected a single document
            continue
        elif kind is yaml.AliasEvent:
            raise _NotPlain
        else:  # stream start, document end
            continue
        if not stack:
            document = value
            continue
        key = keys[-1]
        if key is in_list:
            container = stack[-1]
            container.append(value)
            if len(container) == limit + 1 and limit >= 0:
                raise _TooMany
        elif key is no_key:
            if isinstance(value, list | dict):
                raise _NotPlain  # PyYAML refuses it as unhashable, in its words
            keys[-1] = value
        else:
            stack[-1][key] = value
            keys[-1] = no_key


_NO_KEY, _IN_LIST = object(), object()


#: A line holding a quote.
_QUOTED_LINE = re.compile(r"^[^\n'\"]*['\"][^\n]*", re.MULTILINE)
#: Text whose first content (after blank and comment lines and a ``---``) is such an item.
_STARTS_LIST = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\r?\n)*(?:---[ \t]*\r?\n)?-(?:[ \t\r\n]|\Z)")


def _surely_too_many(text: str, max_items: int) -> bool:
    """Whether the YAML ``text`` is a list of more than ``max_items`` items, told from its lines
    in C-speed passes instead of libyaml's events (a few microseconds each, 11 per short job).

    Each item of a list written at the first column starts a line with ``-``; such a line is
    something else only inside a quoted value running over several lines, which needs a line
    with an odd number of quotes: then (or for any other layout) this answers ``False`` and the
    count while parsing decides.
    """
    if not _STARTS_LIST.match(text):
        return False
    items = sum(text.count(f"\n-{space}") for space in " \t\r\n") + text.endswith("\n-")
    if items + (text[:1] == "-" and text[:3] != "---") <= max_items:
        return False
    return not any(
        line.count('"') % 2 or line.count("'") % 2
        for line in (match.group() for match in _QUOTED_LINE.finditer(text))
    )


_NOT_FAST = object()


def _load_fast(text: str, max_items: int | None) -> Any:
    """The document, parsed by libyaml and built in one pass (:func:`_build`) when the text is
    valid YAML without aliases or explicit tags; else :data:`_NOT_FAST`: the bounded Python
    loader then counts what aliases repeat, or gives the error message (PyYAML's own wording,
    with the line and column).

    :raises _TooLarge: for nesting deeper than :data:`MAX_DEPTH`.
    :raises _TooMany: for a list of more than ``max_items`` items.
    """
    if _FastLoader is None:
        return _NOT_FAST
    loader = _FastLoader(text)
    try:
        return _build(loader, max_items)
    except (_TooLarge, _TooMany):
        raise
    except (yaml.YAMLError, _NotPlain):
        return _NOT_FAST
    finally:
        loader.dispose()


def load_document(text: str, source: str, *, max_items: int | None = None) -> Any:
    """Parse a jobs, fault or scenario file: JSON when it looks like JSON, else YAML.

    :param text: the file's text (see :func:`read_text`).
    :param source: how to name the file in messages.
    :param max_items: the most items a list of the document may hold: any list of a YAML
        document or the whole of a JSON array, counted while parsing (the rest is never built);
        the lists a JSON object holds at its first level, after decoding it. ``None``: no
        limit but the file's size.
    :raises TooManyItems: naming the file and the limit, for a list over ``max_items``.
    :raises ConfigurationError: one line naming the file and the problem: not JSON or YAML,
        nested deeper than :data:`MAX_DEPTH`, expanding to more than :data:`MAX_NODES` values
        through aliases, holding a lone surrogate or a number out of range (naming where).
    :return: the document.
    """
    try:
        document = _parse(text, source, max_items)
    except _TooMany:
        raise TooManyItems(source, max_items or 0) from None
    try:
        refuse_lone_surrogates(document)
        refuse_unbounded_numbers(document)
    except ApiError as exc:
        raise ConfigurationError(f"{source}: {exc.describe()}") from None
    return document


_JSON = json.JSONDecoder(parse_int=parse_int)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _space(text: str, index: int = 0) -> int:
    """The index of the first character from ``index`` on that is not JSON white space."""
    match = _JSON_SPACE.match(text, index)
    return index if match is None else match.end()


def _json_list(text: str, max_items: int) -> list[Any]:
    """A JSON array (``text`` starts with ``[`` after white space) decoded one item at a time,
    as ``json.loads`` decodes it.

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
            item, index = decode(text, index)
            items.append(item)
            if len(items) > max_items:
                raise _TooMany
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


def _parse(text: str, source: str, max_items: int | None) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            if max_items is not None and stripped[:1] == "[":
                return _json_list(text, max_items)
            document = json.loads(text, parse_int=parse_int)
            if max_items is not None and any(
                isinstance(value, list) and len(value) > max_items for value in document.values()
            ):
                raise _TooMany
            return document
        except RecursionError:
            raise ConfigurationError(
                f"{source}: not a valid jobs file: nested too deeply."
            ) from None
        except ValueError:
            pass  # maybe YAML flow style; let YAML have a go
    try:
        if max_items is not None and _surely_too_many(text, max_items):
            raise _TooMany
        fast = _load_fast(text, max_items)
        if fast is not _NOT_FAST:
            return fast
        return yaml.load(text, Loader=BoundedSafeLoader)  # noqa: S506 - a SafeLoader
    except _TooLarge as exc:
        raise ConfigurationError(f"{source}: not a valid jobs file: {exc}.") from None
    except RecursionError:
        raise ConfigurationError(f"{source}: not a valid jobs file: nested too deeply.") from None
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
