"""Load jobs from a YAML or JSON file, all or nothing.

The file holds Job resources in their REST shape (spec §3.1, §3.8), in one of three layouts:

- a list of jobs (``[{...}, {...}]``, what ``gcloud scheduler jobs list --format=json`` prints);
- ``{"jobs": [...]}`` (a ListJobs response; ``nextPageToken`` is ignored);
- a single job (what ``gcloud scheduler jobs describe --format=json`` prints).

Example ``jobs.yaml``::

    - name: nightly                      # short: gets the default project and location
      schedule: "0 2 * * *"
      timeZone: Etc/UTC
      httpTarget:
        uri: http://127.0.0.1:8000/_triggers/timer/nightly
        httpMethod: POST
      retryConfig: {retryCount: 3}

Each job goes through :func:`~scheduler_emulator.domain.codec.job_from_json`, so the same rules and
defaults apply as for CreateJob, and output-only fields (``state``, ``status``,
``scheduleTime``…) are ignored. One bad job rejects the whole file.

Bytes fields — ``httpTarget.body``, ``appEngineHttpTarget.body``, ``pubsubTarget.data`` — hold
base64 text, as in the REST API. A value that is not base64 is refused with a hint on how to
encode it (:func:`base64_hint`); a value that is base64 by accident, a plain word such as
``body: ping`` that decodes to bytes that are not text, loads but prints a warning on stderr
naming the job and the field (:func:`bytes_field_warnings`).
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..domain.codec import job_from_json, refuse_lone_surrogates, show_value
from ..domain.errors import ApiError, ConfigurationError
from ..domain.names import qualify_job_name
from ..domain.resources import Job

#: The bytes fields of a job: (how its target is spelt, the field, the JSON path, the target's
#: attribute of :class:`Job` and the field's attribute on it).
_BYTES_FIELDS = (
    (("httpTarget", "http_target"), "body", "httpTarget.body", "http_target", "body"),
    (
        ("appEngineHttpTarget", "app_engine_http_target"),
        "body",
        "appEngineHttpTarget.body",
        "app_engine_http_target",
        "body",
    ),
    (("pubsubTarget", "pubsub_target"), "data", "pubsubTarget.data", "pubsub_target", "data"),
)
#: A value that reads as plain words (``ping``, ``run-now``, ``hello1``) rather than base64.
_WORDS_RE = re.compile(r"[A-Za-z]+(?:[_-][A-Za-z0-9]+)*[0-9]*")

#: Deepest nesting a jobs (or fault, or scenario) file may have; a Job is 4 levels deep.
MAX_DEPTH = 64
#: Most YAML nodes a file may expand to, every alias counted as the whole node it repeats:
#: refuses a "billion laughs" file of a few hundred bytes before it is built.
MAX_NODES = 100_000


class _TooLarge(yaml.YAMLError):
    """The document nests or expands beyond :data:`MAX_DEPTH` / :data:`MAX_NODES`."""


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


def load_document(text: str, source: str) -> Any:
    """Parse a jobs, fault or scenario file: JSON when it looks like JSON, else YAML.

    YAML goes through :class:`BoundedSafeLoader`; both are checked for lone surrogates (a JSON
    ``"\\ud800"`` escape) in any key or string.

    :param text: the file's text.
    :param source: how to name the file in messages.
    :raises ConfigurationError: one line naming the file and the problem: not JSON or YAML,
        nested deeper than :data:`MAX_DEPTH`, expanding to more than :data:`MAX_NODES` values,
        or holding a lone surrogate (naming where).
    :return: the document.
    """
    document = _parse(text, source)
    try:
        refuse_lone_surrogates(document)
    except ApiError as exc:
        raise ConfigurationError(f"{source}: {exc.describe()}") from None
    return document


def _parse(text: str, source: str) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except RecursionError:
            raise ConfigurationError(
                f"{source}: not a valid jobs file: nested too deeply."
            ) from None
        except json.JSONDecodeError:
            pass  # maybe YAML flow style; let YAML have a go
    try:
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


def base64_hint(exc: ApiError, value: Any = None) -> str:
    """How to write a bytes field, when ``exc`` refuses one for not being base64.

    :param exc: an error from :func:`~scheduler_emulator.domain.codec.job_from_json`.
    :param value: the value refused, when known: the hint then shows its own base64.
    :return: a sentence to append to the message (starting with a space), or ``""``.
    """
    paths = {path for _, _, path, _, _ in _BYTES_FIELDS}
    if exc.field not in paths or "base64" not in exc.describe():
        return ""
    key = exc.field.rsplit(".", 1)[-1]
    text = value if isinstance(value, str) and _shell_quotable(value) else None
    if text is None:
        text = '{"a":1}'
    encoded = base64.b64encode(text.encode()).decode()
    return (
        f" It holds bytes, written as base64 as in the REST API: encode the text first "
        f"(echo -n '{text}' | base64 prints {encoded}) and write that, e.g. in YAML "
        f"{key}: {encoded}."
    )


def _shell_quotable(text: str) -> bool:
    """Whether ``echo -n '<text>'`` on one line of a message shows ``text`` as it is."""
    return bool(text) and len(text) <= 200 and "'" not in text and text.isprintable()


def written_bytes_field(entry: Mapping[str, Any], path: str) -> Any:
    """The value ``entry`` gives the bytes field at JSON ``path``, or ``None``."""
    for spellings, key, field_path, _, _ in _BYTES_FIELDS:
        if field_path == path:
            written = next((entry[k] for k in spellings if isinstance(entry.get(k), Mapping)), None)
            return written.get(key) if written is not None else None
    return None


def _is_text(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch in "\t\n\r" for ch in text)


def bytes_field_warnings(entry: Mapping[str, Any], job: Job) -> list[str]:
    """The bytes fields of ``entry`` that look like text meant literally: a value made of
    plain words (letters, digits, ``_`` and ``-``, such as ``ping`` or ``run-now``) that is
    valid base64 by accident and decodes to bytes that are not UTF-8 text.

    :param entry: the job as written in the file.
    :param job: the job it loaded as.
    :return: one message per such field (naming the field, the value and its base64), without
        the file and job label.
    """
    warnings = []
    for _, key, path, target_attr, attr in _BYTES_FIELDS:
        value = written_bytes_field(entry, path)
        target = getattr(job, target_attr)
        if not isinstance(value, str) or not _WORDS_RE.fullmatch(value) or target is None:
            continue
        decoded: bytes = getattr(target, attr)
        if _is_text(decoded):
            continue
        encoded = base64.b64encode(value.encode()).decode()
        shown = repr(decoded[:16]) + ("…" if len(decoded) > 16 else "")
        warnings.append(
            f"{path} {show_value(value)} is read as base64 (as in the REST API) and decodes to "
            f"{len(decoded)} bytes that are not text ({shown}); to send the text {value}, "
            f"write its base64: {key}: {encoded} (echo -n '{value}' | base64). If it is base64 "
            "on purpose, ignore this warning."
        )
    return warnings


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _entries(document: Any, source: str) -> list[Any]:
    if document is None:
        return []
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping):
        if "jobs" in document:
            extra = set(document) - {"jobs", "nextPageToken", "next_page_token"}
            if extra or not isinstance(document["jobs"], list):
                raise ConfigurationError(
                    f'{source}: expected {{"jobs": [...]}}; got keys {sorted(map(str, document))}.'
                )
            return document["jobs"]
        return [document]
    raise ConfigurationError(
        f'{source}: expected a list of jobs, {{"jobs": [...]}} or a single job; got '
        f"{type(document).__name__} {show_value(document, 60)}."
    )


def load_jobs_file(
    path: str | Path,
    *,
    project: str,
    location: str,
    warn: Callable[[str], None] | None = None,
) -> list[Job]:
    """Read, validate and normalise every job of a jobs file (YAML or JSON, told by content).

    A job's ``name`` may be short (``nightly``), which gets ``project`` and ``location``, or a
    full ``projects/P/locations/L/jobs/J`` name (kept as is). Every job must have a name, and
    names must be unique after qualification. Output-only fields are ignored, so the output of
    ``gcloud scheduler jobs describe --format=json`` (or ``list --format=json``) loads as is.

    :param path: the file; its text must be UTF-8.
    :param project: the project ID for short names.
    :param location: the location ID for short names.
    :param warn: called with each warning line (``warning: <file>: job N ("name"): <field>
        …``) about a bytes field that looks like text meant literally
        (:func:`bytes_field_warnings`); by default it is printed on stderr.
    :raises ConfigurationError: when the file cannot be read or parsed, has the wrong layout, or
        any job is invalid or duplicated. The message names the file, the job by 1-based
        position and name as written, the field and the value, one line per problem, e.g.
        ``jobs.yaml: job 2 ("nightly"): retryConfig.retryCount must be between 0 and 5; got 9.``
    :return: the jobs in file order, normalised per spec §3.7 (output-only fields at their
        initial values).
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{source}: cannot read the jobs file: {exc}") from None
    entries = _entries(load_document(text, source), source)

    jobs: list[Job] = []
    problems: list[str] = []
    warnings: list[str] = []
    positions: dict[str, int] = {}
    for index, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping):
            problems.append(
                f"{source}: job {index}: expected a job object; got {show_value(entry, 60)}."
            )
            continue
        raw_name = entry.get("name")
        label = f"{source}: job {index}" + (
            f" ({json.dumps(raw_name)})" if isinstance(raw_name, str) else ""
        )
        if not isinstance(raw_name, str) or not raw_name:
            problems.append(
                f"{label}: name is required (a job ID such as nightly, or a full job name)."
            )
            continue
        try:
            name = qualify_job_name(raw_name, project, location)
            job = job_from_json({**entry, "name": name})
        except ApiError as exc:
            hint = base64_hint(exc, written_bytes_field(entry, exc.field or ""))
            problems.append(f"{label}: {exc.describe()}{hint}")
            continue
        if job.name in positions:
            problems.append(f"{label}: duplicate name {job.name} (also job {positions[job.name]}).")
            continue
        positions[job.name] = index
        jobs.append(job)
        warnings.extend(f"warning: {label}: {w}" for w in bytes_field_warnings(entry, job))
    if problems:
        raise ConfigurationError("\n".join(problems))
    for warning in warnings:
        (warn or _stderr)(warning)
    return jobs
