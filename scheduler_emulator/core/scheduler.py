"""The scheduler core: given instants and attempt outcomes, decide what happens next.

No I/O, no threads, no clock: every method takes "now" (an aware UTC datetime) and returns
its decisions as values, which the runtime (:mod:`scheduler_emulator.runtime._emulator`) carries
out — persisting runs, sending attempts, recording skipped times — in order. The same inputs
give the same decisions, whichever clock drives the runtime::

    >>> from datetime import UTC, datetime, timedelta
    >>> from scheduler_emulator.domain.resources import HttpTarget, Job
    >>> core = Scheduler()
    >>> noon = datetime(2026, 9, 24, 12, tzinfo=UTC)
    >>> job = Job("projects/p/locations/l/jobs/tick", schedule="*/5 * * * *",
    ...           http_target=HttpTarget("http://svc.test/"))
    >>> _ = core.put(job, noon - timedelta(seconds=1))
    >>> [type(d).__name__ for d in core.due(noon)]
    ['StartAttempt', 'SaveNextFire']

Rules (those Google leaves open are our pinned decisions, docs/differences-from-production.md):

- One timer heap of ``(instant, seq, kind, job, run)`` entries for every job: fire times,
  pending retries, and the ends of attempts that last past the instant they were recorded
  (a ``delay``/``deadline`` fault on a manual clock). A popped entry counts only if it still
  matches the job's live state; stale entries are dropped, and the heap is compacted when they
  outnumber the live ones.
- At most one *scheduled* run of a job is outstanding, until its last attempt has *ended* (its
  recorded end time, not when the call returned). Scheduled times that pass meanwhile are
  missed: the earliest gets one delayed run when the current run ends, the others are
  recorded as skipped. Forced runs (RunJob) neither wait for nor block scheduled runs.
- Whether and when a failed attempt is retried is :func:`~scheduler_emulator.domain.retry.
  next_attempt_time`.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from ..domain.attempts import EMULATOR_DOWN, RUN_STILL_GOING, Run, SkippedRun
from ..domain.errors import AlreadyExists, NotFound
from ..domain.resources import Job, State, Status
from ..domain.retry import (
    GAVE_UP_DELETED,
    GAVE_UP_PAUSED,
    gave_up_because,
    max_attempts,
    next_attempt_time,
)
from ..domain.schedule import DEFAULT_DST_POLICY, DST_POLICIES, Schedule, parse_schedule
from ..wire import format_schedule_time, to_instant

__all__ = [
    "AttemptEnd",
    "COMPACT_SLACK",
    "Decision",
    "MAX_DOWNTIME_SKIPS",
    "RecordSkipped",
    "SaveNextFire",
    "SaveRun",
    "Scheduler",
    "StartAttempt",
    "TIMERS_PER_JOB",
    "Upcoming",
]

_FIRE, _RETRY, _END = "fire", "retry", "end"
#: Timers a job keeps live at once (a fire time, a retry, attempt ends...): the heap is compacted
#: when it holds more than this many per job plus :data:`COMPACT_SLACK`.
TIMERS_PER_JOB = 4
#: How many stale timers (left by updates, pauses and deletions) the heap may hold beyond
#: :data:`TIMERS_PER_JOB` per job before they are dropped.
COMPACT_SLACK = 1024


@dataclass(frozen=True)
class StartAttempt:
    """Start the next attempt of ``run`` now: persist the run (``new_run``: insert it), build
    and send the attempt, then report its end with :meth:`Scheduler.attempt_ended`.

    :param job: the job as configured at this instant.
    :param run: the run, with ``attempts`` already counting this attempt.
    :param new_run: this is the run's first attempt.
    """

    job: Job
    run: Run
    new_run: bool


@dataclass(frozen=True)
class SaveRun:
    """Persist the progress of ``run``: a retry scheduled (``next_attempt_at``) or the run
    finished (``finished``)."""

    run: Run


@dataclass(frozen=True)
class RecordSkipped:
    """Record that a scheduled time was skipped (the job's previous run was still going,
    or the emulator was not running)."""

    skipped: SkippedRun


@dataclass(frozen=True)
class SaveNextFire:
    """Persist the job's next scheduled time (UTC, ``None``: none), so that a restart can tell
    which scheduled times passed while the emulator was not running."""

    job: str
    next_fire: datetime | None


@dataclass(frozen=True)
class SaveJobState:
    """Persist the output-only fields an attempt's end changes: the job's state, status and
    last attempt time."""

    job: str
    state: State
    status: Status | None
    last_attempt_time: datetime | None


Decision = StartAttempt | SaveRun | RecordSkipped | SaveNextFire | SaveJobState


class Upcoming(NamedTuple):
    """What comes next for a job (:meth:`Scheduler.upcoming`); each ``None`` when there is none.

    :ivar next_fire: its next scheduled time (UTC; ``None`` while paused or with none left).
    :ivar retry: when its scheduled run's pending retry is due (UTC): the job's
        ``scheduleTime`` then, and its next scheduled time will run late or be skipped.
    :ivar forced_retry: when the first pending retry of a forced run is due (UTC): the
        scheduled times go on beside it.
    :ivar missed: the scheduled time missed while its run went on, which runs late as that run
        ends (in the job's zone).
    """

    next_fire: datetime | None = None
    retry: datetime | None = None
    forced_retry: datetime | None = None
    missed: datetime | None = None


#: At most this many scheduled times per job are recorded as skipped for the time the
#: emulator was not running; longer gaps are cut short.
MAX_DOWNTIME_SKIPS = 100


@dataclass(frozen=True)
class AttemptEnd:
    """How an attempt ended, as the core needs it.

    :param code: google.rpc code name (``"OK"`` on success).
    :param status: the job status it leaves (``Status()`` for OK).
    :param end_time: the attempt's recorded end (aware UTC); may be later than "now" when a
        fault added latency on a manual clock.
    :param extra_retry: a lost acknowledgement earned the run a retry beyond its config.
    :param uncounted: the attempt is retried whatever the retry config and does not count
        against ``retryCount`` (an App Engine target's 503).
    :param attempt: the attempt's number in its run (1 for the first).
    :param start_time: the attempt's recorded start; the job's last attempt time becomes it if
        this is the job's latest attempt (after a restart, before any start: if it is later than
        the stored one). ``None``: the start the core decided stands.
    """

    code: str
    status: Status
    end_time: datetime
    extra_retry: bool = False
    uncounted: bool = False
    attempt: int = 0
    start_time: datetime | None = None


@dataclass
class _JobState:
    """Live state of one job."""

    job: Job
    schedule: Schedule
    seq: int
    status: Status | None = None
    last_attempt_time: datetime | None = None
    last_attempt: tuple[int, int] | None = None  # (run id, attempt number) it belongs to
    next_fire: datetime | None = None  # in the job's zone (fold matters for the header)
    next_fire_utc: datetime | None = None
    active: Run | None = None  # the outstanding scheduled run
    missed: datetime | None = None  # earliest scheduled time missed while ``active`` ran
    runs: dict[int, Run] = field(default_factory=dict)  # every unfinished run, forced included
    ending: dict[int, AttemptEnd] = field(default_factory=dict)  # run id -> end still to come
    runs_started: int = 0
    # after a late run at a restart, the next fire time (the times between are accounted for)
    resume: datetime | None = None
    slow: bool = False  # its last attempt sent on a real clock lasted SLOW_ATTEMPT or more


#: An attempt that lasted this long from its send to its end makes its job *slow*: at an
#: instant when many jobs fall due, a slow job's decisions come after the others', so that a
#: minute's healthy jobs are never sent behind hundreds whose targets drip their answers.
SLOW_ATTEMPT = timedelta(seconds=1)


#: Less than any schedule's step: ``next_after(t - _TICK)`` is the first fire time at or after t.
_TICK = timedelta(microseconds=1)


class Scheduler:
    """Job registry, run state machine and timers of one emulator (see the module docstring).

    :param dst_policy: ``"absolute"`` (the default: wall-clock matching on absolute minutes) or
        ``"vixie"``.
    :param force_run_schedule_time: ``"next"`` (the default: forced runs carry the next
        scheduled time) or ``"omit"`` (no ScheduleTime header on forced runs).
    :raises ValueError: for another ``dst_policy`` or ``force_run_schedule_time``.
    """

    def __init__(
        self, *, dst_policy: str = DEFAULT_DST_POLICY, force_run_schedule_time: str = "next"
    ):
        if dst_policy not in DST_POLICIES:  # (another was taken as "absolute", said nothing)
            raise ValueError(f"dst_policy must be 'absolute' or 'vixie'; got {dst_policy!r}.")
        if force_run_schedule_time not in ("next", "omit"):
            raise ValueError(
                "force_run_schedule_time must be 'next' or 'omit'; "
                f"got {force_run_schedule_time!r}."
            )
        self.dst_policy = dst_policy
        self.force_run_schedule_time = force_run_schedule_time
        self._jobs: dict[str, _JobState] = {}
        self._timers: list[tuple[datetime, int, str, str, int]] = []
        self._seq = itertools.count()
        self._job_seq = itertools.count(1)
        self._run_ids = itertools.count(1)
        self._began: datetime | None = None  # the instant time started or resumed from
        #: The emulator is stopping: a run's end starts no delayed run of a missed time (it could
        #: not be sent, and would spend an attempt: trial 142); the time stays owed in the store.
        self.stopping = False
        #: The jobs the change under way touched, as they were before it (``None``: a job it
        #: created); ``None`` when no change can be undone (:meth:`checkpoint`).
        self._before: dict[str, _JobState | None] | None = None
        #: The last ScheduleTime header made, by its instant: the jobs sharing a schedule fire
        #: at one instant, the same object (``Schedule.next_after`` keeps its last answer).
        self._last_header: tuple[datetime | None, str | None] = (None, None)

    # ------------------------------------------------------------------------- jobs

    def parse(self, job: Job) -> Schedule:
        """Parse the job's schedule in its time zone with this core's DST policy.

        :raises InvalidArgument: for a bad schedule or time zone.
        """
        return parse_schedule(job.schedule, job.time_zone, dst_policy=self.dst_policy)

    def put(
        self,
        job: Job,
        now: datetime,
        *,
        reschedule: bool = True,
        create: bool = False,
        from_start: bool = False,
    ) -> tuple[Job, list[Decision]]:
        """Add or replace ``job``; return it with its output-only fields, and the decisions.

        Replacing keeps the job's runs in progress. With ``reschedule`` the next fire time is
        computed from ``now`` (create, update, resume: missed times are not run); otherwise an
        existing one is kept. Pausing drops pending retries of scheduled runs (the decisions save
        those runs).

        :param create: refuse to replace an existing job (CreateJob).
        :param from_start: the job is loaded at start-up (a jobs file): at the instant time
            started from (:meth:`restore`'s ``now``), a fire time at that very instant counts,
            unless the store already recorded its run. Otherwise the first fire time is
            strictly after ``now`` (a job created at 05:00 first runs at the next time).
        :raises InvalidArgument: for a bad schedule or time zone (nothing changes).
        :raises AlreadyExists: with ``create``, if the job exists.
        """
        schedule = self.parse(job)
        state = self._jobs.get(job.name)
        if create and state is not None:
            raise AlreadyExists(f"Job {job.name} already exists.")
        decisions: list[Decision] = []
        created = state is None
        self._note(job.name, state)
        if state is None:
            state = _JobState(job, schedule, next(self._job_seq))
            self._jobs[job.name] = state
            reschedule = True
        else:
            state.job, state.schedule = job, schedule
        state.status, state.last_attempt_time = job.status, job.last_attempt_time
        if job.state != State.ENABLED:
            self._set_next_fire(state, None)
            if job.state == State.PAUSED:
                decisions.extend(self._cancel_retries(state, now))
        elif reschedule or state.next_fire is None:
            at_start = from_start and now == self._began
            unrecorded = created or state.next_fire_utc == now
            self._set_next_fire(state, self._first_fire(schedule, now, at_start and unrecorded))
        return self.view(state), decisions

    def remove(self, name: str, now: datetime) -> list[Decision]:
        """Forget the job: no further runs, retries or ends are acted on; its open runs (a
        retry pending, an attempt in flight) end as given up, ``job deleted``, and a time
        missed while its run went on, owed a late run, is recorded skipped at ``now``, as a
        pause records it (trial 213: dropped unrecorded).

        :raises NotFound: if there is no such job.
        """
        state = self._jobs.pop(name, None)
        if state is None:
            raise NotFound("Job not found.")
        self._before = None  # a removal is stored first: never undone
        owed: list[Decision] = (
            [] if state.missed is None else [self._skip(state, state.missed, now)]
        )
        return owed + [self._give_up(state, run, GAVE_UP_DELETED) for run in [*state.runs.values()]]

    def clear(self) -> None:
        """Forget every job and timer."""
        self._jobs.clear()
        self._timers.clear()
        self._before = None

    # ------------------------------------------------------------------------- undo

    def checkpoint(self) -> None:
        """Start a change that :meth:`rollback` can undo: from now on, each job the core's
        calls touch is kept as it was first. A new checkpoint, an attempt's end
        (:meth:`attempt_ended`: it happened), a removal or :meth:`clear` ends the change
        under way, which can then no longer be undone."""
        self._before = {}

    def rollback(self) -> bool:
        """Undo the change begun at the last :meth:`checkpoint` (its store refused it): every
        job it touched is back as it was — configuration, state, next fire time, runs and
        pending retries, the timers of each — and a job it created is gone.

        :return: ``True`` if undone; ``False`` if the change had ended meanwhile (see
            :meth:`checkpoint`), in which case nothing is undone.
        """
        before, self._before = self._before, None
        if before is None:
            return False
        for name, state in before.items():
            if state is None:
                self._jobs.pop(name, None)
                continue
            self._jobs[name] = state
            if state.next_fire is not None:
                self._push(state.next_fire, _FIRE, name, 0)
            for run in state.runs.values():
                if run.next_attempt_at is not None:
                    self._push(run.next_attempt_at, _RETRY, name, run.id)
            for run_id, end in state.ending.items():
                self._push(end.end_time, _END, name, run_id)
        return True

    def release(self) -> None:
        """The change begun at the last :meth:`checkpoint` is stored: keep it."""
        self._before = None

    def _note(self, name: str, state: _JobState | None) -> None:
        """Keep job ``name`` as it is now (``None``: not there yet) for :meth:`rollback`, unless
        the change under way has already kept it."""
        before = self._before
        if before is None or name in before:
            return
        if state is None:
            before[name] = None
            return
        runs = {run_id: replace(run) for run_id, run in state.runs.items()}
        active = state.active
        before[name] = replace(
            state,
            runs=runs,
            active=None if active is None else runs.get(active.id, replace(active)),
            ending=dict(state.ending),
        )

    def get(self, name: str) -> Job:
        """Return the job with its current output-only fields.

        :raises NotFound: if there is no such job.
        """
        state = self._jobs.get(name)
        if state is None:
            raise NotFound("Job not found.")
        return self.view(state)

    def config(self, name: str) -> Job | None:
        """The job as configured (its output-only fields not brought up to date, no copy
        made), or ``None`` if there is no such job."""
        state = self._jobs.get(name)
        return None if state is None else state.job

    def has(self, name: str) -> bool:
        """Tell whether a job of that full name exists."""
        return name in self._jobs

    def jobs(self) -> list[Job]:
        """Return every job in creation order."""
        return [self.view(state) for state in self._jobs.values()]

    def page(self, prefix: str, size: int, from_seq: int) -> tuple[list[Job], int | None]:
        """Return up to ``size`` jobs whose names start with ``prefix``, in creation order, from
        creation number ``from_seq`` on, and the creation number of the next page's first job
        (``None`` when there is none). Stable when jobs come and go between pages."""
        chosen = (
            s for s in self._jobs.values() if s.seq >= from_seq and s.job.name.startswith(prefix)
        )
        first = list(itertools.islice(chosen, size + 1))
        next_seq = first[size].seq if len(first) > size else None
        return [self.view(s) for s in first[:size]], next_seq

    def view(self, state: _JobState) -> Job:
        """The job as the API shows it, output-only fields included: no ``status``
        before the first attempt, no ``scheduleTime`` while paused."""
        if state.job.state != State.ENABLED:
            when = None
        elif state.active is not None and state.active.next_attempt_at is not None:
            when = state.active.next_attempt_at
        else:
            when = state.next_fire_utc
        return replace(
            state.job,
            status=state.status,
            last_attempt_time=state.last_attempt_time,
            schedule_time=when,
        )

    def state_of(self, name: str) -> tuple[State, Status | None, datetime | None]:
        """The output-only fields the runtime persists after each attempt: state, status and
        last attempt time. :raises KeyError: if there is no such job."""
        state = self._jobs[name]
        return state.job.state, state.status, state.last_attempt_time

    # ------------------------------------------------------------------------- time

    @property
    def timer_count(self) -> int:
        """Timers held, live and stale: at most :data:`TIMERS_PER_JOB` per job plus
        :data:`COMPACT_SLACK` (and the one just added)."""
        return len(self._timers)

    def next_due(self) -> datetime | None:
        """The earliest instant (UTC) at which something is due, or ``None``."""
        while self._timers and not self._live(self._timers[0]):
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def due_jobs(self) -> list[str]:
        """The jobs (full names, sorted) with something due at :meth:`next_due` (a scheduled
        time, a retry, an attempt's recorded end): what a move there acts on; ``[]`` for none."""
        due, timers, names = self.next_due(), self._timers, set()
        todo = [0] if due is not None else []
        while todo:  # (a heap: the timers at its least instant hang together from the top)
            i = todo.pop()
            if i < len(timers) and timers[i][0] == due:
                names.update([timers[i][3]] if self._live(timers[i]) else [])
                todo += (2 * i + 1, 2 * i + 2)
        return sorted(names)

    def due(self, now: datetime) -> list[Decision]:
        """Act on everything due at or before ``now``; return the decisions in order: each
        job's in the order they were made, those of slow jobs (whose last attempt on a real
        clock lasted :data:`SLOW_ATTEMPT` or more) after every other job's."""
        out: list[Decision] = []
        later: list[Decision] = []  # the slow jobs'
        while self._timers and self._timers[0][0] <= now:
            entry = heapq.heappop(self._timers)
            if not self._live(entry):
                continue
            _, _, kind, name, run_id = entry
            state = self._jobs[name]
            self._note(name, state)
            into = later if state.slow else out
            if kind == _FIRE:
                into.extend(self._fire(state, now))
            elif kind == _RETRY:
                into.append(self._start_attempt(state, state.runs[run_id], now))
            else:
                run = state.runs[run_id]
                into.extend(self._after_attempt(state, run, state.ending.pop(run_id), now))
        return out + later if later else out

    def force(
        self, name: str, now: datetime, schedule_time: datetime | None = None
    ) -> list[Decision]:
        """Start a forced run of the job now (RunJob), even if paused or running.

        :param schedule_time: send this instant as the run's ScheduleTime (in the job's time
            zone, as every ScheduleTime) instead of the job's next scheduled time: "run as if
            scheduled at", an emulator-only action, whatever ``force_run_schedule_time`` says.
        :raises NotFound: if there is no such job.
        """
        state = self._jobs.get(name)
        if state is None:
            raise NotFound("Job not found.")
        self._note(name, state)
        if schedule_time is not None:
            instant = to_instant(schedule_time, "run_job's schedule_time")  # naive: refused
            header: str | None = format_schedule_time(instant.astimezone(state.schedule.zone))
        elif self.force_run_schedule_time == "omit":
            header = None
        else:
            header = self._header(state, state.next_fire or state.schedule.next_after(now))
        return [self._start_run(state, now, header, forced=True, now=now)]

    # ------------------------------------------------------------------------- attempts

    def attempt_ended(
        self, name: str, run_id: int, end: AttemptEnd, now: datetime
    ) -> list[Decision]:
        """Take the end of an attempt: set the job's status (saved first), then retry or finish
        the run.

        When ``end.end_time`` is after ``now`` the run stays outstanding until then (a timer
        acts on it at ``end.end_time``), so the no-overlap rule follows the recorded end.
        Unknown jobs or runs (deleted meanwhile) are ignored. It ends the change under way
        (:meth:`checkpoint`): an attempt that ended has happened and is not undone.
        """
        self._before = None
        state = self._jobs.get(name)
        if state is None:
            return []
        state.status = end.status
        if end.start_time is not None:
            state.slow = end.end_time - end.start_time >= SLOW_ATTEMPT
            if state.last_attempt == (run_id, end.attempt):
                state.last_attempt_time = end.start_time
            elif state.last_attempt is None:  # one a restart found in flight: the latest start
                starts = (state.last_attempt_time, end.start_time)
                state.last_attempt_time = max(start for start in starts if start is not None)
        saved: list[Decision] = [
            SaveJobState(name, state.job.state, state.status, state.last_attempt_time)
        ]
        run = state.runs.get(run_id)
        if run is None:
            return saved
        if end.extra_retry and not run.extra_spent:
            run.extra_retry = True
        if end.end_time > now:
            state.ending[run_id] = end
            self._push(end.end_time, _END, name, run_id)
            return saved
        return saved + self._after_attempt(state, run, end, now)

    def restore(
        self,
        jobs: Iterable[Job],
        open_runs: Iterable[Run],
        interrupted: set[int],
        now: datetime,
        last_run_id: int,
        next_fires: dict[str, datetime] | None = None,
        last_skipped: dict[str, datetime] | None = None,
        *,
        alive: datetime | None = None,
        ran: Collection[str] = (),
        slow: Collection[str] = (),
    ) -> tuple[list[Decision], list[Run]]:
        """Load the stored jobs and open runs after a restart.

        Next fire times count from ``now``, the instant time resumes from (no backfill); an
        ``every N minutes`` interval keeps its cadence from its stored next fire time. The
        scheduled times from a job's stored next fire time (``next_fires``: its first time
        with neither a run nor a skipped record) up to, not including, ``now`` are those the
        emulator did not act on:

        - the first of them, if it is at or before ``alive`` (the emulator was running then,
          and stopped before the run was recorded), is due at once: run late with its own
          ScheduleTime (or, if the job's run is still open, once that run ends, as any missed
          time); the others at or before ``alive`` are skipped (``RUN_STILL_GOING``: that run
          was owed meanwhile);
        - those after ``alive`` passed while the emulator was not running: skipped
          (``EMULATOR_DOWN``).

        A time at ``now`` itself fires at ``now`` unless the store recorded its run. A run
        whose pending retry is kept is due at its time (at once if that has passed); a run
        with neither an interrupted attempt nor a pending retry is finished.

        :param interrupted: ids of runs whose attempt was in flight when the process died; the
            caller records those attempts as failed and reports them with
            :meth:`attempt_ended`.
        :param last_run_id: the largest run id in the store; new runs count on from it.
        :param next_fires: each job's stored next fire time (UTC), by full name.
        :param last_skipped: each job's latest scheduled time recorded as skipped (none of
            the times up to it is recorded twice).
        :param alive: the last instant the emulator is known to have been running (UTC;
            ``None``: unknown, every time from the stored next fire on counts as down).
        :param ran: the jobs whose stored next fire time already has its run recorded (the
            process died between the two writes): their times count from the one after, and
            after those recorded as skipped while that run was owed (up to ``last_skipped``).
            A stored time that is itself the latest skipped one (the process died between its
            skipped record and the next fire time) counts as done too.
        :param slow: the jobs whose last finished attempt lasted :data:`SLOW_ATTEMPT` or more:
            slow from the start (trial 202: the first minute after a restart, with slow
            targets, ran 3-5 times later than the next).
        :return: the decisions (skipped times, finished runs to save) and the open runs whose
            owner is gone (to be closed by the caller).
        """
        self._run_ids = itertools.count(last_run_id + 1)
        self._began = now
        decisions: list[Decision] = []
        for job in jobs:
            state = _JobState(job, self.parse(job), next(self._job_seq), job.status)
            state.last_attempt_time, state.slow = job.last_attempt_time, job.name in slow
            self._jobs[job.name] = state
            if job.state != State.ENABLED:
                continue
            stored = (next_fires or {}).get(job.name)
            listed = (last_skipped or {}).get(job.name)
            zone = state.schedule.zone
            if stored is not None and job.name in ran:
                stored = state.schedule.next_after(stored.astimezone(zone))
            if (stored is not None and listed is not None) and (
                stored == listed or (job.name in ran and stored <= listed)
            ):  # on past the times recorded as skipped
                stored = state.schedule.next_after(listed.astimezone(zone))
            late = None
            if stored is not None:
                late, skipped = self._downtime(state, stored, listed, alive, now)
                decisions.extend(skipped)
            unrecorded = stored is not None and stored <= now
            kept = None if stored is None else state.schedule.resume(stored, now)  # N after
            first = kept or self._first_fire(state.schedule, now, unrecorded)
            if first is not None and listed is not None and first <= listed:  # (trial 141)
                first = state.schedule.next_after(listed.astimezone(zone))  # recorded skipped
            if late is None:
                self._set_next_fire(state, first)
                decisions.append(SaveNextFire(job.name, state.next_fire_utc))
            else:  # due at once; its run moves the stored next fire time on to ``first``
                self._set_next_fire(state, late)
                state.resume = first
        orphans: list[Run] = []
        for run in open_runs:
            owner = self._jobs.get(run.job)
            if owner is None:
                orphans.append(run)
                continue
            owner.runs[run.id] = run
            if not run.forced:
                owner.active = run
            if run.id in interrupted:
                continue
            if run.next_attempt_at is not None:
                self._push(run.next_attempt_at, _RETRY, run.job, run.id)
            else:
                decisions.extend(self._end_run(owner, run, now))
        for state in self._jobs.values():  # a time owed while its run goes on is kept as
            due = state.next_fire  # _fire keeps it (trials 141, 143: a change dropped it)
            if state.active is not None and due is not None and due <= now and not state.missed:
                state.missed = due
                self._set_next_fire(state, state.resume or state.schedule.next_after(due))
        return decisions, orphans

    # ------------------------------------------------------------------------- internals

    def _push(self, when: datetime, kind: str, name: str, run_id: int) -> None:
        heapq.heappush(self._timers, (when.astimezone(UTC), next(self._seq), kind, name, run_id))
        if len(self._timers) > TIMERS_PER_JOB * len(self._jobs) + COMPACT_SLACK:
            self._timers = [entry for entry in self._timers if self._live(entry)]
            heapq.heapify(self._timers)

    def _live(self, entry: tuple[datetime, int, str, str, int]) -> bool:
        when, _, kind, name, run_id = entry
        state = self._jobs.get(name)
        if state is None:
            return False
        if kind == _FIRE:
            return state.next_fire_utc == when
        run = state.runs.get(run_id)
        if run is None:
            return False
        if kind == _RETRY:
            return run.next_attempt_at == when
        end = state.ending.get(run_id)
        return end is not None and end.end_time.astimezone(UTC) == when

    @staticmethod
    def _first_fire(schedule: Schedule, now: datetime, inclusive: bool) -> datetime | None:
        """The first fire time after ``now`` — or at ``now``, when ``inclusive`` (the start
        instant's own run, not yet recorded) and the schedule has fixed times (a plain
        ``every 5 minutes`` counts its intervals from ``now``: nothing is due at it; trial 201:
        ``every 15 minutes from 00:00 to 03:00`` skipped its 00:00)."""
        inclusive = inclusive and schedule.fixed_times
        return schedule.next_after(now - _TICK if inclusive else now)

    def _set_next_fire(self, state: _JobState, when: datetime | None) -> None:
        state.next_fire, state.resume = when, None
        state.next_fire_utc = None if when is None else when.astimezone(UTC)
        if when is not None:
            self._push(when, _FIRE, state.job.name, 0)

    def _header(self, state: _JobState, nominal: datetime | None) -> str | None:
        if nominal is None or not state.schedule.is_cron:
            return None
        last = self._last_header
        if last[0] is not nominal:
            last = self._last_header = (nominal, format_schedule_time(nominal))
        return last[1]

    def _fire(self, state: _JobState, now: datetime) -> list[Decision]:
        nominal = state.next_fire
        assert nominal is not None
        self._set_next_fire(state, state.resume or state.schedule.next_after(nominal))
        # The stored next fire time moves only once this time is accounted for (a run or a
        # skipped record written first), so a crash at any point leaves it listed at restart.
        moved = SaveNextFire(state.job.name, state.next_fire_utc)
        if state.active is not None:  # one delayed run for the earliest missed time
            if state.missed is None:
                state.missed = nominal  # stored next fire stays here until its delayed run
                return []
            return [self._skip(state, nominal, now)]
        header = self._header(state, nominal)
        return [self._start_run(state, nominal, header, forced=False, now=now), moved]

    def upcoming(self, name: str) -> Upcoming:
        """What comes next for the job: its next scheduled time, its scheduled run's and its
        forced runs' pending retries, and a late run owed (trial 170: a forced run's retry hid
        the scheduled run's, and the next scheduled time).

        :raises KeyError: if there is no such job.
        """
        state = self._jobs[name]
        active = state.active.next_attempt_at if state.active is not None else None
        forced = (run.next_attempt_at for run in state.runs.values() if run.forced)
        return Upcoming(
            state.next_fire_utc, active, min(filter(None, forced), default=None), state.missed
        )

    def _downtime(
        self,
        state: _JobState,
        since: datetime,
        listed: datetime | None,
        alive: datetime | None,
        now: datetime,
    ) -> tuple[datetime | None, list[Decision]]:
        """Account for the scheduled times from ``since`` up to ``now`` that the emulator did
        not act on (see :meth:`restore`): return the one owed a late run (``since`` itself,
        if at or before ``alive``; else ``None``) and the others recorded as skipped — at most
        :data:`MAX_DOWNTIME_SKIPS`, none up to ``listed`` (already recorded: a restart killed
        while it recorded them, after it owed ``since`` a late run)."""
        first = since.astimezone(state.schedule.zone)
        late: datetime | None = None
        when: datetime | None = first
        if alive is not None and first <= alive and first < now:
            late, when = first, state.schedule.next_after(first)
        out: list[Decision] = []
        while when is not None and when < now and len(out) < MAX_DOWNTIME_SKIPS:
            if listed is None or when > listed:
                reason = RUN_STILL_GOING if alive is not None and when <= alive else EMULATOR_DOWN
                out.append(self._skip(state, when, now, reason))
            when = state.schedule.next_after(when)
        return late, out

    def _start_run(
        self,
        state: _JobState,
        nominal: datetime,
        header: str | None,
        *,
        forced: bool,
        now: datetime,
    ) -> StartAttempt:
        state.runs_started += 1
        run = Run(
            next(self._run_ids),
            state.job.name,
            header,
            nominal.astimezone(UTC),
            forced,
            number=state.runs_started,
        )
        state.runs[run.id] = run
        if not forced:
            state.active = run
        return self._start_attempt(state, run, now)

    def _start_attempt(self, state: _JobState, run: Run, now: datetime) -> StartAttempt:
        new_run = run.first_attempt_start is None
        if new_run:
            run.first_attempt_start = now
        run.attempts += 1
        run.next_attempt_at = None
        state.last_attempt_time, state.last_attempt = now, (run.id, run.attempts)
        return StartAttempt(state.job, run, new_run)

    def _after_attempt(
        self, state: _JobState, run: Run, end: AttemptEnd, now: datetime
    ) -> list[Decision]:
        """Schedule a retry or end the run (and start the delayed run of a missed time, if any)."""
        assert run.first_attempt_start is not None
        job = state.job
        if end.uncounted:
            run.uncounted += 1
        at, held = next_attempt_time(
            job.retry_config,
            code=end.code,
            attempts_made=run.attempts - run.uncounted,
            first_attempt_start=run.first_attempt_start,
            end_time=end.end_time,
            may_run=job.state == State.ENABLED or run.forced,
            extra_retry=run.extra_retry,
            uncounted=run.uncounted if end.uncounted else 0,
        )
        run.extra_spent |= run.extra_retry and not held
        run.extra_retry = held
        if at is None:
            gave_up = None
            if end.code != "OK":
                retries = run.attempts - run.uncounted - 1
                gave_up = gave_up_because(
                    job.retry_config, retries, run.first_attempt_start, end.end_time
                )
            earned = run.extra_retry or run.extra_spent
            run.limits = (max_attempts(job.retry_config, earned, run.uncounted), gave_up)
            return self._end_run(state, run, now)
        run.next_attempt_at = at
        self._push(at, _RETRY, run.job, run.id)
        return [SaveRun(run)]

    def _end_run(self, state: _JobState, run: Run, now: datetime) -> list[Decision]:
        run.finished = True
        run.next_attempt_at = None
        state.runs.pop(run.id, None)
        state.ending.pop(run.id, None)
        out: list[Decision] = [SaveRun(run)]
        if state.active is not run:
            return out
        state.active = None
        missed, state.missed = state.missed, None
        if missed is not None and state.job.state == State.ENABLED and not self.stopping:
            out.append(
                self._start_run(state, missed, self._header(state, missed), forced=False, now=now)
            )
            out.append(SaveNextFire(state.job.name, state.next_fire_utc))
        return out

    def _skip(
        self, state: _JobState, when: datetime, now: datetime, reason: str = RUN_STILL_GOING
    ) -> RecordSkipped:
        """The record of ``when`` (in the job's zone), a scheduled time of ``state``'s job that
        gets no run, recorded at ``now``."""
        return RecordSkipped(
            SkippedRun(state.job.name, self._header(state, when), when, now, reason)
        )

    def _cancel_retries(self, state: _JobState, now: datetime) -> list[Decision]:
        """Pause: pending retries of scheduled runs are dropped; attempts in flight finish; a
        time missed while the run went on, owed a late run as it ends, is recorded skipped
        (trial 165: it was dropped unrecorded)."""
        out: list[Decision] = [] if state.missed is None else [self._skip(state, state.missed, now)]
        state.missed = None
        for run in list(state.runs.values()):
            if not run.forced and run.next_attempt_at is not None:
                out.append(self._give_up(state, run, GAVE_UP_PAUSED))
        return out

    @staticmethod
    def _give_up(state: _JobState, run: Run, why: str) -> SaveRun:
        """End ``run`` as given up for ``why`` (no retry follows)."""
        run.finished = True
        run.next_attempt_at = None
        run.limits = (max_attempts(state.job.retry_config, run.extra_retry, run.uncounted), why)
        state.runs.pop(run.id, None)
        if state.active is run:
            state.active = None
        return SaveRun(run)
