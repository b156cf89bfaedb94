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

A file without aliases is parsed by libyaml (PyYAML's C parser) in time linear in its size;
a file with aliases by the bounded pure-Python loader, which counts what each alias repeats.
"""

from __future__ import annotations

import json
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
        bounds their node count (checked for depth first by :func:`_scan`)."""

    _FastLoader.add_constructor(_INT_TAG, _construct_int)


def _scan(text: str) -> bool:
    """Read the YAML events of ``text`` with libyaml: refuse nesting deeper than
    :data:`MAX_DEPTH`, and tell whether the text uses an alias.

    :raises _TooLarge: naming the depth and the line.
    :raises yaml.YAMLError: for text that is not YAML.
    """
    depth = 0
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    for event in yaml.parse(text, Loader=_FastLoader):
        if isinstance(event, starts):
            depth += 1
            if depth > MAX_DEPTH:
                raise _TooLarge(
                    f"nested deeper than {MAX_DEPTH} levels (line {BoundedSafeLoader._line(event)})"
                )
        elif isinstance(event, ends):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            return True
    return False


_NOT_FAST = object()


def _load_fast(text: str) -> Any:
    """The document, parsed by libyaml when the text has no alias and is valid YAML; else
    :data:`_NOT_FAST`: the bounded Python loader then counts what aliases repeat, or gives the
    error message (PyYAML's own wording, with the line and column).

    :raises _TooLarge: for nesting deeper than :data:`MAX_DEPTH`.
    """
    if _FastLoader is None:
        return _NOT_FAST
    try:
        if _scan(text):
            return _NOT_FAST
        return yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a safe constructor
    except _TooLarge:
        raise
    except yaml.YAMLError:
        return _NOT_FAST


def load_document(text: str, source: str) -> Any:
    """Parse a jobs, fault or scenario file: JSON when it looks like JSON, else YAML.

    :param text: the file's text (see :func:`read_text`).
    :param source: how to name the file in messages.
    :raises ConfigurationError: one line naming the file and the problem: not JSON or YAML,
        nested deeper than :data:`MAX_DEPTH`, expanding to more than :data:`MAX_NODES` values
        through aliases, holding a lone surrogate or a number out of range (naming where).
    :return: the document.
    """
    document = _parse(text, source)
    try:
        refuse_lone_surrogates(document)
        refuse_unbounded_numbers(document)
    except ApiError as exc:
        raise ConfigurationError(f"{source}: {exc.describe()}") from None
    return document


def _parse(text: str, source: str) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(text, parse_int=parse_int)
        except RecursionError:
            raise ConfigurationError(
                f"{source}: not a valid jobs file: nested too deeply."
            ) from None
        except ValueError:
            pass  # maybe YAML flow style; let YAML have a go
    try:
        fast = _load_fast(text)
        if fast is not _NOT_FAST:
            return fast
        return yaml.load(text, Loader=BoundedSafeLoader)  # noqa: S506 - a SafeLoader
    except _TooLarge as exc:
        raise ConfigurationError(f"{source}: not a valid jobs file: {exc}.") from None
    except RecursionError:
        raise ConfigurationError(f"{source}: not a valid jobs file: nested too deeply.") from None
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
