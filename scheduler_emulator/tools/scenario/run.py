"""Running a scenario on a manual clock and checking its expectations."""

from __future__ import annotations

import io
import json
import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from ...domain.attempts import Attempt, target_called
from ...realtime import real_monotonic
from ...runtime import AttemptLog, Emulator, ManualClock, MountTransport, Store, runs_page
from ..timeline import plural
from .app import Delivery, prepare_delivery, rebase_url
from .model import PROBE_SELECTOR_RE, RUN_STATES, Expectation, Scenario, problem

__all__ = [
    "CheckResult",
    "ScenarioRun",
    "count_runs",
    "evaluate",
    "run_scenario",
    "select",
]

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
    :param runs: every run newest first, as ``GET /_emulator/runs`` shows it (its state: how
        it ended, or when its next attempt is due).
    :param executions: the Cloud Run executions its ``jobs/J:run`` attempts started, in
        creation order, as ``GET /_emulator/executions`` shows them (a scheduler attempt
        answered 200 says nothing of how its execution ended).
    :param fired: how many attempts each fault rule fired for, in plan order
        (:meth:`~scheduler_emulator.core.faults.FaultPlan.fired`).
    :param next_fire: job name → its next scheduled time after ``end`` (UTC), ``None`` for
        one that will not fire again (paused, or a schedule with no later time).
    """

    scenario: Scenario
    seed: int
    attempts: list[Attempt]
    probe: dict[str, float | None]
    probe_error: str | None
    results: list[CheckResult]
    delivery: str
    end: datetime
    runs: list[dict[str, Any]]
    executions: list[dict[str, Any]]
    fired: list[int]
    next_fire: dict[str, datetime | None]

    @property
    def ok(self) -> bool:
        """``True`` when every expectation held."""
        return all(result.ok for result in self.results)

    @property
    def unmet(self) -> list[CheckResult]:
        """The expectations that did not hold."""
        return [result for result in self.results if not result.ok]

    def rule_fired(self, index: int) -> str:
        """How often fault rule ``index`` fired: ``"fired for 2 attempts"``, or ``"never
        fired"`` (trial 184: a rule that never fired could not be seen)."""
        times = self.fired[index]
        return f"fired for {plural(times, 'attempt')}" if times else "never fired"

    @property
    def run_states(self) -> str:
        """How the runs stand at the end, e.g. ``"5 runs: 4 succeeded, 1 gave up"`` (trial
        184: every run gave up under expectations that held, and only the attempts said so),
        then the Cloud Run executions they started, by state (trial 216: "6 succeeded" of runs
        whose executions failed: a ``:run`` is answered 200 whatever its execution does)."""
        states = [run["state"] for run in self.runs]
        order = (*RUN_STATES.values(), "in progress")
        counts = [f"{n} {state}" for state in order if (n := states.count(state))]
        runs = plural(len(states), "run")
        said = f"{runs}: {', '.join(counts)}" if counts else runs
        if not self.executions:
            return said
        ended = Counter(str(e.get("state")) for e in self.executions)
        by_state = ", ".join(f"{n} {state}" for state, n in sorted(ended.items()))
        return f"{said}; {plural(len(self.executions), 'Cloud Run execution')}: {by_state}"


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
    :raises ConfigurationError: when the target app cannot be loaded, or the probe's path
        has no target to go to (before anything runs).
    :return: the attempts, probe values and expectation results.
    """
    delivery = prepare_delivery(scenario, target_url)
    probe = scenario.probe
    if probe and probe.location.startswith("/") and not (delivery.app or delivery.http_base):
        raise problem(
            scenario.path,
            "probe.path",
            f"{probe.location} is a path, and the target has no address to put it after: "
            "give target.base_url, target.url or target.app, or probe.url.",
        )
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
        header_case=scenario.header_case,
        cloud_run_jobs=scenario.cloud_run_jobs,
        attempt_log=counter,
    )
    emulator.cloud_run.ids = random.Random(plan.seed)  # execution names: the same every run
    emulator.cloud_run.workdir = scenario.path.parent  # task commands beside the scenario
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
                try:
                    clock.now() + step.value
                except OverflowError:
                    raise problem(
                        scenario.path,
                        f"{step.where}.advance",
                        f"would move the clock past the last date there is (from "
                        f"{clock.now().isoformat()}).",
                    ) from None
                emulator.advance(step.value)
            elif isinstance(step.value, datetime):
                if step.value < clock.now():
                    raise problem(
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
        runs, _ = runs_page(
            emulator.store, page_size=len(attempts), now=end, config=emulator.job_config
        )
        executions = [e.to_json() for e in emulator.cloud_run.store.list(limit=None)]
        next_fire = {job.name: emulator.upcoming(job.name).next_fire for job in delivery.jobs}
        probe_values: dict[str, float | None] = {}
        probe_error = None
        if scenario.probe is not None:  # (before the close: an ASGI app's loop is still up)
            probe_values, probe_error = _read_probe(scenario, delivery)
    finally:
        emulator.close()
    results = evaluate(scenario, attempts, probe_values, probe_error, executions, runs)
    return ScenarioRun(
        scenario,
        plan.seed,
        attempts,
        probe_values,
        probe_error,
        results,
        delivery.description
        + (
            "; jobs/J:run URIs start its Cloud Run jobs, run locally"
            if scenario.cloud_run_jobs
            else ""
        ),
        end,
        runs,
        executions,
        plan.fired(),
        next_fire,
    )


def _read_probe(
    scenario: Scenario, delivery: Delivery
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
            path = location if location.startswith("/") else rebase_url(location, base or "", "")
            caller = cast(MountTransport, delivery.transport).asgi_caller(delivery.app)
            if caller is not None:  # the loop its deliveries ran on (trial 104: a FastAPI app)
                url = f"{(base or 'http://localhost').rstrip('/')}{path or '/'}"
                answer = caller.request("GET", url, {}, timeout_seconds=30)
                status, text = answer.status_code, answer.text
            else:
                from werkzeug.test import Client

                response = Client(delivery.app).get(
                    path or "/", base_url=base or "http://localhost"
                )
                status, text = response.status_code, response.get_data(as_text=True)
        else:
            if location.startswith("/"):
                url = f"{delivery.http_base}{location}"  # (run_scenario checked it has one)
            elif base is not None and delivery.http_base is not None:
                url = rebase_url(location, base, delivery.http_base)
            else:
                url = location
            import requests

            session = requests.Session()
            session.trust_env = False
            try:
                answer = session.get(url, timeout=30)
            except requests.ConnectionError:  # (its text is urllib3's whole repr)
                return empty, f"GET {location} failed: nothing answers at {url}"
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
    match = PROBE_SELECTOR_RE.fullmatch(selector)
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
    :return: distinct ``X-CloudScheduler-ScheduleTime`` values among ``attempts`` the target
        was called with (not those an injected status or connection error stood in for: trial
        208); an attempt without the header counts by its run.
    """
    called = (a for a in attempts if target_called(a.debug_info))
    return len({a.schedule_time or f"run {a.run_id}" for a in called})


def evaluate(
    scenario: Scenario,
    attempts: Sequence[Attempt],
    probe: Mapping[str, float | None],
    probe_error: str | None = None,
    executions: Sequence[Mapping[str, Any]] = (),
    runs: Sequence[Mapping[str, Any]] = (),
) -> list[CheckResult]:
    """Check every expectation of ``scenario`` against what happened.

    :param scenario: the scenario whose expectations to check.
    :param attempts: every attempt of the run.
    :param probe: probe field → value.
    :param probe_error: why the probe has no values, if it has none.
    :param executions: the Cloud Run executions the run started, as
        :meth:`~scheduler_emulator.runtime.Execution.to_json` gives them (``schedulerJob``
        names the scheduler job whose attempt started one).
    :param runs: every run as ``GET /_emulator/runs`` shows it (``job``: its full name), for
        the ``runs.STATE`` quantities.
    :return: one result per expectation, in order.
    """
    by_job: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_job.setdefault(attempt.job_id, []).append(attempt)
    results = []
    for expectation in scenario.expectations:
        mine = by_job.get(expectation.job, [])
        started = [
            e for e in executions if e.get("schedulerJob", "").rsplit("/", 1)[-1] == expectation.job
        ]
        states = [r["state"] for r in runs if r["job"].rsplit("/", 1)[-1] == expectation.job]

        def resolve(
            name: str,
            mine: list[Attempt] = mine,
            started: list[Mapping[str, Any]] = started,
            states: list[str] = states,
        ) -> float | None:
            head, _, rest = name.partition(".")
            if head == "runs":
                return states.count(RUN_STATES[rest]) if rest else count_runs(mine)
            if head == "attempts":
                return len(mine)
            if head == "codes":
                return sum(1 for a in mine if a.code == rest)
            if head == "statuses":
                return sum(1 for a in mine if a.response_status == int(rest))
            if head == "executions":
                return sum(1 for e in started if rest in ("", e["state"]))
            if head == "probe":
                return probe.get(rest)
            return probe.get(head)

        check = expectation.check
        observed = resolve(expectation.quantity)
        expected = check.expected(resolve)
        details = []
        if check.name is not None and expected is not None:
            details.append(f"{check.name} = {_number(resolve(check.name))}")
            if check.offset:  # (trial 132: runs + 1's value went unsaid)
                details[-1] += f", so {check.text.split(maxsplit=1)[1]} = {_number(expected)}"
        if observed is None or expected is None:
            missing = expectation.quantity if observed is None else str(check.name)
            fields = scenario.probe.fields if scenario.probe else {}
            selector = fields.get(missing.removeprefix("probe."))  # (trial 206: unnamed)
            at = f" at {selector!r}" if selector else ""
            reason = probe_error or f"{missing} has no numeric value{at} in the probe's answer"
            results.append(CheckResult(expectation, False, observed, expected, reason))
            continue
        ok = check.holds(observed, expected)
        results.append(CheckResult(expectation, ok, observed, expected, "; ".join(details)))
    return results


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
