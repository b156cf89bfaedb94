"""Reading a scenario file into a :class:`~scheduler_emulator.tools.scenario.model.Scenario`:
every problem reported (file, key path, value), not only the first."""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ...core.faults import FaultPlan, FaultRule, check_seed
from ...domain.cloud_run import parse_cloud_run_job
from ...domain.codec import job_from_json
from ...domain.errors import ApiError, ConfigurationError, FieldViolation
from ...domain.names import qualify_job_name
from ...domain.resources import Job
from ...runtime import DEFAULT_HEADER_CASE, DEFAULT_LOCATION, DEFAULT_PROJECT, EXECUTION_STATES
from ...wire import HEADER_CASES, cloud_run_job_of
from ..cloud_run_file import load_cloud_run_jobs, undefined_runs
from ..documents import read_text
from ..jobs_file import (
    base64_hint,
    bytes_field_warnings,
    each_problem,
    load_document,
    load_jobs_file,
    written_bytes_field,
)
from .app import app_spec_problem, common_origin
from .model import (
    DEFAULT_START,
    PROBE_SELECTOR_RE,
    RUN_STATES,
    STEP_KINDS,
    TOP_LEVEL_KEYS,
    Check,
    Expectation,
    ProbeSpec,
    Scenario,
    Step,
    TargetSpec,
    parse_duration,
    parse_instant,
    problem,
    show,
    unknown_key,
)

__all__ = [
    "load_scenario",
]

_T = TypeVar("_T")

# --------------------------------------------------------------------------------- loading


def _read(path: Path) -> Any:
    # bounded size, YAML and numbers; no lone surrogates
    return load_document(read_text(path, "the scenario"), str(path))


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
    recording = "; it reads as a recording of attempts: replay --attempts FILE --target URL"
    if not isinstance(data, Mapping):
        listed = isinstance(data, list) and any(isinstance(e, Mapping) for e in data)
        raise problem(  # (trial 222: an attempts export read as a scenario)
            path, "", f"a scenario is a mapping of keys; got {show(data)}{recording * listed}."
        )
    if "attempts" in data and not set(data) & set(TOP_LEVEL_KEYS):
        raise problem(path, "", f"not a scenario (no key of one){recording}.")
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            problems.add(
                problem(
                    path,
                    str(key),
                    unknown_key(key, TOP_LEVEL_KEYS),
                )
            )
    merged: dict[str, tuple[Any, Path]] = {}
    if "extends" in data:
        parent = data["extends"]
        if not isinstance(parent, str) or not parent:
            raise problem(path, "extends", f"expected a scenario file path; got {show(parent)}.")
        parent_path = path.parent / parent
        if not parent_path.is_file():
            looked = f"looked for {parent_path.resolve()}, beside the file that extends it"
            raise problem(path, "extends", f"no such file: {show(parent)} ({looked}).")
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
    #: Why each job of a jobs file the runner left out (not an HTTP job) was, by ID.
    left_out: dict[str, str] = field(default_factory=dict)

    def unknown(self, job: Any) -> bool:
        """Tell whether ``job`` is surely not a job of the scenario."""
        return self.complete and job not in self.ids

    def missing(self, job: Any) -> str:
        """What a reference to ``job``, :meth:`unknown`, is refused with."""
        known = ", ".join(sorted(self.ids)) or "none"
        why = f": {self.left_out[job]}" if job in self.left_out else ""
        near = difflib.get_close_matches(str(job), sorted(self.ids), n=1)  # (trial 222)
        why += f"; did you mean {show(near[0])}?" if near and not why else ""
        return f"no job {show(job)} in the scenario (jobs: {known}){why}"


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
                problem(src, key, f"expected an ID such as my-project; got {show(value)}.")
            )
            return default
        return value

    project = an_id("project", DEFAULT_PROJECT)
    location = an_id("location", DEFAULT_LOCATION)

    header_case, case_src = get("header_case", DEFAULT_HEADER_CASE)
    if header_case not in HEADER_CASES:
        choices = ", ".join(HEADER_CASES)
        problems.add(
            problem(case_src, "header_case", f"one of {choices}; got {show(header_case)}.")
        )
        header_case = DEFAULT_HEADER_CASE

    cloud_run_value, cloud_run_src = get("cloud_run_jobs", [])
    files = [cloud_run_value] if isinstance(cloud_run_value, str) else cloud_run_value
    cloud_run_jobs: tuple[Mapping[str, Any], ...] = ()
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        problems.add(
            problem(
                cloud_run_src, "cloud_run_jobs", f"a file or a list of files; got {show(files)}."
            )
        )
    else:
        try:  # named under the key that names the file (trial 216: "missing.yaml: …" alone)
            paths = [cloud_run_src.parent / f for f in files]
            cloud_run_jobs = load_cloud_run_jobs(paths, project=project, location=location)
        except ConfigurationError as exc:
            problems.add(problem(cloud_run_src, "cloud_run_jobs", str(exc)))

    start_value, start_src = get("start")
    start = DEFAULT_START
    if start_value is not None:
        try:
            start = parse_instant(start_value)
        except ValueError as exc:
            problems.add(problem(start_src, "start", str(exc)))

    jobs_value, jobs_src = get("jobs", [])
    job_ids = _JobIds()
    before = len(problems.lines)
    jobs = _jobs(jobs_value, jobs_src, project, location, problems, job_ids)
    jobs_valid = len(problems.lines) == before
    if jobs_valid and not jobs:  # (trial 222: an empty file passed, exit 0, in CI)
        problems.add(problem(jobs_src, "jobs", "a scenario needs at least one HTTP job; got none."))

    steps_value, steps_src = get("steps", [])
    steps = _steps(steps_value, steps_src, job_ids, problems)

    faults_value, faults_src = get("faults", {})
    faults, written = _faults(faults_value, faults_src, problems)
    if faults and job_ids.complete:  # (trials 148, 167: the scenario's jobs are all it has;
        # trial 208: a misspelt job's rule went unsaid beside another problem of a job)
        for note in FaultPlan.from_json(faults).unmatched(
            job_ids.ids, then="the scenario's jobs are all it has.", positions=written
        ):
            problems.add(problem(faults_src, "faults", note))

    target_value, target_src = get("target")
    target = _target(target_value, target_src, problems)
    if target.base_url is None and target.url is not None and jobs_valid:
        origin = problems.check(lambda: common_origin(jobs, target_src), None)
        target = replace(target, base_url=origin)

    probe_value, probe_src = get("probe")
    probe = _probe(probe_value, probe_src, problems)

    expect_value, expect_src = get("expect", {})
    expectations = _expectations(expect_value, expect_src, job_ids, probe, problems)
    starters = {
        j.job_id for j in jobs if cloud_run_job_of(j.http_target.uri if j.http_target else "")
    }
    defined = {
        parse_cloud_run_job(d, project=project, location=location).job_id for d in cloud_run_jobs
    }  # (each one parses: load_cloud_run_jobs checked it)
    for index, job, named in undefined_runs(jobs if jobs_valid else [], defined):  # (a 404 each)
        given = "cloud_run_jobs" in document  # (trial 216: "add the key" of a key given empty)
        there = ", ".join(sorted(defined)) or ("none" if given else "none: add the key")
        problems.add(
            problem(
                jobs_src,
                f"jobs[{index}].httpTarget.uri",
                f"job {job.job_id} runs Cloud Run job {show(named)}, which cloud_run_jobs "
                f"does not define (defined: {there}).",
            )
        )
    for expectation in expectations if jobs_valid else []:  # (such a job would count 0)
        if expectation.quantity.startswith("executions") and expectation.job not in starters:
            problems.add(
                problem(
                    expect_src,
                    f"expect.{expectation.job}.{expectation.quantity}",
                    "the job starts no Cloud Run execution: its URI is not a Cloud Run job's "
                    "jobs/J:run (docs/cloud-run-jobs.md).",
                )
            )

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
        header_case=header_case,
        cloud_run_jobs=cloud_run_jobs,
        left_out=job_ids.left_out,
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
        http = []
        for number, job in enumerate(loaded, 1):  # (trial 73: a traceback; 75: refused)
            if job.http_target is not None:
                http.append(job)
                ids.ids.add(job.job_id)
                continue
            why = f"{value}'s job {number} is not an HTTP job, which the runner leaves out"
            ids.left_out[job.job_id] = why  # (a file start --jobs reads too: left out, said)
            problems.warnings.append(f"warning: {source}: jobs: {job.job_id}: {why}.")
        return http
    if not isinstance(value, list):
        problems.add(
            problem(
                source,
                "jobs",
                f"expected a list of jobs (or a jobs file path); got {show(value)}.",
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
        raise problem(source, where, f"expected a job object; got {show(entry)}.")
    raw_name = entry.get("name")
    if not isinstance(raw_name, str) or not raw_name:
        raise problem(
            source,
            f"{where}.name",
            f"a job ID such as nightly is required; got {show(raw_name)}.",
        )
    try:
        name = qualify_job_name(raw_name, project, location)
    except ApiError as exc:
        raise problem(source, f"{where} ({raw_name})", exc.describe()) from None
    # every problem of the job, as a jobs file's (trial 206: one per run)
    job, refusals = each_problem(entry, lambda data: job_from_json({**data, "name": name}))
    if job is None:
        lines = []
        for refusal in refusals:
            hint = base64_hint(refusal, written_bytes_field(entry, refusal.field or ""))
            lines.append(str(problem(source, f"{where} ({raw_name})", refusal.describe() + hint)))
        raise ConfigurationError("\n".join(lines))
    if job.http_target is None:
        raise problem(
            source, f"{where}.httpTarget", "the scenario runner delivers HTTP targets only."
        )
    if job.name in seen:
        raise problem(source, f"{where}.name", f"duplicate job {show(raw_name)}.")
    return job


def _steps(value: Any, source: Path, job_ids: _JobIds, problems: _Problems) -> list[Step]:
    if not isinstance(value, list):
        problems.add(problem(source, "steps", f"expected a list of steps; got {show(value)}."))
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
        raise problem(
            source,
            where,
            "expected one of {advance: DURATION}, {move_to: RFC3339}, {run_job: JOB_ID}; "
            f"got {show(entry)}.",
        )
    ((kind, raw),) = entry.items()
    if kind not in STEP_KINDS:
        raise problem(source, f"{where}.{kind}", unknown_key(kind, STEP_KINDS, "step"))
    try:
        parsed: timedelta | datetime | str
        if kind == "advance":
            parsed = parse_duration(raw)
        elif kind == "move_to":
            parsed = parse_instant(raw)
        else:
            if not isinstance(raw, str) or job_ids.unknown(raw):
                raise ValueError(job_ids.missing(raw))
            parsed = raw
    except ValueError as exc:
        raise problem(source, f"{where}.{kind}", str(exc)) from None
    return Step(kind, parsed, where)


def _faults(value: Any, source: Path, problems: _Problems) -> tuple[dict[str, Any], list[int]]:
    """The fault plan's JSON with its valid rules, and each one's position in the file's
    ``rules`` (trial 214: a rule after an invalid one was named by its place among the valid)."""
    if value is None:
        return {}, []
    if isinstance(value, str):  # a fault plan file next to the scenario (start --faults)
        path = source.parent / value
        try:
            value, source = load_document(read_text(path, "the fault plan"), str(path)), path
        except ConfigurationError as exc:  # named under the scenario's key that names the file
            problems.add(problem(source, "faults", str(exc)))
            return {}, []
    if isinstance(value, list):
        value = {"rules": value}
    if not isinstance(value, Mapping):
        expected = "expected {seed, rules} (or a fault plan file path)"
        problems.add(problem(source, "faults", f"{expected}; got {show(value)}."))
        return {}, []
    for key in value:
        if key not in ("seed", "rules"):
            problems.add(problem(source, f"faults.{key}", unknown_key(key, ("seed", "rules"))))
    seed = value.get("seed", 0)
    try:
        check_seed(seed)
    except ApiError as exc:
        problems.add(problem(source, "faults.seed", exc.message))
        seed = 0
    rules = value.get("rules", [])
    if not isinstance(rules, list):
        problems.add(
            problem(source, "faults.rules", f"expected a list of rules; got {show(rules)}.")
        )
        return {"seed": seed, "rules": []}, []
    valid, written = [], []
    for index, rule in enumerate(rules):
        key = f"faults.rules[{index}]"
        try:
            FaultRule.from_json(rule)
        except ApiError as exc:  # each bad value of the rule, a line each
            for violation in exc.violations or [FieldViolation("", exc.message)]:
                known = isinstance(rule, Mapping) and violation.field in rule
                where = f"{key}.{violation.field}" if known else key
                problems.add(problem(source, where, violation.description))
            continue
        except TypeError as exc:
            problems.add(problem(source, key, str(exc)))
            continue
        valid.append(dict(rule))
        written.append(index)
    return {"seed": seed, "rules": valid}, written


def _check_url(source: Path, where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise problem(source, where, f"expected an http:// or https:// URL; got {show(value)}.")
    if not urlsplit(value).netloc:
        raise problem(source, where, f"the URL has no host: {show(value)}.")
    return value.rstrip("/")


def _target(value: Any, source: Path, problems: _Problems) -> TargetSpec:
    if value is None:
        return TargetSpec(directory=source.parent)
    if isinstance(value, str):
        value = {"url": value}
    if not isinstance(value, Mapping):
        problems.add(
            problem(source, "target", f"expected {{base_url, app | url}}; got {show(value)}.")
        )
        return TargetSpec(directory=source.parent)
    for key in value:
        if key not in ("base_url", "app", "url"):
            problems.add(
                problem(source, f"target.{key}", unknown_key(key, ("base_url", "app", "url")))
            )
    if "app" in value and "url" in value:
        problems.add(
            problem(source, "target", "give app (in-process) or url (over HTTP), not both.")
        )
    base_url = value.get("base_url")
    if base_url is not None:
        base_url = problems.check(lambda: _check_url(source, "target.base_url", base_url), None)
    url = None
    if "url" in value:
        url = problems.check(lambda: _check_url(source, "target.url", value["url"]), None)
    app = value.get("app")
    refusal = None if app is None else app_spec_problem(app)
    if refusal is not None:
        problems.add(problem(source, "target.app", refusal))
        app = None
    return TargetSpec(base_url, app.strip() if app else None, url, source.parent)


def _probe(value: Any, source: Path, problems: _Problems) -> ProbeSpec | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, Mapping):
        problems.add(problem(source, "probe", f"expected {{path, fields}}; got {show(value)}."))
        return None
    for key in value:
        if key not in ("path", "url", "fields"):
            problems.add(
                problem(source, f"probe.{key}", unknown_key(key, ("path", "url", "fields")))
            )
    location = value.get("path", value.get("url"))
    if not isinstance(location, str) or not location.startswith(("/", "http://", "https://")):
        problems.add(
            problem(
                source,
                "probe.path",
                f'expected a path such as "/sweeps" or an http(s) URL; got {show(location)}.',
            )
        )
        location = "/"
    raw_fields = value.get("fields", [])
    if isinstance(raw_fields, list):
        raw_fields = {name: name for name in raw_fields if isinstance(name, str)}
    if not isinstance(raw_fields, Mapping):
        problems.add(
            problem(
                source,
                "probe.fields",
                f"expected a list of names or name: path; got {show(raw_fields)}.",
            )
        )
        raw_fields = {}
    fields: dict[str, str] = {}
    for name, selector in raw_fields.items():
        where = f"probe.fields.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
            problems.add(
                problem(source, where, f"a field name is a word such as sweeps; got {show(name)}.")
            )
        elif not isinstance(selector, str) or not PROBE_SELECTOR_RE.fullmatch(selector.strip()):
            problems.add(
                problem(
                    source, where, f'expected a dotted path or "len(path)"; got {show(selector)}.'
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
        problems.add(problem(source, "expect", f"expected job ID: checks; got {show(value)}."))
        return []
    probe_fields = set(probe.fields) if probe else set()
    out: list[Expectation] = []

    def add(job: str, quantity: str, raw: Any) -> None:
        where = f"expect.{job}.{quantity}"
        try:
            check = Check.parse(raw)
            if check.name is not None:
                _validate_quantity(check.name, probe_fields, operand=True)
            elif (check.number or 0) < 0 and not quantity.startswith("probe."):  # a count
                raise ValueError(f"a count is never negative; got {show(raw)}")
        except ValueError as exc:
            problems.add(problem(source, where, str(exc)))
            return
        out.append(Expectation(job, quantity, check))

    for job, checks in value.items():
        if job_ids.unknown(job):
            problems.add(problem(source, f"expect.{job}", job_ids.missing(job) + "."))
            continue
        if not isinstance(checks, Mapping):
            problems.add(problem(source, f"expect.{job}", f"expected checks; got {show(checks)}."))
            continue
        seen: set[str] = set()  # a quantity given as codes.OK and in codes: {OK: …} too
        for key, raw in checks.items():
            head, dot, _ = str(key).partition(".")  # codes.OK: 2 as codes: {OK: 2}
            named = head in ("runs", "codes", "statuses", "executions", "probe")
            if named and not dot and isinstance(raw, Mapping):
                pairs = [(f"{key}.{name}", inner) for name, inner in raw.items()]
            elif key in ("runs", "attempts", "executions") or (named and dot):
                pairs = [(str(key), raw)]
            else:
                known = ("runs", "attempts", "codes", "statuses", "executions", "probe")
                said = (
                    f"expected name: check; got {show(raw)}."
                    if named
                    else f"a probe field is checked as {show(f'probe.{key}')} (trial 167)."
                    if key in probe_fields
                    else unknown_key(key, known)
                )
                problems.add(problem(source, f"expect.{job}.{key}", said))
                continue
            for quantity, inner in pairs:
                try:
                    _validate_quantity(quantity, probe_fields)
                    if quantity in seen:
                        raise ValueError("given twice (dotted and in its mapping); keep one.")
                except ValueError as exc:
                    problems.add(problem(source, f"expect.{job}.{quantity}", str(exc)))
                    continue
                seen.add(quantity)
                add(job, quantity, inner)
    return out


def _validate_quantity(name: str, probe_fields: set[str], *, operand: bool = False) -> None:
    head, _, rest = str(name).partition(".")
    if head in ("runs", "attempts", "executions") and not rest:
        return
    if head == "executions" and rest in EXECUTION_STATES:
        return
    if head == "runs" and rest in RUN_STATES:
        return
    if head == "codes" and rest in _RPC_NAMES:
        return
    if head == "statuses" and len(rest) == 3 and rest.isdigit() and 100 <= int(rest) <= 599:
        return
    if head == "probe" and rest in probe_fields:
        return
    if operand and not rest and head in probe_fields:
        return
    if head == "probe":
        known = ", ".join(sorted(probe_fields)) or "none: add a probe with fields"
        raise ValueError(f"no probe field {show(rest)} (probe fields: {known})")
    if head == "codes":  # (trial 148: DEADLINE_EXCEDED got no suggestion)
        near = difflib.get_close_matches(rest.upper(), sorted(_RPC_NAMES), n=1)
        hint = f"did you mean {near[0]}?" if near else "e.g. OK, UNAVAILABLE"
        raise ValueError(f"not a google.rpc code name: {show(rest)} ({hint})")
    if head == "statuses":
        raise ValueError(f"not an HTTP status: {show(rest)}")
    if head == "executions":
        raise ValueError(f"not an execution state: {show(rest)} ({', '.join(EXECUTION_STATES)})")
    if head == "runs":
        raise ValueError(f"not a run state: {show(rest)} ({', '.join(RUN_STATES)})")
    raise ValueError(
        f"unknown quantity {show(name)} (use runs, runs.STATE, attempts, codes.NAME, statuses.N, "
        "executions, executions.STATE, probe.FIELD)"
    )


def _rpc_names() -> frozenset[str]:
    from ...domain.errors import RPC_CODES

    return frozenset(RPC_CODES)


_RPC_NAMES = _rpc_names()
