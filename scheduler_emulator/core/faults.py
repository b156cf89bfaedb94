"""Fault plans: deterministic, seeded faults injected into deliveries.

Cloud Scheduler delivers at least once, Google says
(https://cloud.google.com/scheduler/docs/configuring/deduplicate-job-requests): a run can arrive
twice when an acknowledgement is lost, or when a handler outlives its attempt deadline and is
retried while still running. A :class:`FaultPlan` makes those things happen on purpose, the
same way every time for the same plan and seed::

    plan = FaultPlan(seed=7)
    plan.add(action="lost_ack", job="nightly", run=1)          # 1st run: response lost
    plan.add(action="duplicate", job="report*", probability=0.25, count=2)
    plan.add(action="deadline", job="nightly", run=2, seconds=0.2)
    emulator = Emulator(clock, faults=plan)

Rules match on the job ID (exact or glob), the run (its number among the job's runs, 1-based,
or its ``X-CloudScheduler-ScheduleTime``), the attempt number and a probability. The random draw
of a rule depends only on (seed, rule position, job, run, attempt), so the timeline does not
depend on thread timing or on the order other jobs ran in.

Actions (applied by the engine, recorded on the attempt with ``injected: true``):

- ``duplicate`` — deliver the attempt ``count`` more times with the same headers, after it
  (``concurrent: false``) or at the same time (``concurrent: true``);
- ``lost_ack`` — deliver it, let the target answer, then count the attempt as failed
  (``UNAVAILABLE``) so it is retried under the retry config — at least once even with
  ``retryCount`` 0, as the at-least-once guarantee allows; an attempt that got no answer (a
  refused connection) has none to lose and is recorded as it failed;
- ``deadline`` — count the attempt as ``DEADLINE_EXCEEDED`` after ``seconds`` of real time (the
  target still handling it, or not), so that the retry overlaps the first handler;
- ``status`` — answer as if the target returned ``status``, without calling it;
- ``connection_error`` — fail with ``UNAVAILABLE`` before sending;
- ``delay`` — add ``seconds`` of latency (virtual time on a manual clock) before sending.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import functools
import math
import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

from ..domain.codec import parse_timestamp, show_value
from ..domain.errors import FieldViolation, InvalidArgument
from ..domain.numbers import show_number

__all__ = [
    "ACTIONS",
    "ACTION_FIELDS",
    "AttemptContext",
    "FaultPlan",
    "FaultRule",
    "MATCH_FIELDS",
    "rule_fields",
]

ACTIONS = ("duplicate", "lost_ack", "deadline", "status", "connection_error", "delay")
#: The actions whose firing replaces the delivery, and the other actions each leaves nothing
#: to act on, wherever they stand in the plan (``status`` goes before ``connection_error``).
_REPLACED_BY = {
    "status": frozenset(ACTIONS) - {"status"},
    "connection_error": frozenset(ACTIONS) - {"status", "connection_error"},
}
#: The fields every rule has, whatever its action: what it matches and how often it fires.
MATCH_FIELDS = ("action", "job", "run", "schedule_time", "attempt", "probability", "limit")
#: The fields that narrow a rule to some of a job's attempts.
_NARROWING = ("run", "schedule_time", "attempt")
#: The fields only some actions read, per action: the one list of which field applies to which
#: action. A rule that sets a field its action does not read is refused.
ACTION_FIELDS: Mapping[str, tuple[str, ...]] = {
    "duplicate": ("count", "concurrent"),
    "lost_ack": (),
    "deadline": ("seconds",),
    "status": ("status",),
    "connection_error": (),
    "delay": ("seconds",),
}


#: Bounds of a rule's numbers (documented in docs/faults-and-replay.md). ``delay`` adds at most
#: a day of latency; ``deadline`` gives the handler at most 30 minutes (Cloud Scheduler's
#: longest HTTP attempt deadline); ``duplicate`` sends at most 100 extra copies one after
#: another, or at most 10 at the same time (each concurrent copy is a thread).
MAX_DELAY_SECONDS = 86_400
MAX_DEADLINE_SECONDS = 1_800
MAX_DUPLICATE_COUNT = 100
MAX_CONCURRENT_COPIES = 10
#: A plan's seed is a 64-bit whole number.
MAX_SEED = 2**63 - 1
#: The most rules a plan holds, and the longest ``job`` pattern (a full job name is at most
#: about 700 characters): trial 176's 120,000 rules slowed every attempt, each matched in turn.
MAX_RULES = 1_000
MAX_PATTERN_LENGTH = 1_000


def check_seed(seed: object) -> int:
    """The one check of a fault plan's seed (files, scenarios, the API).

    :raises InvalidArgument: for anything but a whole number from 0 to :data:`MAX_SEED`.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InvalidArgument(
            f"seed must be a whole number from 0 to {MAX_SEED}; got {_show(seed)}.", field="seed"
        )
    return seed


def _as_text(value: object) -> str:
    """What to say of a number given as text: YAML 1.1 (PyYAML) reads ``1e3`` as a string."""
    if not isinstance(value, str):  # (trial 133: true was called text)
        return ""
    with contextlib.suppress(ValueError):
        float(value)
        return " (text, not a number: unquote it; YAML reads 1e3 as text too, 1000 or 1.0e+3 not)"
    return ""


def _show(value: object) -> str:
    """``value`` for a message, in JSON spelling, short (a 5,000-digit number is cut)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return show_number(value)
    return show_value(value, 60)


def rule_fields(action: str) -> tuple[str, ...]:
    """Every field a rule with ``action`` reads: :data:`MATCH_FIELDS`, then its own.

    :param action: one of :data:`ACTIONS`.
    :return: the field names, in that order.
    """
    return (*MATCH_FIELDS, *ACTION_FIELDS.get(action, ()))


def _unread_field(action: str, name: str) -> InvalidArgument | None:
    """The error for ``name`` on a rule of ``action`` when only other actions read it (naming
    the field, the action and the actions that read it), else ``None``."""
    readers = [other for other, extra in ACTION_FIELDS.items() if name in extra]
    if not readers or action in readers:
        return None
    return InvalidArgument(
        f"fault rule field {name!r} does not apply to action {action!r}; only the "
        f"{' and '.join(readers)} action{'s read' if len(readers) > 1 else ' reads'} it.",
        field=name,
    )


def _every(problems: list[InvalidArgument]) -> InvalidArgument:
    """One error naming every problem, a line each, with every field violation."""
    if len(problems) == 1:
        return problems[0]
    every = InvalidArgument("\n".join(p.message for p in problems), field=problems[0].field)
    every.violations = [v for problem in problems for v in problem.violations]
    return every


@dataclass(frozen=True)
class AttemptContext:
    """What a rule can match on.

    :param job_id: the short job ID.
    :param run: the run's number among the job's runs, 1-based.
    :param schedule_time: the run's ``X-CloudScheduler-ScheduleTime`` (``None`` when none).
    :param attempt: 1 for the first try of the run, 2 for its first retry, …
    """

    job_id: str
    run: int
    schedule_time: str | None
    attempt: int


@functools.lru_cache(maxsize=256)
def _instant(text: str | None) -> datetime | None:
    """The instant a ScheduleTime names, or ``None`` when it names none."""
    try:
        return None if text is None else parse_timestamp(text)
    except InvalidArgument:
        return None


@dataclass(frozen=True)
class FaultRule:
    """One fault: where it applies, how likely, and what it does.

    :param action: one of :data:`ACTIONS`.
    :param job: job ID, exact or a glob (``"report*"``); ``"*"`` for every job. A full name
        ``projects/P/locations/L/jobs/ID`` is taken as its ``ID``.
    :param run: only the run with this number (1-based), or ``None`` for any.
    :param schedule_time: only the run with this ScheduleTime header.
    :param attempt: only this attempt of the run (1 = first try), or ``None`` for any.
    :param probability: chance (0–1) that a matching attempt gets the fault.
    :param count: ``duplicate``: how many extra deliveries, 1 to :data:`MAX_DUPLICATE_COUNT`
        (1 to :data:`MAX_CONCURRENT_COPIES` when ``concurrent``).
    :param concurrent: ``duplicate``: send the copies at the same time as the original.
    :param status: ``status``: the HTTP status to pretend the target answered.
    :param seconds: ``delay``: added latency, at most :data:`MAX_DELAY_SECONDS`; ``deadline``:
        real seconds the handler is given before the attempt counts as timed out (default
        0.1), at most :data:`MAX_DEADLINE_SECONDS`. Always finite.
    :param limit: fire at most this many times in all (``None``: no limit).

    A field that only other actions read (``seconds`` on ``duplicate``, ``status`` on
    ``delay``; see :data:`ACTION_FIELDS`) is refused when set to anything but its default —
    and by :meth:`from_json` whenever the key is present — so no entry point (a fault file, a
    scenario, :meth:`FaultPlan.add`, ``POST /_emulator/faults``) silently ignores it.
    """

    action: str
    job: str = "*"
    run: int | None = None
    schedule_time: str | None = None
    attempt: int | None = None
    probability: float = 1.0
    count: int = 1
    concurrent: bool = False
    status: int = 503
    seconds: float = 0.1
    limit: int | None = None

    def __post_init__(self) -> None:
        problems: list[InvalidArgument] = []

        def refuse(message: str, name: str) -> None:
            problems.append(InvalidArgument(message, field=name))

        if not isinstance(self.action, str) or self.action not in ACTIONS:
            near = difflib.get_close_matches(str(self.action), ACTIONS, n=1)  # (trial 78)
            refuse(
                f"action must be one of {', '.join(ACTIONS)}; got {_show(self.action)}"
                + (f'; did you mean "{near[0]}"?' if near else "."),
                "action",
            )
        hints = {  # job: a pattern, "*" when left out; schedule_time: None when left out
            "job": "leave job out for every job; quote a numeric job ID",
            "schedule_time": "quote it: YAML reads an unquoted timestamp as a date",
        }
        for name, hint in hints.items():
            value = getattr(self, name)
            if (value is not None or name == "job") and not isinstance(value, str):
                refuse(f"{name} must be a string; got {_show(value)} ({hint}).", name)
        if isinstance(self.schedule_time, str) and _instant(self.schedule_time) is None:
            refuse(
                'schedule_time must be an RFC 3339 timestamp such as "2026-09-24T02:00:00Z" '
                f"(a ScheduleTime header); got {_show(self.schedule_time)}.",
                "schedule_time",
            )  # fmt: skip  (trial 222: "yesterday" was kept, never to fire)
        if self.job == "":  # (trial 127: stored, matching no job)
            refuse('job must be a job ID or a pattern such as "nightly-*"; got "" (leave job '
                   "out for every job).", "job")  # fmt: skip
        if isinstance(self.job, str) and len(self.job) > MAX_PATTERN_LENGTH:
            refuse(f"job must be at most {MAX_PATTERN_LENGTH} characters; got {len(self.job)}.",
                   "job")  # fmt: skip
        if isinstance(self.job, str) and self.job.startswith("projects/") and "/jobs/" in self.job:
            object.__setattr__(self, "job", self.job.rsplit("/jobs/", 1)[1])  # (trial 114)
        if not isinstance(self.concurrent, bool):
            refuse(f"concurrent must be true or false; got {_show(self.concurrent)}.", "concurrent")
        numbers = {"probability": (0, 1), "seconds": (0, self._longest())}
        for name, (low, high) in numbers.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                refuse(f"{name} must be a number; got {_show(value)}{_as_text(value)}.", name)
            elif isinstance(value, float) and not math.isfinite(value):
                refuse(f"{name} must be a finite number; got {_show(value)}.", name)
            elif not low <= value <= high:
                between = "between 0 and 1" if name == "probability" else f"from 0 to {high}"
                refuse(f"{name} must be {between}; got {_show(value)}.", name)
        most = MAX_CONCURRENT_COPIES if self.concurrent is True else MAX_DUPLICATE_COUNT
        whole = {"count": (1, most), "status": (100, 599)}
        whole |= {name: (1, MAX_SEED) for name in ("run", "attempt", "limit")}
        for name, (low, high) in whole.items():
            value = getattr(self, name)
            if value is None and name not in ("count", "status"):
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                whole_only = name in ("count", "status")
                kind = "a whole number" if whole_only else self._range(name, low, high)
                refuse(f"{name} must be {kind}; got {_show(value)}.", name)
            elif not low <= value <= high:
                refuse(f"{name} must be {self._range(name, low, high)}; got {_show(value)}.", name)
        if self.action in ACTIONS:  # (else what it reads is not known)
            set_fields = [f.name for f in fields(self) if getattr(self, f.name) != f.default]
            unread = (_unread_field(self.action, name) for name in set_fields)
            problems += [p for p in unread if p is not None]
        if problems:
            raise _every(problems)

    def _longest(self) -> float:
        return MAX_DEADLINE_SECONDS if self.action == "deadline" else MAX_DELAY_SECONDS

    def _range(self, name: str, low: int, high: int) -> str:
        if name == "count":
            how = "concurrent copies" if self.concurrent is True else "extra copies"
            return f"from {low} to {high} ({how})"
        if name == "status":
            return "an HTTP status 100-599"
        return f"a whole number from {low} to {high}"

    def matches(self, context: AttemptContext) -> bool:
        """Tell whether the rule applies to ``context`` (before the probability draw)."""
        if self.job != context.job_id and not fnmatch.fnmatchcase(context.job_id, self.job):
            return False
        if self.run is not None and self.run != context.run:
            return False
        if self.schedule_time is not None and (
            _instant(self.schedule_time) != _instant(context.schedule_time)
        ):  # the same instant, however written ("…T06:00:00-04:00" is "…T10:00:00Z")
            return False
        return self.attempt is None or self.attempt == context.attempt

    def covers(self, other: FaultRule) -> bool:
        """Tell whether this rule fires for every attempt ``other`` matches: it always fires
        (probability 1, no limit), its job pattern takes ``other``'s, and each of its run,
        ScheduleTime and attempt is open or the same."""
        job = self.job in ("*", other.job) or (
            not any(c in other.job for c in "*?[") and fnmatch.fnmatchcase(other.job, self.job)
        )
        narrows = any(getattr(self, k) not in (None, getattr(other, k)) for k in _NARROWING)
        return job and not narrows and self.probability == 1 and self.limit is None

    def to_json(self) -> dict[str, Any]:
        """The rule as JSON, only the fields that differ from their defaults."""
        defaults = FaultRule(self.action)
        return {
            key: value
            for key, value in asdict(self).items()
            if key == "action" or value != getattr(defaults, key)
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FaultRule:
        """Build a rule from its JSON/YAML form (the keyword names of :class:`FaultRule`).

        :raises InvalidArgument: for an unknown key or a bad value, naming it.
        """
        if not isinstance(data, Mapping):
            raise InvalidArgument(
                f"a fault rule must be an object; got {_show(data)}.", field="rules"
            )
        known = {f.name for f in fields(cls)}
        problems: list[InvalidArgument] = []  # every one at once (trial 205: one per run)
        for key in data:
            if key not in known:
                near = difflib.get_close_matches(str(key), sorted(known), n=1)  # (trial 73)
                problems.append(
                    InvalidArgument(
                        f"unknown fault rule field {key!r}; "
                        + (f"did you mean {near[0]!r}? " if near else "")
                        + f"known: {', '.join(sorted(known))}.",
                        field=str(key),
                    )
                )
        given = {key: value for key, value in data.items() if key in known}
        if "action" not in given:
            raise _every(
                [*problems, InvalidArgument("a fault rule needs an action.", field="action")]
            )
        try:
            rule = cls(**given)  # checks the action and every value
        except InvalidArgument as exc:
            problems.append(exc)
        named = {v.field for problem in problems for v in problem.violations}
        if given["action"] in ACTIONS:  # a field the action does not read, even at its default
            unread = (_unread_field(given["action"], str(k)) for k in given if k not in named)
            problems += [p for p in unread if p is not None]
        if problems:
            raise _every(problems)
        return rule

    def to_full_json(self) -> dict[str, Any]:
        """The rule with every field its action reads, defaults included, in
        :func:`rule_fields` order (what ``GET /_emulator/faults`` shows)."""
        values = asdict(self)
        return {key: values[key] for key in rule_fields(self.action)}


@dataclass
class FaultPlan:
    """An ordered list of :class:`FaultRule` and the seed of their random draws.

    Thread-safe. ``decide`` is what the engine calls for each attempt.

    :param rules: the rules, applied in order.
    :param seed: seed of every probability draw.
    """

    rules: list[FaultRule] = field(default_factory=list)
    seed: int = 0
    _fired: dict[int, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, rule: FaultRule | Mapping[str, Any] | None = None, **fields: Any) -> FaultRule:
        """Append a rule, given as a :class:`FaultRule`, as its JSON form (a mapping, as in a
        fault plan's ``rules``) or as its keyword fields.

        :raises InvalidArgument: for a bad field (see :class:`FaultRule`).
        :raises TypeError: for a rule of another type (trial 75: a mapping was taken as a rule
            and failed every attempt after).
        :return: the rule added.
        """
        if isinstance(rule, Mapping):
            rule = FaultRule.from_json({**rule, **fields})
        elif rule is not None and not isinstance(rule, FaultRule):
            raise TypeError(f"a fault rule is a FaultRule, a mapping or keywords; got {rule!r}")
        new = rule if rule is not None else FaultRule.from_json(fields)
        with self._lock:
            self.check_room(1)
            self.rules.append(new)
        return new

    def check_room(self, more: int) -> None:
        """Refuse ``more`` rules beyond :data:`MAX_RULES` in all.

        :raises InvalidArgument: (``rules``) naming how many the plan holds.
        """
        if len(self.rules) + more > MAX_RULES:
            raise InvalidArgument(
                f"a fault plan holds at most {MAX_RULES} rules; it holds {len(self.rules)} and "
                f"{more} more were given (clear it: DELETE /_emulator/faults).",
                field="rules",
            )

    def clear(self) -> None:
        """Remove every rule and forget how often they fired."""
        with self._lock:
            self.rules.clear()
            self._fired.clear()

    def fired(self) -> list[int]:
        """How many attempts each rule fired for (matched, within its limit, drawn), in plan
        order; a rule fired beside one that overrides it on the same attempt counts too."""
        with self._lock:
            return [self._fired.get(index, 0) for index in range(len(self.rules))]

    def decide(self, context: AttemptContext) -> list[FaultRule]:
        """Return the rules that fire for this attempt, in plan order."""
        chosen = []
        with self._lock:
            for index, rule in enumerate(self.rules):
                if not rule.matches(context):
                    continue
                if rule.limit is not None and self._fired.get(index, 0) >= rule.limit:
                    continue
                if rule.probability < 1:
                    draw = random.Random(
                        f"{self.seed}:{index}:{context.job_id}:{context.run}:{context.attempt}"
                    ).random()
                    if draw >= rule.probability:
                        continue
                self._fired[index] = self._fired.get(index, 0) + 1
                chosen.append(rule)
        return chosen

    def shadowed(self) -> list[str]:
        """A note for each rule that never acts: one rule of each action acts on an attempt,
        the first that fires (the engine's ``send_with_faults``), so a rule that an earlier one
        of its action :meth:`~FaultRule.covers` never does; nor does one that a ``status`` or
        ``connection_error`` rule covers, anywhere in the plan, as that replaces the delivery.
        Such a plan is valid; the daemon, ``replay`` and the plugin's ``load_faults`` warn."""
        notes = []
        for index, rule in enumerate(self.rules):
            for other, first in enumerate(self.rules):
                if other == index or not first.covers(rule):
                    continue
                if rule.action in _REPLACED_BY.get(first.action, ()):  # (trial 155: unsaid)
                    notes.append(
                        f"rules[{index}] ({rule.action}) never acts: rules[{other}] "
                        f"({first.action}) replaces the delivery of every attempt it matches "
                        "(the target is not called, and no other rule acts)."
                    )
                    break
                if (first.action, rule.action) == ("deadline", "lost_ack"):  # (trial 184)
                    notes.append(
                        f"rules[{index}] (lost_ack) never acts: rules[{other}] (deadline) ends "
                        "every attempt it matches before an answer counts, so none is lost."
                    )
                    break
                if first.action == rule.action and other < index:
                    notes.append(
                        f"rules[{index}] ({rule.action}) never acts: rules[{other}] is the "
                        f"{rule.action} rule of every attempt it matches (one rule of each "
                        "action acts on an attempt)."
                    )
                    break
        return notes

    def unmatched(
        self,
        job_ids: Iterable[str],
        then: str = "it acts on none until such a job exists.",
        positions: Sequence[int] | None = None,
    ) -> list[str]:
        """A note for each rule whose job pattern matches none of ``job_ids`` (a misspelt job
        never fires: trial 60), ending in ``then``; none while there is no job at all. Such a
        plan is valid for a daemon, which warns (the job may be created later); a scenario,
        whose jobs are all it has, refuses it. ``positions`` gives each rule's index as
        written, when the plan holds only some of the rules written."""
        ids = sorted(set(job_ids))
        notes = []
        for index, rule in enumerate(self.rules if ids else []):
            if not any(rule.job == i or fnmatch.fnmatchcase(i, rule.job) for i in ids):
                have = ", ".join(ids[:10]) + (", …" if len(ids) > 10 else "")
                index = index if positions is None else positions[index]
                notes.append(
                    f"rules[{index}] ({rule.action}) names job {rule.job!r}, which no job is "
                    f"(job IDs: {have}): {then}"
                )
        return notes

    def to_json(self) -> dict[str, Any]:
        """``{"seed": …, "rules": [...]}``."""
        with self._lock:
            return {"seed": self.seed, "rules": [rule.to_json() for rule in self.rules]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> FaultPlan:
        """Build a plan from ``{"seed": N, "rules": [...]}`` or a bare list of rules.

        :raises InvalidArgument: for a bad shape, key or value, naming it: every problem of the
            seed and the rules, a line each (and a field violation each).
        """
        if isinstance(data, Mapping):
            unknown = set(data) - {"seed", "rules"}
            if unknown:
                raise InvalidArgument(
                    f"unknown fault plan field(s) {sorted(unknown)}; use seed and rules.",
                    field=sorted(unknown)[0],
                )
            seed, rules = data.get("seed", 0), data.get("rules", [])
        else:
            seed, rules = 0, data
        problems: list[InvalidArgument] = []
        try:
            check_seed(seed)
        except InvalidArgument as exc:
            problems.append(exc)
        if not isinstance(rules, list):
            problems.append(
                InvalidArgument(f"rules must be a list; got {_show(rules)}.", field="rules")
            )
            rules = []
        try:
            cls().check_room(len(rules))
        except InvalidArgument as exc:
            problems.append(exc)
            rules = []
        built = []
        for index, rule in enumerate(rules):
            try:
                built.append(FaultRule.from_json(rule))
            except InvalidArgument as exc:  # say which rule: a plan often holds several alike
                where = f"rules[{index}]: "
                problem = InvalidArgument(
                    where + exc.message.replace("\n", "\n" + where), field=exc.field
                )
                problem.violations = [  # the field's path in the plan, as Google spells one
                    FieldViolation(
                        f"rules[{index}]" + ("" if v.field == "rules" else f".{v.field}"),
                        where + v.description,
                    )
                    for v in exc.violations
                ]
                problems.append(problem)
        if problems:
            raise _every(problems)
        return cls(built, seed)
