"""What a scenario file holds, as values: steps, the target, the probe, expectations and
checks, and the parsing of durations and instants they use."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ...core.faults import FaultPlan
from ...domain.codec import parse_timestamp, show_value
from ...domain.errors import ApiError, ConfigurationError
from ...domain.numbers import whole_number
from ...domain.resources import Job
from ...runtime import DEFAULT_HEADER_CASE, DEFAULT_LOCATION, DEFAULT_PROJECT
from ...wire import NaiveDatetimeError, to_instant

__all__ = [
    "Check",
    "DEFAULT_START",
    "Expectation",
    "OPERATORS",
    "PROBE_SELECTOR_RE",
    "RUN_STATES",
    "ProbeSpec",
    "STEP_KINDS",
    "Scenario",
    "Step",
    "TOP_LEVEL_KEYS",
    "TargetSpec",
    "parse_duration",
    "parse_instant",
    "problem",
    "show",
]

#: Where a scenario's clock starts when it sets no ``start``.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
TOP_LEVEL_KEYS = (
    "extends",
    "start",
    "project",
    "location",
    "header_case",
    "cloud_run_jobs",
    "jobs",
    "steps",
    "faults",
    "target",
    "probe",
    "expect",
)
STEP_KINDS = ("advance", "move_to", "run_job")
#: The ``runs.STATE`` quantities: each key counts a job's runs whose ``state`` (as
#: ``GET /_emulator/runs`` shows it, at the scenario's end) is the value.
RUN_STATES = {"succeeded": "succeeded", "gave-up": "gave up", "retrying": "retrying"}
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
    r"(?:(?P<number>-?\d+)|(?P<name>[A-Za-z_][\w.]*(?:-[A-Za-z][\w.]*)*)"  # (runs.gave-up)
    r"(?:\s*(?P<sign>[+-])\s*(?P<offset>\d+))?)\s*"
)
#: A probe field's selector: a dotted path (group ``plain``) or ``len(path)`` (group
#: ``counted``), as :class:`ProbeSpec` holds them.
PROBE_SELECTOR_RE = re.compile(r"(?:len\((?P<counted>[^()]+)\)|(?P<plain>[^()]+))")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def show(value: Any) -> str:
    """A value as the scenario file would spell it, shortened (never serialised whole).

    :param value: any value read from a scenario file.
    :return: an aware datetime in ISO 8601, anything else as
        :func:`~scheduler_emulator.domain.codec.show_value` renders it (at most 80 characters).
    """
    if isinstance(value, datetime):
        return value.isoformat()
    return show_value(value)


def unknown_key(key: Any, known: Sequence[str], what: str = "key") -> str:
    """The problem of a ``key`` a scenario file has no use for, with the one meant when one of
    ``known`` is close (trial 82: ``step:`` for ``steps:``)::

        >>> unknown_key("step", ("start", "steps", "expect"))
        'unknown key "step"; did you mean "steps"? (known: start, steps, expect).'
    """
    near = difflib.get_close_matches(str(key), list(known), n=1)
    hint = f"; did you mean {show(near[0])}?" if near else ""
    return f"unknown {what} {show(key)}{hint} (known: {', '.join(known)})."


def problem(source: Path | str, path: str, message: str) -> ConfigurationError:
    """One problem of a scenario file, as every scenario module reports it.

    :param source: the file.
    :param path: the key path (``"steps[2].advance"``), ``""`` for the whole file.
    :param message: what is wrong, naming the value.
    :return: the error to raise or collect: ``"<file>: <path>: <message>"``.
    """
    where = f"{source}: {path}: " if path else f"{source}: "
    return ConfigurationError(where + message)


# ------------------------------------------------------------------------------- value parsing


#: The longest step a scenario may take at once (100 years): a longer one would move the clock
#: past the last instant a date can hold.
MAX_STEP_SECONDS = 100 * 365.25 * 86_400


def parse_duration(value: Any) -> timedelta:
    """Parse a step's duration: seconds as a number, or ``"7d"``, ``"3600s"``, ``"1h30m"``…

    Units: ``w``, ``d``, ``h``, ``m``, ``s``, ``ms``; parts add up (``"1d12h"``).

    :param value: a non-negative number of seconds or such a string, at most 100 years
        (:data:`MAX_STEP_SECONDS`).
    :raises ValueError: for anything else, saying what is accepted.
    :return: the duration.
    """
    seconds = _duration_seconds(value)
    if seconds is None and str(value).startswith("-"):  # (trial 73: clock --advance=-5m)
        raise ValueError(f"a duration is never negative (time moves forward); got {show(value)}")
    if seconds is None:
        raise ValueError(
            f'not a duration: {show(value)} (use seconds, or a number with a unit such as "7d", '
            '"3600s", "90m", "1h30m")'
        )
    if seconds > MAX_STEP_SECONDS:
        raise ValueError(f"a step may advance at most 36525d (100 years); got {show(value)}")
    return timedelta(seconds=seconds)


def _duration_seconds(value: Any) -> float | None:
    """The seconds ``value`` stands for (finite, non-negative), or ``None`` when it is no
    duration."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:
            return math.inf
        if math.isnan(seconds) or seconds < 0:
            raise ValueError(f"a duration must be a non-negative number; got {show(value)}")
        return seconds
    if isinstance(value, str):
        text = value.replace(" ", "")
        parts = _DURATION_PART.findall(text)
        if text and "".join(n + u for n, u in parts) == text:
            return sum(float(n) * _UNITS[u] for n, u in parts)
        try:
            seconds = float(text)
        except ValueError:
            return None
        if seconds >= 0:  # infinite for thousands of digits: refused as too long a step
            return seconds
    return None


def parse_instant(value: Any) -> datetime:
    """Parse an RFC 3339 instant with a UTC offset (YAML may already have made it a datetime).

    :param value: ``"2026-09-24T02:00:00Z"`` or an aware :class:`datetime`.
    :raises ValueError: for a naive or unparsable value.
    :return: the instant in UTC.
    """
    if isinstance(value, datetime):
        try:
            return to_instant(value, "the time")
        except NaiveDatetimeError:
            raise NaiveDatetimeError(
                f"{show(value)} has no UTC offset; write it as RFC 3339 such as "
                '"2026-09-24T02:00:00Z"'
            ) from None
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
                f'not a check: {show(value)} (use a whole number, or "OP VALUE" with OP one of '
                "==, !=, <, <=, >, >= and VALUE a number or a quantity such as runs, e.g. "
                '"== runs")'
            )
        op = match.group(1) or "=="
        if match.group("number") is not None:
            number = whole_number(match.group("number"))
            return cls(op, number=number, text=f"{op} {number}")
        name = match.group("name")
        offset = whole_number(match.group("offset") or "0") * (
            -1 if match.group("sign") == "-" else 1
        )
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

        :return: e.g. ``"advance 3d"``, ``"advance 1h30m"``, ``"run_job nightly"``.
        """
        if isinstance(self.value, datetime):
            return f"{self.kind} {self.value.isoformat().replace('+00:00', 'Z')}"
        if isinstance(self.value, timedelta):
            return f"{self.kind} {duration_text(self.value)}"
        return f"{self.kind} {self.value}"


def duration_text(value: timedelta) -> str:
    """``value`` in the units a scenario writes it with, largest first (what
    :func:`parse_duration` reads back).

    >>> duration_text(timedelta(days=3)), duration_text(timedelta(seconds=5400.5))
    ('3d', '1h30m0.5s')
    >>> duration_text(timedelta(0))
    '0s'
    """
    days, rest = divmod(value.total_seconds(), 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = zip((days, hours, minutes, seconds), "dhms", strict=True)
    return "".join(f"{n:g}{unit}" for n, unit in parts if n) or "0s"


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
    :param quantity: ``runs``, ``runs.STATE``, ``attempts``, ``codes.NAME``, ``statuses.N``,
        ``executions``, ``executions.STATE`` or ``probe.FIELD``.
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
    :param header_case: how attempts spell header names (``google``, ``lower``, ``canonical``).
    :param cloud_run_jobs: the Cloud Run jobs that ``jobs/J:run`` URIs run locally (the
        decoded definitions of the files the scenario's ``cloud_run_jobs`` names).
    :param left_out: why each job of its jobs file the runner left out was, by job ID (the
        report says it: trial 183).
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
    header_case: str = DEFAULT_HEADER_CASE
    cloud_run_jobs: tuple[Mapping[str, Any], ...] = ()
    left_out: Mapping[str, str] = field(default_factory=dict)

    def fault_plan(self, seed: int | None = None) -> FaultPlan:
        """A fresh fault plan (rule limits count from zero).

        :param seed: replaces the scenario's seed when given.
        :return: the plan.
        """
        plan = FaultPlan.from_json(self.faults)
        if seed is not None:
            plan.seed = seed
        return plan
