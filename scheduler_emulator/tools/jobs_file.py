"""Load jobs from a YAML or JSON file, all or nothing.

The file holds Job resources in their REST shape, in one of three layouts:

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
``scheduleTime``…) are ignored (a ``state: PAUSED``, which ``gcloud scheduler jobs describe``
prints for a paused job, with a warning: the job loads enabled). One bad job rejects the whole
file.

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
from typing import Any, TypeVar

from ..domain.codec import camel_case, job_from_json, show_value
from ..domain.errors import ApiError, ConfigurationError
from ..domain.names import qualify_job_name
from ..domain.resources import Job
from ..domain.schedule import parse_schedule
from ..realtime import now as real_now
from .documents import (
    DEFAULT_MAX_FILE_BYTES,
    TooManyItems,
    load_document,
    read_text,
    refuse_bad_values,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_JOBS",
    "load_document",
    "load_jobs_file",
]

#: Most jobs one jobs file may hold (``scheduler-emulator start --max-jobs-per-file`` raises
#: it); the daemon's figures are measured with 10,000.
DEFAULT_MAX_JOBS = 50_000

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


def written_bytes_field(entry: Mapping[str, Any], path: str | None) -> Any:
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
        target = getattr(job, target_attr)
        decoded: bytes = b"" if target is None else getattr(target, attr)
        if not decoded:  # the usual case, told without reading the entry again
            continue
        value = written_bytes_field(entry, path)
        if not isinstance(value, str) or not _WORDS_RE.fullmatch(value) or _is_text(decoded):
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
    if isinstance(document, Mapping):
        if "jobs" in document:
            extra = set(document) - {"jobs", "nextPageToken", "next_page_token"}
            if extra or not isinstance(document["jobs"], list):
                raise ConfigurationError(
                    f'{source}: expected {{"jobs": [...]}}; got keys {sorted(map(str, document))}.'
                )
            return document["jobs"]
        if list(document) == ["cron"]:  # App Engine's cron.yaml
            raise ConfigurationError(
                f"{source} is an App Engine cron.yaml, not a jobs file: write each entry as a "
                "Job (schedule, timeZone from timezone, appEngineHttpTarget with relativeUri "
                "from url, httpMethod GET, as cron sends, and appEngineRouting.service from "
                "target; docs/"
                "differences-from-production.md, App Engine routing)."
            )
        return [document]
    raise ConfigurationError(
        f'{source}: expected a list of jobs, {{"jobs": [...]}} or a single job; got '
        f"{type(document).__name__} {show_value(document, 60)}."
    )


#: A line that starts a YAML document (``---``, at the first column).
_DOCUMENT_START = re.compile(r"^---[ \t]*(?:#.*)?$", re.M)

#: One entry of a jobs file, read: the job, its label for messages (``<file>: job N
#: ("name")``) and its warnings; or the problem that refuses it, as a message line.
_Read = tuple[Job, str, list[str]] | str


def _read_job(entry: Any, label: str, project: str, location: str) -> _Read:
    """Read one entry of a jobs file (``label``: ``<file>: job N``) as CreateJob does."""
    if not isinstance(entry, Mapping):
        return f"{label}: expected a job object; got {show_value(entry, 60)}."
    raw_name = entry.get("name")
    if not isinstance(raw_name, str) or not raw_name:
        return f"{label}: name is required (a job ID such as nightly, or a full job name)."
    label += f" ({json.dumps(raw_name)})"

    def parse(data: Mapping[str, Any]) -> Job:
        refuse_bad_values(data, "")
        name = data.get("name", raw_name)  # (a stand-in once it was refused: trial 223)
        return job_from_json({**data, "name": qualify_job_name(name, project, location)})

    job, problems = each_problem(entry, parse)
    if job is None:
        return "\n".join(
            f"{label}: {exc.describe()}{base64_hint(exc, written_bytes_field(entry, exc.field))}"
            for exc in problems
        )
    warnings = bytes_field_warnings(entry, job)
    if str(entry.get("state", "")).upper() in ("PAUSED", "2"):  # what gcloud's describe printed
        # (trial 201: a job of another project or location is not found by its ID alone)
        here = (job.project, job.location) == (project, location)
        named, elsewhere = (job.job_id, "") if here else (job.name, f" --project={job.project}")
        warnings.append(  # (trial 149: a job the data directory held paused stayed paused)
            "state PAUSED is output-only, as on CreateJob: a new job loads ENABLED and runs (one "
            f"the data directory holds keeps its state); pause it with scheduler-emulator pause "
            f"{named}, gcloud scheduler jobs pause {job.job_id} --location={job.location}"
            f"{elsewhere}, or POST …/jobs/{job.job_id}:pause."
        )
    if parse_schedule(job.schedule, job.time_zone).next_after(real_now()) is None:  # (trial 201)
        warnings.append(
            f"schedule {job.schedule!r} has no fire time within 10 years: the job never runs "
            "(a day of the month that its months lack, such as 31 in February?)."
        )
    return job, label, [f"warning: {label}: {w}" for w in warnings]


#: Valid values put in place of a required field's bad or missing one, so that the entry's
#: other problems are found (trial 78: a bad schedule hid a misspelt time zone; trial 81: a
#: Cloud Run container without its command hid four more; trial 96: a command that is not a
#: list, left out, was then said to be missing as well).
_STAND_INS = {
    "name": "job",  # (trial 223: a bad job ID hid the job's other problems)
    "schedule": "* * * * *",
    "httpTarget.uri": "http://localhost/",
    **{
        f"{task}.containers[0].{field}": ["true"]
        for task in ("template.template", "spec.template.spec.template.spec")
        for field in ("command", "emulatorCommand")
    },
}

T = TypeVar("T")


def each_problem(
    entry: Any, parse: Callable[[Mapping[str, Any]], T], most: int = 5
) -> tuple[T | None, list[ApiError]]:
    """Parse one entry of a user's file, finding each of its problems, not only the first
    (trial 72 fixed one job over three starts): after a refusal the field it names is left out
    (or given a valid stand-in, when required) and the entry parsed again.

    :param parse: reads the entry; raises :class:`ApiError` naming the field (its camelCase
        path) of a problem.
    :param most: the most problems looked for.
    :return: what ``parse`` returned and ``[]``; or ``None`` and the refusals, in order.
    """
    problems: list[ApiError] = []
    current: Mapping[str, Any] | None = entry
    while current is not None and len(problems) < most:
        try:
            result = parse(current)
        except ApiError as exc:
            if exc.field in [seen.field for seen in problems]:  # left out, now missing
                break
            problems.append(exc)
            field = exc.field or ""
            current = _without(current, field, _STAND_INS.get(field)) if field else None
        else:
            return (None, problems) if problems else (result, [])
    return None, problems


def _without(entry: Any, field: str, stand_in: Any = None) -> Mapping[str, Any] | None:
    """``entry`` without the value at ``field`` (a camelCase path such as ``httpTarget.body``
    or ``containers[0].command``, written in either case), or with ``stand_in`` there (added
    when missing), to look for the entry's next problem; ``None`` when not found."""
    if not isinstance(entry, Mapping):
        return None
    head, _, rest = field.partition(".")
    name, _, index = head.partition("[")
    key = next((k for k in entry if camel_case(str(k)) == camel_case(name)), None)
    if key is None and (rest or stand_in is None):
        return None
    if not rest:
        kept = {k: v for k, v in entry.items() if k != key}
        return kept if stand_in is None else {**kept, key or name: stand_in}
    inner = entry[key]
    if index:  # one element of a list
        number = int(index.rstrip("]")) if index.rstrip("]").isdigit() else -1
        if not isinstance(inner, list) or not 0 <= number < len(inner):
            return None
        element = _without(inner[number], rest, stand_in)
        smaller: Any = None if element is None else [*inner[:number], element, *inner[number + 1 :]]
    else:
        smaller = _without(inner, rest, stand_in)
    return None if smaller is None or key is None else {**entry, key: smaller}


def _too_many(source: str, count: int | None, max_jobs: int) -> ConfigurationError:
    """The error for a file of ``count`` jobs (``None``: more than the limit, counted while
    parsing) over ``max_jobs``."""
    holds = "more jobs than" if count is None else f"{count} jobs, more than"
    return ConfigurationError(
        f"{source}: holds {holds} the limit of {max_jobs} per file; raise it with "
        "--max-jobs-per-file N."
    )


def load_jobs_file(
    path: str | Path,
    *,
    project: str,
    location: str,
    warn: Callable[[str], None] | None = None,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_jobs: int = DEFAULT_MAX_JOBS,
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
    :param max_bytes: the largest file read (``--max-jobs-file-bytes``).
    :param max_jobs: the most jobs the file may hold (``--max-jobs-per-file``).
    :raises ConfigurationError: when the file cannot be read or parsed, is larger than
        ``max_bytes`` or holds more than ``max_jobs`` jobs (naming the limit and the option
        that raises it), has the wrong layout, or any job is invalid or duplicated. The
        message names the file, the job by 1-based position and name as written, the field
        and the value, one line per problem, e.g.
        ``jobs.yaml: job 2 ("nightly"): retryConfig.retryCount must be between 0 and 5; got 9.``
    :return: the jobs in file order, normalised as the real service does on create
        (output-only fields at their
        initial values).
    """
    source = str(path)
    text = read_text(path, "the jobs file", max_bytes=max_bytes, option="--max-jobs-file-bytes")

    def read(index: int, entry: Any) -> _Read:
        return _read_job(entry, f"{source}: job {index + 1}", project, location)

    try:  # a list's jobs are read as the file is parsed: only one entry's dict is held at once
        document = load_document(text, source, max_items=max_jobs, each=read)
    except TooManyItems:  # counted while parsing: the rest of the file was never built
        raise _too_many(source, None, max_jobs) from None
    except ConfigurationError as exc:  # YAML documents one after another, a job each: what
        if "expected a single document" not in str(exc):  # gcloud's list --format=yaml
            raise  # prints (trial 229: refused)
        parts = [part for part in _DOCUMENT_START.split(text) if part.strip()]
        document = {"jobs": [load_document(part, source) for part in parts[: max_jobs + 1]]}
    if isinstance(document, list):
        read_jobs = document
    else:
        entries = _entries(document, source)
        if len(entries) > max_jobs:  # a {"jobs": [...]} document
            raise _too_many(source, len(entries), max_jobs)
        read_jobs = [read(index, entry) for index, entry in enumerate(entries)]

    jobs: list[Job] = []
    problems: list[str] = []
    warnings: list[str] = []
    positions: dict[str, int] = {}
    for index, outcome in enumerate(read_jobs, start=1):
        if isinstance(outcome, str):
            problems.extend(outcome.split("\n"))  # (a line per problem of the job)
            continue
        job, label, job_warnings = outcome
        if job.name in positions:
            problems.append(f"{label}: duplicate name {job.name} (also job {positions[job.name]}).")
            continue
        positions[job.name] = index
        jobs.append(job)
        warnings.extend(job_warnings)
    if problems:
        raise ConfigurationError("\n".join(_first(problems, "problems")))
    for warning in _first(warnings, "warnings"):
        (warn or _stderr)(warning)
    return jobs


#: The most problems (or warnings) about a jobs file's jobs listed one per line; the rest are
#: counted in one more line (a 50,000-job file with one mistake in every job says 21 lines).
MAX_LISTED = 20


def _first(lines: list[str], what: str) -> list[str]:
    """``lines`` up to :data:`MAX_LISTED`, then ``… and N more <what>.`` for the rest."""
    if len(lines) <= MAX_LISTED:
        return lines
    return [*lines[:MAX_LISTED], f"… and {len(lines) - MAX_LISTED:,} more {what}."]
