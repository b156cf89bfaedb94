"""The ``cloud_scheduler`` fixture's object: an in-process emulator on a virtual clock.

While the emulator delivers to a mounted app, the app sees ``datetime.now()`` and
``time.time()`` at the emulator's virtual instant (freezegun); the emulator's own clock is never
affected. Requests to URLs that are not mounted go over real HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from freezegun import freeze_time

from scheduler_emulator.attempts import Attempt, SkippedRun, iso
from scheduler_emulator.clock import ManualClock
from scheduler_emulator.emulator import Emulator
from scheduler_emulator.faults import FaultPlan
from scheduler_emulator.resources import Job
from scheduler_emulator.transports import (
    DeliveryRequest,
    MountTransport,
    TransportResult,
    WsgiApp,
)

__all__ = ["CloudScheduler", "VirtualTimeTransport"]


class VirtualTimeTransport(MountTransport):
    """A :class:`MountTransport` that shows mounted apps the clock's virtual instant.

    Inside :meth:`virtual_time` freezegun is active (started once, moved per delivery). The
    engine's clocks read time through functions freezegun cannot reach, so they keep their own
    time.

    :param clock: the emulator's manual clock.
    """

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock
        self._frozen: Any = None

    @contextmanager
    def virtual_time(self) -> Iterator[None]:
        """Freeze time for mounted apps for the duration of the block (re-entrant)."""
        if self._frozen is not None:
            yield
            return
        freezer = freeze_time(self.clock.now(), tick=False)
        self._frozen = freezer.start()
        try:
            yield
        finally:
            freezer.stop()
            self._frozen = None

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Deliver; a mounted app sees ``datetime.now()`` equal to the attempt's start."""
        if self._frozen is not None and self.find(request.url) is not None:
            self._frozen.move_to(self.clock.now())
        return super().send(request, timeout_seconds)


class CloudScheduler:
    """An in-process Cloud Scheduler on a :class:`ManualClock`, for one test.

    :param start: the clock's initial instant (aware).
    """

    def __init__(self, start: datetime) -> None:
        self.clock = ManualClock(start)
        self.transport = VirtualTimeTransport(self.clock)
        self.emulator = Emulator(self.clock, transport=self.transport)

    def close(self) -> None:
        """Release the emulator."""
        self.emulator.close()

    @property
    def faults(self) -> FaultPlan:
        """The fault plan: ``cloud_scheduler.faults.add(action="lost_ack", job="nightly")``
        (see :mod:`scheduler_emulator.faults`); ``faults.seed`` sets the random seed."""
        return self.emulator.faults

    # ---------------------------------------------------------------- targets and jobs

    def mount(self, base_url: str, app: WsgiApp) -> None:
        """Deliver requests for URLs under ``base_url`` to ``app`` in-process.

        :param base_url: ``http://host[:port][/path]``; the longest mounted prefix wins.
        :raises ValueError: if ``base_url`` is not an http(s) URL.
        """
        self.transport.mount(base_url, app)

    def create_job(self, job: Mapping[str, Any] | Job | None = None, **fields: Any) -> Job:
        """Create a job from its REST JSON (camelCase or snake_case) or keyword arguments.

        A short ``name`` gets the project ``my-project`` and location ``us-central1``.

        :raises InvalidArgument: for an invalid job (the message names field and value).
        :raises AlreadyExists: if the name is taken.
        """
        return self.emulator.create_job(job, **fields)

    def get_job(self, name: str) -> Job:
        """Return the job (with ``state``, ``status``, ``schedule_time``…)."""
        return self.emulator.get_job(name)

    def pause_job(self, name: str) -> Job:
        """Pause the job (§4)."""
        return self.emulator.pause_job(name)

    def resume_job(self, name: str) -> Job:
        """Resume the job (§4)."""
        return self.emulator.resume_job(name)

    def delete_job(self, name: str) -> None:
        """Delete the job."""
        self.emulator.delete_job(name)

    # ---------------------------------------------------------------- time

    def now(self) -> datetime:
        """The virtual instant (aware UTC)."""
        return self.clock.now()

    def advance(self, delta: timedelta | float) -> datetime:
        """Advance the clock by ``delta`` (timedelta or seconds), delivering everything that
        falls due in order, retries included; returns the new instant."""
        with self.transport.virtual_time():
            return self.clock.advance(delta)

    def move_to(self, instant: datetime) -> datetime:
        """Move the clock to ``instant`` (aware), delivering everything due on the way."""
        with self.transport.virtual_time():
            return self.clock.move_to(instant)

    def run_job(self, name: str) -> Job:
        """Force a run now (RunJob, P3); the attempt is delivered before this returns."""
        with self.transport.virtual_time():
            return self.emulator.run_job(name)

    # ---------------------------------------------------------------- history and assertions

    def attempts(self, job: str | None = None) -> list[Attempt]:
        """Every attempt in start order, optionally of one job (ID or full name)."""
        return self.emulator.attempts(job)

    def skipped_runs(self, job: str | None = None) -> list[SkippedRun]:
        """Scheduled times skipped because a run was still going (P6)."""
        return self.emulator.skipped_runs(job)

    def assert_attempted(
        self,
        job: str,
        count: int | None = None,
        code: str | None = None,
        *,
        schedule_time: str | None = None,
    ) -> list[Attempt]:
        """Assert on the attempts of ``job``; return the matching ones.

        With ``code`` (and/or ``schedule_time``) only attempts with that google.rpc code name
        (``"OK"``, ``"INTERNAL"``…) and ScheduleTime header count; ``count`` is then the number
        that must match. Without ``count``, at least one must match.

        :raises AssertionError: listing every attempt of the job and why it did not match.
        """
        attempts = self.attempts(job)
        matching, misses = [], []
        for attempt in attempts:
            reasons = []
            if code is not None and attempt.code != code:
                reasons.append(f"code {attempt.code}, not {code}")
            if schedule_time is not None and attempt.schedule_time != schedule_time:
                reasons.append(f"ScheduleTime {attempt.schedule_time}, not {schedule_time}")
            if reasons:
                misses.append(f"  {_describe(attempt)}: " + "; ".join(reasons))
            else:
                matching.append(attempt)
        wanted = f"{count}" if count is not None else "at least 1"
        if (count is None and matching) or len(matching) == count:
            return matching
        criteria = ", ".join(
            part
            for part in (
                f"code={code}" if code else "",
                f"schedule_time={schedule_time}" if schedule_time else "",
            )
            if part
        )
        lines = [
            f"expected {wanted} attempt(s) of job {job!r}"
            + (f" with {criteria}" if criteria else "")
            + f", found {len(matching)} (of {len(attempts)} attempts; clock at "
            f"{iso(self.now())}).",
        ]
        if matching:
            lines.append("matching:")
            lines += [f"  {_describe(a)}" for a in matching]
        if misses:
            lines.append("not matching:")
            lines += misses
        if not attempts:
            names = [j.job_id for j in self.emulator.list_jobs()]
            lines.append(f"the job has no attempts; jobs: {names or 'none'}.")
        raise AssertionError("\n".join(lines))


def _describe(attempt: Attempt) -> str:
    status = attempt.response_status if attempt.response_status is not None else "no response"
    return (
        f"attempt {attempt.attempt} of run {attempt.run_id} at {iso(attempt.start_time)} "
        f"(ScheduleTime {attempt.schedule_time}) -> {attempt.code} ({status})"
    )
