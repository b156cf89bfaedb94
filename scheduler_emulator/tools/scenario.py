"""Scenario files: jobs, a virtual clock, faults, a target and what should come out of it.

A scenario is a YAML (or JSON) file that ``scheduler-emulator replay SCENARIO`` runs on a
:class:`~scheduler_emulator.runtime.clock.ManualClock` with an in-memory store, the same way every
time
for the same seed. A small one::

    start: "2026-09-24T01:59:00Z"
    jobs:                                  # REST-shape jobs, short names OK (like a jobs file)
      - name: nightly
        schedule: "0 2 * * *"
        httpTarget: {uri: "http://orders.test/_triggers/timer/nightly"}
        retryConfig: {retryCount: 3}
    target:
      base_url: http://orders.test         # the origin the jobs' URIs use ...
      app: "orders_target:create_app()"    # ... served in-process by this WSGI app (or url: …)
    faults:
      seed: 7
      rules:
        - {action: lost_ack, job: nightly, run: 1, attempt: 1}
    steps:
      - advance: 2d                        # or 3600s, 90m, 1h30m, a number of seconds
      - run_job: nightly
    probe:
      path: /sweeps                        # GET, JSON answer
      fields: {sweeps: sweeps}             # name: dotted path (or len(path))
    expect:
      nightly:
        runs: 2                            # distinct ScheduleTime values delivered
        attempts: ">= 3"
        codes: {OK: 2}
        statuses: {409: 0}
        probe: {sweeps: "== runs"}

Top-level keys: ``start``, ``project``, ``location``, ``jobs``, ``steps``, ``faults``,
``target``, ``probe``, ``expect`` and ``extends`` (a scenario file whose top-level keys this one
replaces one by one). Every value is checked before anything runs, and every problem is reported
(one line each, in one :class:`ConfigurationError`), naming the file, the key path and the
value, e.g. ``duplicates.yaml: steps[2].advance: not a duration: "7 days"``.

**The expectation language.** Each value is a *check*: a whole number ``N`` (the same as
``"== N"``) or a string ``"OP OPERAND"`` where ``OP`` is ``==``, ``!=``, ``<``, ``<=``, ``>``
or ``>=`` and ``OPERAND`` is a whole number or a *quantity* of the same job, optionally
``+ N`` or ``- N`` (``"== runs"``, ``"<= runs + 1"``). Quantities of a job:

- ``runs`` — distinct ``X-CloudScheduler-ScheduleTime`` values delivered for the job (an attempt
  without the header counts as its own run): what a deduplicating target should process;
- ``attempts`` — attempts recorded, retries and injected duplicate deliveries included;
- ``codes.NAME`` — attempts that ended with that google.rpc code (``codes: {OK: 2}``);
- ``statuses.N`` — attempts the target answered with HTTP status ``N``;
- ``probe.FIELD`` (or bare ``FIELD``) — a number read from the probe's JSON answer.

The probe is read once, after the last step.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import itertools
import json
import math
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..core.faults import FaultPlan, FaultRule
from ..domain.attempts import Attempt
from ..domain.codec import job_from_json, parse_timestamp, show_value
from ..domain.errors import ApiError, ConfigurationError
from ..domain.names import qualify_job_name
from ..domain.resources import Job
from ..realtime import real_monotonic
from ..runtime.attempt_log import AttemptLog
from ..runtime.clock import ManualClock
from ..runtime.emulator import Emulator
from ..runtime.options import DEFAULT_LOCATION, DEFAULT_PROJECT
from ..runtime.store import Store
from ..runtime.transports import HttpTransport, MountTransport, Transport, WsgiApp, WsgiTransport
from .jobs_file import (
    base64_hint,
    bytes_field_warnings,
    load_document,
    load_jobs_file,
    written_bytes_field,
)

#: Where a scenario's clock starts when it sets no ``start``.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
TOP_LEVEL_KEYS = (
    "extends",
    "start",
    "project",
    "location",
    "jobs",
    "steps",
    "faults",
    "target",
    "probe",
    "expect",
)
STEP_KINDS = ("advance", "move_to", "run_job")
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|[wdhms])")
_CHECK_RE = re.compile(
    r"\s*(==|!=|<=|>=|<|>)?\s*"
    r"(?:(?P<number>-?\d+)|(?P<name>[A-Za-z_][\w.]*)(?:\s*(?P<sign>[+-])\s*(?P<offset>\d+))?)\s*"
)
#: ``module:attr``, optionally ``()`` (a factory called with no arguments); anything after the
#: attribute but ``()`` is refused, so a scenario file can never call a function with arguments.
_APP_RE = re.compile(r"(?P<module>[^:()]+):(?P<attr>[A-Za-z_][\w.]*)(?P<call>\(\s*\))?")
_CALL_SYNTAX_RE = re.compile(r"[^:]+:[A-Za-z_][\w.]*\s*\(.*", re.DOTALL)
_SELECTOR_RE = re.compile(r"(?:len\((?P<counted>[^()]+)\)|(?P<plain>[^()]+))")
_FRESH = itertools.count(1)
_T = TypeVar("_T")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _show(value: Any) -> str:
    """A value as the scenario file would spell it, shortened (never serialised whole)."""
    if isinstance(value, datetime):
        return value.isoformat()
    return show_value(value)


def _problem(source: Path | str, path: str, message: str) -> ConfigurationError:
    where = f"{source}: {path}: " if path else f"{source}: "
    return ConfigurationError(where + message)


# ------------------------------------------------------------------------------- value parsing


def parse_duration(value: Any) -> timedelta:
    """Parse a step's duration: seconds as a number, or ``"7d"``, ``"3600s"``, ``"1h30m"``…

    Units: ``w``, ``d``, ``h``, ``m``, ``s``, ``ms``; parts add up (``"1d12h"``).

    :param value: a non-negative number of seconds or such a string.
    :raises ValueError: for anything else, saying what is accepted.
    :return: the duration.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {_show(value)}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"a duration must be a non-negative number; got {_show(value)}")
        return timedelta(seconds=value)
    if isinstance(value, str):
        text = value.replace(" ", "")
        parts = _DURATION_PART.findall(text)
        if text and "".join(n + u for n, u in parts) == text:
            return timedelta(seconds=sum(float(n) * _UNITS[u] for n, u in parts))
        try:
            seconds = float(text)
        except ValueError:
            seconds = -1.0
        if math.isfinite(seconds) and seconds >= 0:
            return timedelta(seconds=seconds)
    raise ValueError(
        f'not a duration: {_show(value)} (use seconds, or a number with a unit such as "7d", '
        '"3600s", "90m", "1h30m")'
    )


def parse_instant(value: Any) -> datetime:
    """Parse an RFC 3339 instant with a UTC offset (YAML may already have made it a datetime).

    :param value: ``"2026-09-24T02:00:00Z"`` or an aware :class:`datetime`.
    :raises ValueError: for a naive or unparsable value.
    :return: the instant in UTC.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"{_show(value)} has no UTC offset; write it as RFC 3339 such as "
                '"2026-09-24T02:00:00Z"'
            )
        return value.astimezone(UTC)
    try:
        return parse_timestamp(value)
    except ApiError as exc:
        raise ValueError(exc.message) from None


@dataclass(frozen=True)
class Check:
    """One comparison of the expectation language: ``OP OPERAND`` (see the module docstring).

    :param op: one of :data:`OPERATORS`.
    :param number: the operand when it is a number.
    :param name: the operand when it is a quantity (``"runs"``, ``"probe.sweeps"``…).
    :param offset: added to a named operand (``"runs + 1"`` → 1).
    :param text: the check as written, normalised (``"== runs"``).
    """

    op: str
    number: int | None = None
    name: str | None = None
    offset: int = 0
    text: str = ""

    @classmethod
    def parse(cls, value: Any) -> Check:
        """Parse a check: a whole number or a string ``"OP OPERAND"``.

        :raises ValueError: naming the value and the accepted forms.
        :return: the check.
        """
        if isinstance(value, int) and not isinstance(value, bool):
            return cls("==", number=value, text=f"== {value}")
        match = _CHECK_RE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise ValueError(
                f'not a check: {_show(value)} (use a whole number, or "OP VALUE" with OP one of '
                "==, !=, <, <=, >, >= and VALUE a number or a quantity such as runs, e.g. "
                '"== runs")'
            )
        op = match.group(1) or "=="
        if match.group("number") is not None:
            number = int(match.group("number"))
            return cls(op, number=number, text=f"{op} {number}")
        name = match.group("name")
        offset = int(match.group("offset") or 0) * (-1 if match.group("sign") == "-" else 1)
        suffix = f" {'-' if offset < 0 else '+'} {abs(offset)}" if offset else ""
        return cls(op, name=name, offset=offset, text=f"{op} {name}{suffix}")

    def expected(self, resolve: Callable[[str], float | None]) -> float | None:
        """The value to compare with.

        :param resolve: maps a quantity name to its value (``None`` when it has none).
        :return: the number, or the named quantity plus the offset; ``None`` when the named
            quantity has no value.
        """
        if self.name is None:
            return self.number
        base = resolve(self.name)
        return None if base is None else base + self.offset

    def holds(self, observed: float, expected: float) -> bool:
        """Tell whether ``observed OP expected``.

        :param observed: the quantity's value.
        :param expected: what :meth:`expected` returned.
        :return: ``True`` when the comparison holds.
        """
        return OPERATORS[self.op](observed, expected)


# --------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Step:
    """One step of a scenario.

    :param kind: ``"advance"``, ``"move_to"`` or ``"run_job"``.
    :param value: a :class:`timedelta`, an aware :class:`datetime` or a job ID.
    :param where: the step's key path (``"steps[2]"``) for messages.
    """

    kind: str
    value: timedelta | datetime | str
    where: str = ""

    def describe(self) -> str:
        """The step as one short phrase.

        :return: e.g. ``"advance 3600s"``, ``"run_job nightly"``.
        """
        if isinstance(self.value, datetime):
            return f"{self.kind} {self.value.isoformat().replace('+00:00', 'Z')}"
        if isinstance(self.value, timedelta):
            return f"{self.kind} {self.value.total_seconds():g}s"
        return f"{self.kind} {self.value}"


@dataclass(frozen=True)
class TargetSpec:
    """Where the jobs' requests go.

    :param base_url: the origin (and optional path prefix) the jobs' URIs use, e.g.
        ``http://orders.test``; ``None``: every URI goes to the app or is sent as written.
    :param app: ``"module:attr"`` or ``"path/to/file.py:factory()"`` of a WSGI app served
        in-process, or ``None``.
    :param url: the real URL ``base_url`` maps to (delivery over HTTP), or ``None``.
    :param directory: where ``app`` module paths are resolved (the declaring file's folder).
    """

    base_url: str | None = None
    app: str | None = None
    url: str | None = None
    directory: Path = Path(".")


@dataclass(frozen=True)
class ProbeSpec:
    """A JSON endpoint on the target, read after the last step.

    :param location: a path (``/sweeps``, resolved against the target) or an absolute URL.
    :param fields: field name → selector: a dotted path into the answer (``stats.sweeps``,
        ``items.0``) or ``len(path)`` for the length of a list or object.
    """

    location: str
    fields: Mapping[str, str]


@dataclass(frozen=True)
class Expectation:
    """One line of ``expect``: a job's quantity and a check on it.

    :param job: the short job ID.
    :param quantity: ``runs``, ``attempts``, ``codes.NAME``, ``statuses.N`` or ``probe.FIELD``.
    :param check: what it must satisfy.
    """

    job: str
    quantity: str
    check: Check

    @property
    def text(self) -> str:
        """``"nightly: probe.sweeps == runs"``."""
        return f"{self.job}: {self.quantity} {self.check.text}"


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file (see the module docstring).

    :param path: the file.
    :param start: where the clock starts (UTC).
    :param jobs: the jobs, fully named, in file order.
    :param steps: the steps, in order.
    :param faults: the fault plan as JSON (a fresh :class:`FaultPlan` is built per run).
    :param target: where requests go.
    :param probe: the probe, or ``None``.
    :param expectations: the checks, in file order.
    :param project: the project for short job names.
    :param location: the location for short job names.
    """

    path: Path
    start: datetime
    jobs: tuple[Job, ...]
    steps: tuple[Step, ...]
    faults: Mapping[str, Any] = field(default_factory=dict)
    target: TargetSpec = field(default_factory=TargetSpec)
    probe: ProbeSpec | None = None
    expectations: tuple[Expectation, ...] = ()
    project: str = DEFAULT_PROJECT
    location: str = DEFAULT_LOCATION

    def fault_plan(self, seed: int | None = None) -> FaultPlan:
        """A fresh fault plan (rule limits count from zero).

        :param seed: replaces the scenario's seed when given.
        :return: the plan.
        """
        plan = FaultPlan.from_json(self.faults)
        if seed is not None:
            plan.seed = seed
        return plan


# --------------------------------------------------------------------------------- loading


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: cannot read the scenario: {exc}") from None
    return load_document(text, str(path))  # bounded YAML, no lone surrogates


class _Problems:
    """The problems found in a scenario so far: every one is reported, not only the first."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.warnings: list[str] = []

    def add(self, error: ConfigurationError) -> None:
        """Record ``error`` (one problem per line of its message)."""
        self.lines.extend(line for line in str(error).splitlines() if line)

    def check(self, fn: Callable[[], _T], default: _T) -> _T:
        """Run ``fn``; on a :class:`ConfigurationError` record it and return ``default``."""
        try:
            return fn()
        except ConfigurationError as exc:
            self.add(exc)
            return default


def _document(
    path: Path, problems: _Problems, chain: tuple[Path, ...] = ()
) -> dict[str, tuple[Any, Path]]:
    """Top-level key → (value, file that set it), following ``extends``; unknown keys are
    recorded in ``problems`` and left out."""
    resolved = path.resolve()
    if resolved in chain:
        loop = " -> ".join(str(p) for p in (*chain, resolved))
        raise ConfigurationError(f"{path}: extends: the files extend each other ({loop}).")
    data = _read(path)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _problem(path, "", f"a scenario is a mapping of keys; got {_show(data)}.")
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            problems.add(
                _problem(
                    path,
                    str(key),
                    f"unknown key (known: {', '.join(TOP_LEVEL_KEYS)}); got {_show(key)}.",
                )
            )
    merged: dict[str, tuple[Any, Path]] = {}
    if "extends" in data:
        parent = data["extends"]
        if not isinstance(parent, str) or not parent:
            raise _problem(path, "extends", f"expected a scenario file path; got {_show(parent)}.")
        parent_path = path.parent / parent
        if not parent_path.is_file():
            raise _problem(path, "extends", f"no such file: {_show(parent)} ({parent_path}).")
        merged.update(_document(parent_path, problems, (*chain, resolved)))
    for key, value in data.items():
        if key != "extends" and key in TOP_LEVEL_KEYS:
            merged[str(key)] = (value, path)
    return merged


@dataclass
class _JobIds:
    """The job IDs a scenario declares, for ``run_job`` steps and ``expect``.

    :param ids: the IDs of the valid jobs and of the invalid ones whose name could be read.
    :param complete: ``False`` when some job's ID is unknown (an unreadable jobs file, a job
        without a name): then no reference to a job is refused, since it may be that one.
    """

    ids: set[str] = field(default_factory=set)
    complete: bool = True

    def unknown(self, job: Any) -> bool:
        """Tell whether ``job`` is surely not a job of the scenario."""
        return self.complete and job not in self.ids


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file.

    :param path: the YAML or JSON file.
    :raises ConfigurationError: listing every problem found, one per line, each naming the
        file, the key path and the value (``scenario.yaml: expect.nightly.codes.OK: not a
        check: "many" …``).
    :return: the scenario, ready for :func:`run_scenario`.
    """
    path = Path(path)
    problems = _Problems()
    document = _document(path, problems)

    def get(key: str, default: Any = None) -> tuple[Any, Path]:
        return document.get(key, (default, path))

    def an_id(key: str, default: str) -> str:
        value, src = get(key, default)
        if not isinstance(value, str) or not value:
            problems.add(
                _problem(src, key, f"expected an ID such as my-project; got {_show(value)}.")
            )
            return default
        return value

    project = an_id("project", DEFAULT_PROJECT)
    location = an_id("location", DEFAULT_LOCATION)

    start_value, start_src = get("start")
    start = DEFAULT_START
    if start_value is not None:
        try:
            start = parse_instant(start_value)
        except ValueError as exc:
            problems.add(_problem(start_src, "start", str(exc)))

    jobs_value, jobs_src = get("jobs", [])
    job_ids = _JobIds()
    before = len(problems.lines)
    jobs = _jobs(jobs_value, jobs_src, project, location, problems, job_ids)
    jobs_valid = len(problems.lines) == before

    steps_value, steps_src = get("steps", [])
    steps = _steps(steps_value, steps_src, job_ids, problems)

    faults_value, faults_src = get("faults", {})
    faults = _faults(faults_value, faults_src, problems)

    target_value, target_src = get("target")
    target = _target(target_value, target_src, problems)
    if target.base_url is None and target.url is not None and jobs_valid:
        origin = problems.check(lambda: _common_origin(jobs, target_src), None)
        target = replace(target, base_url=origin)

    probe_value, probe_src = get("probe")
    probe = _probe(probe_value, probe_src, problems)

    expect_value, expect_src = get("expect", {})
    expectations = _expectations(expect_value, expect_src, job_ids, probe, problems)

    if problems.lines:
        raise ConfigurationError("\n".join(problems.lines))
    for warning in problems.warnings:
        print(warning, file=sys.stderr)
    return Scenario(
        path=path,
        start=start,
        jobs=tuple(jobs),
        steps=tuple(steps),
        faults=faults,
        target=target,
        probe=probe,
        expectations=tuple(expectations),
        project=project,
        location=location,
    )


def _jobs(
    value: Any, source: Path, project: str, location: str, problems: _Problems, ids: _JobIds
) -> list[Job]:
    if isinstance(value, str):  # a jobs file next to the scenario
        jobs_path = source.parent / value
        try:
            loaded = load_jobs_file(jobs_path, project=project, location=location)
        except ConfigurationError as exc:
            problems.add(exc)
            ids.complete = False
            return []
        ids.ids.update(job.job_id for job in loaded)
        return loaded
    if not isinstance(value, list):
        problems.add(
            _problem(
                source,
                "jobs",
                f"expected a list of jobs (or a jobs file path); got {_show(value)}.",
            )
        )
        ids.complete = False
        return []
    jobs: list[Job] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        where = f"jobs[{index}]"
        raw_name = entry.get("name") if isinstance(entry, Mapping) else None
        if isinstance(raw_name, str) and raw_name:
            ids.ids.add(raw_name.rsplit("/", 1)[-1])
        else:
            ids.complete = False
        try:
            job = _job(entry, where, source, project, location, seen)
        except ConfigurationError as exc:
            problems.add(exc)
            continue
        problems.warnings.extend(
            f"warning: {source}: {where} ({raw_name}): {warning}"
            for warning in bytes_field_warnings(entry, job)
        )
        seen.add(job.name)
        ids.ids.add(job.job_id)
        jobs.append(job)
    return jobs


def _job(entry: Any, where: str, source: Path, project: str, location: str, seen: set[str]) -> Job:
    if not isinstance(entry, Mapping):
        raise _problem(source, where, f"expected a job object; got {_show(entry)}.")
    raw_name = entry.get("name")
    if not isinstance(raw_name, str) or not raw_name:
        raise _problem(
            source,
            f"{where}.name",
            f"a job ID such as nightly is required; got {_show(raw_name)}.",
        )
    try:
        name = qualify_job_name(raw_name, project, location)
        job = job_from_json({**entry, "name": name})
    except ApiError as exc:
        hint = base64_hint(exc, written_bytes_field(entry, exc.field or ""))
        raise _problem(source, f"{where} ({raw_name})", exc.describe() + hint) from None
    if job.http_target is None:
        raise _problem(
            source, f"{where}.httpTarget", "the scenario runner delivers HTTP targets only."
        )
    if job.name in seen:
        raise _problem(source, f"{where}.name", f"duplicate job {_show(raw_name)}.")
    return job


def _steps(value: Any, source: Path, job_ids: _JobIds, problems: _Problems) -> list[Step]:
    if not isinstance(value, list):
        problems.add(_problem(source, "steps", f"expected a list of steps; got {_show(value)}."))
        return []
    steps: list[Step] = []
    for index, entry in enumerate(value):
        try:
            steps.append(_step(entry, f"steps[{index}]", source, job_ids))
        except ConfigurationError as exc:
            problems.add(exc)
    return steps


def _step(entry: Any, where: str, source: Path, job_ids: _JobIds) -> Step:
    if not isinstance(entry, Mapping) or len(entry) != 1:
        raise _problem(
            source,
            where,
            "expected one of {advance: DURATION}, {move_to: RFC3339}, {run_job: JOB_ID}; "
            f"got {_show(entry)}.",
        )
    ((kind, raw),) = entry.items()
    if kind not in STEP_KINDS:
        raise _problem(source, f"{where}.{kind}", f"unknown step (known: {', '.join(STEP_KINDS)}).")
    try:
        parsed: timedelta | datetime | str
        if kind == "advance":
            parsed = parse_duration(raw)
        elif kind == "move_to":
            parsed = parse_instant(raw)
        else:
            if not isinstance(raw, str) or job_ids.unknown(raw):
                known = ", ".join(sorted(job_ids.ids)) or "none"
                raise ValueError(f"no job {_show(raw)} in the scenario (jobs: {known})")
            parsed = raw
    except ValueError as exc:
        raise _problem(source, f"{where}.{kind}", str(exc)) from None
    return Step(kind, parsed, where)


def _faults(value: Any, source: Path, problems: _Problems) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, list):
        value = {"rules": value}
    if not isinstance(value, Mapping):
        problems.add(_problem(source, "faults", f"expected {{seed, rules}}; got {_show(value)}."))
        return {}
    for key in value:
        if key not in ("seed", "rules"):
            problems.add(_problem(source, f"faults.{key}", "unknown key (known: seed, rules)."))
    seed = value.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        problems.add(
            _problem(source, "faults.seed", f"expected a whole number; got {_show(seed)}.")
        )
        seed = 0
    rules = value.get("rules", [])
    if not isinstance(rules, list):
        problems.add(
            _problem(source, "faults.rules", f"expected a list of rules; got {_show(rules)}.")
        )
        return {"seed": seed, "rules": []}
    valid = []
    for index, rule in enumerate(rules):
        key = f"faults.rules[{index}]"
        try:
            FaultRule.from_json(rule)
        except ApiError as exc:
            if exc.field and isinstance(rule, Mapping) and exc.field in rule:
                key += f".{exc.field}"
            problems.add(_problem(source, key, exc.message))
            continue
        except TypeError as exc:
            problems.add(_problem(source, key, str(exc)))
            continue
        valid.append(dict(rule))
    return {"seed": seed, "rules": valid}


def _check_url(source: Path, where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise _problem(source, where, f"expected an http:// or https:// URL; got {_show(value)}.")
    if not urlsplit(value).netloc:
        raise _problem(source, where, f"the URL has no host: {_show(value)}.")
    return value.rstrip("/")


def _target(value: Any, source: Path, problems: _Problems) -> TargetSpec:
    if value is None:
        return TargetSpec(directory=source.parent)
    if isinstance(value, str):
        value = {"url": value}
    if not isinstance(value, Mapping):
        problems.add(
            _problem(source, "target", f"expected {{base_url, app | url}}; got {_show(value)}.")
        )
        return TargetSpec(directory=source.parent)
    for key in value:
        if key not in ("base_url", "app", "url"):
            problems.add(
                _problem(source, f"target.{key}", "unknown key (known: base_url, app, url).")
            )
    if "app" in value and "url" in value:
        problems.add(
            _problem(source, "target", "give app (in-process) or url (over HTTP), not both.")
        )
    base_url = value.get("base_url")
    if base_url is not None:
        base_url = problems.check(lambda: _check_url(source, "target.base_url", base_url), None)
    url = None
    if "url" in value:
        url = problems.check(lambda: _check_url(source, "target.url", value["url"]), None)
    app = value.get("app")
    if (
        isinstance(app, str)
        and _CALL_SYNTAX_RE.fullmatch(app.strip())
        and not _APP_RE.fullmatch(app.strip())
    ):
        problems.add(_problem(source, "target.app", _call_refused(app)))
        app = None
    elif app is not None and (not isinstance(app, str) or not _APP_RE.fullmatch(app.strip())):
        problems.add(
            _problem(
                source,
                "target.app",
                f'expected "module:attr" or "module:factory()" of a WSGI app; got {_show(app)}.',
            )
        )
        app = None
    return TargetSpec(base_url, app.strip() if app else None, url, source.parent)


def _common_origin(jobs: Sequence[Job], source: Path) -> str:
    origins = set()
    for job in jobs:
        assert job.http_target is not None
        parts = urlsplit(job.http_target.uri)
        origins.add(f"{parts.scheme}://{parts.netloc}")
    if len(origins) != 1:
        raise _problem(
            source,
            "target.base_url",
            "required when the jobs' URIs do not share one origin "
            f"(they use {', '.join(sorted(origins)) or 'none'}).",
        )
    return origins.pop()


def _probe(value: Any, source: Path, problems: _Problems) -> ProbeSpec | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, Mapping):
        problems.add(_problem(source, "probe", f"expected {{path, fields}}; got {_show(value)}."))
        return None
    for key in value:
        if key not in ("path", "url", "fields"):
            problems.add(
                _problem(source, f"probe.{key}", "unknown key (known: path, url, fields).")
            )
    location = value.get("path", value.get("url"))
    if not isinstance(location, str) or not location.startswith(("/", "http://", "https://")):
        problems.add(
            _problem(
                source,
                "probe.path",
                f'expected a path such as "/sweeps" or an http(s) URL; got {_show(location)}.',
            )
        )
        location = "/"
    raw_fields = value.get("fields", [])
    if isinstance(raw_fields, list):
        raw_fields = {name: name for name in raw_fields if isinstance(name, str)}
    if not isinstance(raw_fields, Mapping):
        problems.add(
            _problem(
                source,
                "probe.fields",
                f"expected a list of names or name: path; got {_show(raw_fields)}.",
            )
        )
        raw_fields = {}
    fields: dict[str, str] = {}
    for name, selector in raw_fields.items():
        where = f"probe.fields.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
            problems.add(
                _problem(
                    source, where, f"a field name is a word such as sweeps; got {_show(name)}."
                )
            )
        elif not isinstance(selector, str) or not _SELECTOR_RE.fullmatch(selector.strip()):
            problems.add(
                _problem(
                    source, where, f'expected a dotted path or "len(path)"; got {_show(selector)}.'
                )
            )
        fields[str(name)] = selector.strip() if isinstance(selector, str) else ""
    return ProbeSpec(location, fields)


def _expectations(
    value: Any, source: Path, job_ids: _JobIds, probe: ProbeSpec | None, problems: _Problems
) -> list[Expectation]:
    if value is None:
        return []
    if not isinstance(value, Mapping):
        problems.add(_problem(source, "expect", f"expected job ID: checks; got {_show(value)}."))
        return []
    probe_fields = set(probe.fields) if probe else set()
    out: list[Expectation] = []

    def add(job: str, quantity: str, raw: Any) -> None:
        where = f"expect.{job}.{quantity}"
        try:
            check = Check.parse(raw)
            if check.name is not None:
                _validate_quantity(check.name, probe_fields, operand=True)
        except ValueError as exc:
            problems.add(_problem(source, where, str(exc)))
            return
        out.append(Expectation(job, quantity, check))

    for job, checks in value.items():
        if job_ids.unknown(job):
            known = ", ".join(sorted(job_ids.ids)) or "none"
            problems.add(
                _problem(
                    source,
                    f"expect.{job}",
                    f"no job {_show(job)} in the scenario (jobs: {known}).",
                )
            )
            continue
        if not isinstance(checks, Mapping):
            problems.add(
                _problem(source, f"expect.{job}", f"expected checks; got {_show(checks)}.")
            )
            continue
        for key, raw in checks.items():
            if key in ("runs", "attempts"):
                add(job, key, raw)
            elif key in ("codes", "statuses", "probe"):
                if not isinstance(raw, Mapping):
                    problems.add(
                        _problem(
                            source,
                            f"expect.{job}.{key}",
                            f"expected name: check; got {_show(raw)}.",
                        )
                    )
                    continue
                for name, inner in raw.items():
                    quantity = f"{key}.{name}"
                    try:
                        _validate_quantity(quantity, probe_fields)
                    except ValueError as exc:
                        problems.add(_problem(source, f"expect.{job}.{quantity}", str(exc)))
                        continue
                    add(job, quantity, inner)
            else:
                problems.add(
                    _problem(
                        source,
                        f"expect.{job}.{key}",
                        "unknown key (known: runs, attempts, codes, statuses, probe).",
                    )
                )
    return out


def _validate_quantity(name: str, probe_fields: set[str], *, operand: bool = False) -> None:
    head, _, rest = str(name).partition(".")
    if head in ("runs", "attempts") and not rest:
        return
    if head == "codes" and rest in _RPC_NAMES:
        return
    if head == "statuses" and rest.isdigit() and 100 <= int(rest) <= 599:
        return
    if head == "probe" and rest in probe_fields:
        return
    if operand and not rest and head in probe_fields:
        return
    if head == "probe":
        known = ", ".join(sorted(probe_fields)) or "none: add a probe with fields"
        raise ValueError(f"no probe field {_show(rest)} (probe fields: {known})")
    if head == "codes":
        raise ValueError(f"not a google.rpc code name: {_show(rest)} (e.g. OK, UNAVAILABLE)")
    if head == "statuses":
        raise ValueError(f"not an HTTP status: {_show(rest)}")
    raise ValueError(
        f"unknown quantity {_show(name)} (use runs, attempts, codes.NAME, statuses.N, probe.FIELD)"
    )


def _rpc_names() -> frozenset[str]:
    from ..domain.errors import RPC_CODES

    return frozenset(RPC_CODES)


_RPC_NAMES = _rpc_names()


# ------------------------------------------------------------------------------- the target


def _call_refused(spec: str) -> str:
    return (
        f"{_show(spec)} calls a function with arguments, which a scenario file may not do; "
        'name a WSGI app object ("module:app") or a factory defined in that module that takes '
        'no arguments ("module:create_app()"), and put any arguments inside that factory.'
    )


def load_app(spec: str, directory: Path, *, source: str = "target.app") -> WsgiApp:
    """Import the WSGI app named by ``spec``, never calling anything with arguments.

    ``spec`` is ``module:attr`` (a dotted module importable with ``directory`` on
    ``sys.path``, where it is added) or ``path/to/file.py:attr`` (relative to ``directory``; the
    file is executed afresh on every call), naming a WSGI application object. ``attr()`` (empty
    parentheses) names a *factory*: a plain Python function defined in that module itself (not
    imported into it, not a builtin) that takes no arguments and returns a fresh app. Anything
    else in parentheses (``create_app(guard=True)``, ``system("id")``) is refused: a scenario
    file is data and must not run arbitrary calls.

    :param spec: the ``target.app`` value.
    :param directory: the scenario file's folder.
    :param source: how to name the value in errors.
    :raises ConfigurationError: naming ``source`` and the value, when ``spec`` has call syntax
        with arguments, the module or attribute cannot be loaded, a factory is not a function
        of that module or fails, or the result is not callable.
    :return: the WSGI application.
    """
    match = _APP_RE.fullmatch(spec.strip())
    if match is None:
        if _CALL_SYNTAX_RE.fullmatch(spec.strip()):
            raise ConfigurationError(f"{source}: {_call_refused(spec)}")
        raise ConfigurationError(f"{source}: expected module:attr; got {_show(spec)}.")
    module_name, attr, call = match.group("module"), match.group("attr"), match.group("call")
    folder = str(directory.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        if module_name.endswith(".py") or "/" in module_name:
            file = (directory / module_name).resolve()
            unique = f"_scenario_app_{next(_FRESH)}_{file.stem}"
            module_spec = importlib.util.spec_from_file_location(unique, file)
            if module_spec is None or module_spec.loader is None or not file.is_file():
                raise ConfigurationError(f"{source}: no Python file {file}.")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[unique] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ConfigurationError:
        raise
    except Exception as exc:
        raise ConfigurationError(
            f"{source}: cannot import {module_name!r} (from {folder}): {type(exc).__name__}: {exc}"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigurationError(f"{source}: {module_name!r} has no attribute {attr!r}.")
        target = getattr(target, part)
    if call is not None:
        if not isinstance(target, types.FunctionType) or target.__module__ != module.__name__:
            raise ConfigurationError(
                f"{source}: {_show(spec)}: {attr} is not a function defined in {module_name!r} "
                f"(got {type(target).__name__} from {getattr(target, '__module__', '?')!r}); "
                "only a factory of the module itself may be called."
            )
        try:
            target = target()
        except Exception as exc:
            raise ConfigurationError(
                f"{source}: {attr}() failed: {type(exc).__name__}: {exc}"
            ) from exc
    if not callable(target):
        raise ConfigurationError(
            f"{source}: {spec!r} is not a WSGI application (got {type(target).__name__})."
        )
    app: WsgiApp = target
    return app


def rebase_url(url: str, base_url: str, new_base: str) -> str:
    """Move ``url`` from under ``base_url`` to under ``new_base`` (path and query kept).

    :param url: an absolute URL.
    :param base_url: the origin (and path prefix) to replace.
    :param new_base: what replaces it.

    >>> rebase_url("http://orders.test/_triggers/timer/nightly?x=1", "http://orders.test",
    ...            "http://127.0.0.1:8000")
    'http://127.0.0.1:8000/_triggers/timer/nightly?x=1'

    :return: the new URL; ``url`` itself when it is not under ``base_url``.
    """
    base = base_url.rstrip("/")
    if url == base or url.startswith((base + "/", base + "?")):
        return new_base.rstrip("/") + url[len(base) :]
    return url


@dataclass
class _Delivery:
    """How a run of the scenario reaches the target."""

    transport: Transport
    jobs: list[Job]
    description: str
    app: WsgiApp | None = None
    http_base: str | None = None  # where base_url maps to over HTTP


def _prepare(scenario: Scenario, target_url: str | None) -> _Delivery:
    spec = scenario.target
    jobs = list(scenario.jobs)
    base = spec.base_url
    url = target_url.rstrip("/") if target_url else spec.url
    if url is not None:
        if base is None:
            base = _common_origin(jobs, scenario.path)
        rebased = []
        for job in jobs:
            assert job.http_target is not None
            uri = rebase_url(job.http_target.uri, base, url)
            rebased.append(replace(job, http_target=replace(job.http_target, uri=uri)))
        return _Delivery(HttpTransport(), rebased, f"{base} -> {url} over HTTP", http_base=url)
    if spec.app is not None:
        app = load_app(spec.app, spec.directory, source=f"{scenario.path}: target.app")
        if base is None:
            return _Delivery(WsgiTransport(app), jobs, f"every URI -> {spec.app} (in-process)", app)
        transport = MountTransport({base: app})
        return _Delivery(transport, jobs, f"{base} -> {spec.app} (in-process)", app)
    return _Delivery(HttpTransport(), jobs, "each job's URI over HTTP", http_base=base)


# ------------------------------------------------------------------------------- running


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one :class:`Expectation`.

    :param expectation: what was checked.
    :param ok: whether it held.
    :param observed: the observed value (``None`` when it could not be read).
    :param expected: the operand's value (``None`` when it could not be read).
    :param detail: why the value could not be read, or how a named operand resolved.
    """

    expectation: Expectation
    ok: bool
    observed: float | None
    expected: float | None
    detail: str = ""


@dataclass
class ScenarioRun:
    """What running a scenario produced.

    :param scenario: the scenario run.
    :param seed: the fault plan's seed used.
    :param attempts: every attempt, in start order.
    :param probe: probe field → value read (``None`` when absent or not a number).
    :param probe_error: why the probe could not be read, or ``None``.
    :param results: one per expectation, in order.
    :param delivery: how requests reached the target (for the header line).
    :param end: the clock's final instant.
    """

    scenario: Scenario
    seed: int
    attempts: list[Attempt]
    probe: dict[str, float | None]
    probe_error: str | None
    results: list[CheckResult]
    delivery: str
    end: datetime

    @property
    def ok(self) -> bool:
        """``True`` when every expectation held."""
        return all(result.ok for result in self.results)

    @property
    def unmet(self) -> list[CheckResult]:
        """The expectations that did not hold."""
        return [result for result in self.results if not result.ok]


class _CountingLog(AttemptLog):
    """An execution log that only counts attempts as they start (cheap, for progress)."""

    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.count = 0

    def started(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        self.count += 1

    def finished(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        pass


class _ProgressSleeper:
    """A sleeper the manual clock steps at each due instant: reports progress, runs nothing."""

    def __init__(self, report: Callable[[datetime], None], clock: ManualClock) -> None:
        self._report = report
        self._clock = clock

    def next_due(self) -> datetime | None:
        return None

    def run_due(self) -> None:
        self._report(self._clock.now())

    def idle(self) -> None:
        self._report(self._clock.now())


def run_scenario(
    scenario: Scenario,
    *,
    target_url: str | None = None,
    seed: int | None = None,
    progress: Callable[[datetime, int], None] | None = None,
    progress_interval: float = 0.1,
) -> ScenarioRun:
    """Run ``scenario`` on a manual clock with an in-memory store and check its expectations.

    :param scenario: from :func:`load_scenario`.
    :param target_url: deliver over HTTP to this URL instead of the scenario's target (the
        jobs' ``base_url`` is mapped onto it).
    :param seed: replaces the fault plan's seed.
    :param progress: called with (virtual instant, attempts so far) when the clock stops at a
        due instant, at most once per ``progress_interval`` real seconds; it must not touch the
        emulator. Reporting changes nothing in the run.
    :param progress_interval: real seconds between two progress calls.
    :raises ConfigurationError: when the target app cannot be loaded.
    :return: the attempts, probe values and expectation results.
    """
    delivery = _prepare(scenario, target_url)
    plan = scenario.fault_plan(seed)
    clock = ManualClock(scenario.start)
    counter = _CountingLog() if progress is not None else None
    emulator = Emulator(
        clock,
        store=Store(":memory:"),
        transport=delivery.transport,
        faults=plan,
        project=scenario.project,
        location=scenario.location,
        attempt_log=counter,
    )
    try:
        if progress is not None and counter is not None:
            report, count = progress, counter
            last = [-math.inf]

            def tick(now: datetime) -> None:
                if real_monotonic() - last[0] >= progress_interval:
                    last[0] = real_monotonic()
                    report(now, count.count)

            clock.attach(_ProgressSleeper(tick, clock))
        for job in delivery.jobs:
            emulator.create_job(job)
        for step in scenario.steps:
            if isinstance(step.value, timedelta):
                emulator.advance(step.value)
            elif isinstance(step.value, datetime):
                if step.value < clock.now():
                    raise _problem(
                        scenario.path,
                        f"{step.where}.move_to",
                        f"{step.value.isoformat()} is before the clock "
                        f"({clock.now().isoformat()}); the clock cannot go back.",
                    )
                emulator.move_to(step.value)
            else:
                emulator.run_job(step.value)
        attempts = emulator.attempts()
        end = clock.now()
    finally:
        emulator.close()
    probe_values: dict[str, float | None] = {}
    probe_error = None
    if scenario.probe is not None:
        probe_values, probe_error = _read_probe(scenario, delivery)
    results = evaluate(scenario, attempts, probe_values, probe_error)
    return ScenarioRun(
        scenario, plan.seed, attempts, probe_values, probe_error, results, delivery.description, end
    )


def _read_probe(
    scenario: Scenario, delivery: _Delivery
) -> tuple[dict[str, float | None], str | None]:
    """GET the probe (in-process for an app target, else over HTTP) and read its fields.

    :return: field → number (``None`` when missing or not a number) and an error text, or
        ``None`` when the probe answered JSON.
    """
    assert scenario.probe is not None
    location = scenario.probe.location
    base = scenario.target.base_url
    empty: dict[str, float | None] = dict.fromkeys(scenario.probe.fields)
    try:
        if delivery.app is not None and (
            location.startswith("/")
            or (base is not None and rebase_url(location, base, "") != location)
        ):
            from werkzeug.test import Client

            path = location if location.startswith("/") else rebase_url(location, base or "", "")
            response = Client(delivery.app).get(path or "/", base_url=base or "http://localhost")
            status, text = response.status_code, response.get_data(as_text=True)
        else:
            if location.startswith("/"):
                if delivery.http_base is None:
                    return empty, f"the probe path {location} needs target.base_url or url"
                url = delivery.http_base + location
            elif base is not None and delivery.http_base is not None:
                url = rebase_url(location, base, delivery.http_base)
            else:
                url = location
            import requests

            session = requests.Session()
            session.trust_env = False
            answer = session.get(url, timeout=30)
            status, text = answer.status_code, answer.text
    except Exception as exc:  # the target's own failure: an unmet expectation, not a crash
        return empty, f"GET {location} failed: {type(exc).__name__}: {exc}"
    if not 200 <= status <= 299:
        return empty, f"GET {location} answered {status}"
    try:
        document = json.loads(text)
    except ValueError:
        return empty, f"GET {location} did not answer JSON: {text[:60]!r}"
    values: dict[str, float | None] = {}
    for name, selector in scenario.probe.fields.items():
        values[name] = select(document, selector)
    return values, None


def select(document: Any, selector: str) -> float | None:
    """Read a number from a JSON document by a probe selector.

    >>> select({"sweeps": 3, "reports": [1, 2]}, "sweeps"), select({"a": {"b": [5]}}, "a.b.0")
    (3, 5)
    >>> select({"reports": [1, 2]}, "len(reports)"), select({"x": "y"}, "x")
    (2, None)

    :param document: the parsed JSON answer.
    :param selector: a dotted path, or ``len(path)``.
    :return: the number, or ``None`` when the path is missing or the value not a number.
    """
    match = _SELECTOR_RE.fullmatch(selector)
    counted = match.group("counted") if match else None
    value: Any = document
    for part in (counted or selector).strip().split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    if counted is not None:
        return len(value) if isinstance(value, list | Mapping | str) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def count_runs(attempts: Iterable[Attempt]) -> int:
    """Count the runs a deduplicating target sees.

    :param attempts: attempts of one job.
    :return: distinct ``X-CloudScheduler-ScheduleTime`` values among ``attempts``; an attempt
        without the header counts by its run.
    """
    return len({a.schedule_time or f"run {a.run_id}" for a in attempts})


def evaluate(
    scenario: Scenario,
    attempts: Sequence[Attempt],
    probe: Mapping[str, float | None],
    probe_error: str | None = None,
) -> list[CheckResult]:
    """Check every expectation of ``scenario`` against what happened.

    :param scenario: the scenario whose expectations to check.
    :param attempts: every attempt of the run.
    :param probe: probe field → value.
    :param probe_error: why the probe has no values, if it has none.
    :return: one result per expectation, in order.
    """
    by_job: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_job.setdefault(attempt.job_id, []).append(attempt)
    results = []
    for expectation in scenario.expectations:
        mine = by_job.get(expectation.job, [])

        def resolve(name: str, mine: list[Attempt] = mine) -> float | None:
            head, _, rest = name.partition(".")
            if head == "runs":
                return count_runs(mine)
            if head == "attempts":
                return len(mine)
            if head == "codes":
                return sum(1 for a in mine if a.code == rest)
            if head == "statuses":
                return sum(1 for a in mine if a.response_status == int(rest))
            if head == "probe":
                return probe.get(rest)
            return probe.get(head)

        check = expectation.check
        observed = resolve(expectation.quantity)
        expected = check.expected(resolve)
        details = []
        if check.name is not None and expected is not None:
            details.append(f"{check.name} = {_number(resolve(check.name))}")
        if observed is None or expected is None:
            missing = expectation.quantity if observed is None else str(check.name)
            reason = probe_error or f"{missing} has no numeric value in the probe's answer"
            results.append(CheckResult(expectation, False, observed, expected, reason))
            continue
        ok = check.holds(observed, expected)
        results.append(CheckResult(expectation, ok, observed, expected, "; ".join(details)))
    return results


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
