"""``assert_attempted``: one assertion on a job's attempts, shared by every way to read them.

The in-process :class:`~scheduler_emulator.Emulator`, the ``cloud_scheduler``
fixture and the ``cloud_scheduler_server`` fixture (a daemon) all hand out
:class:`~scheduler_emulator.domain.attempts.Attempt` records and assert on them here, so a
failure reads the same whichever a test uses.
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from ..wire import NaiveDatetimeError, to_instant
from .attempts import Attempt, failure_reason, iso
from .errors import RPC_CODES

__all__ = ["AttemptAssertions", "check_attempted", "describe"]


def describe(attempt: Attempt) -> str:
    """One line: ``attempt 2 of run id 1 at <start> (ScheduleTime <header>) -> INTERNAL (500)``."""
    status = attempt.response_status if attempt.response_status is not None else "no response"
    return (
        f"attempt {attempt.attempt} of run id {attempt.run_id} at {iso(attempt.start_time)} "
        f"(ScheduleTime {attempt.schedule_time}) -> {attempt.code} ({status})"
    )


def check_attempted(
    attempts: Sequence[Attempt],
    job: str,
    count: int | None = None,
    code: str | None = None,
    *,
    schedule_time: str | datetime | None = None,
    now: datetime,
    jobs: Callable[[], Mapping[str, tuple[str, str | None]]] = dict,
    hint: Callable[[Attempt], str | None] = lambda attempt: None,
) -> list[Attempt]:
    """Assert on ``attempts`` (those of ``job``, in start order); return the matching ones.

    With ``code`` (and/or ``schedule_time``) only attempts with that google.rpc code name
    (``"OK"``, ``"INTERNAL"``…) and ``X-CloudScheduler-ScheduleTime`` header count (the header's
    text as sent, or an aware datetime: the instant it names, in any offset); ``count`` is then
    the number that must match. Without ``count``, at least one must match.

    :param now: the clock's instant, for the message.
    :param jobs: the jobs there are, by ID, each with its state (``"ENABLED"``…) and next
        attempt (RFC 3339 ``scheduleTime``: a pending retry's time, else the next run's; ``None``
        while paused), read when too few attempts match: a misspelt name gets "there is no
        job", a job whose next attempt is after ``now`` the time to advance the clock to, a
        paused one with no attempts that it is paused.
    :param hint: an extra line for an attempt that did not match (e.g. "not mounted").
    :raises AssertionError: listing every attempt of the job and why it did not match.
    :raises TypeError: for a ``count`` that is not an int, a ``code`` that is not text or a
        ``schedule_time`` that is neither, saying what to pass.
    :raises NaiveDatetimeError: for a naive ``schedule_time``.
    """
    __tracebackhide__ = True
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        raise TypeError(f"count must be an int; got {count!r}.")
    if code is not None and not isinstance(code, str):
        raise TypeError(f"code must be text; got {code!r}.")
    if isinstance(schedule_time, datetime):  # (trial 185: run_job takes one; this refused it)
        try:
            schedule_time = to_instant(schedule_time, "schedule_time")
        except NaiveDatetimeError as exc:  # raised here: pytest shows no frame of wire.py
            raise NaiveDatetimeError(str(exc)) from None
    elif schedule_time is not None and not isinstance(schedule_time, str):
        raise TypeError(
            'schedule_time must be the header as sent, such as "2026-01-01T02:00:00Z", or an '
            f"aware datetime; got {schedule_time!r}."
        )
    if code is not None and code not in RPC_CODES:  # (trial 169: "SUCCESS" ran, and failed)
        near = difflib.get_close_matches(code.upper(), list(RPC_CODES), n=1)
        such = f"{near[0]!r}" if near else "such as 'OK' or 'UNAVAILABLE'"
        raise TypeError(f"code is a google.rpc code name, {such}; got {code!r}.")
    matching, misses = [], []
    for attempt in attempts:
        reasons = []
        if code is not None and attempt.code != code:
            reasons.append(f"code {attempt.code}, not {code}")
        if schedule_time is not None and not _names(attempt.schedule_time, schedule_time):
            reasons.append(f"ScheduleTime {attempt.schedule_time}, not {_shown(schedule_time)}")
        if reasons:
            why = failure_reason(attempt, width=2000) or attempt.debug_info
            extra = hint(attempt)
            misses.append(
                [f"  {describe(attempt)}: " + "; ".join(reasons), f"      {why}"]
                + ([f"      {extra}"] if extra else [])
            )
        else:
            matching.append(attempt)
    if (count is None and matching) or len(matching) == count:
        return matching
    wanted = f"{count}" if count is not None else "at least 1"
    criteria = ", ".join(
        part
        for part in (
            f"code={code}" if code else "",
            f"schedule_time={_shown(schedule_time)}" if schedule_time else "",
        )
        if part
    )
    lines = [
        f"expected {wanted} attempt(s) of job {job!r}"
        + (f" with {criteria}" if criteria else "")
        + f", found {len(matching)} (of {len(attempts)} attempts; clock at {iso(now)}).",
    ]
    if matching:
        lines.append("matching:")
        lines += _some([[f"  {describe(a)}"] for a in matching])
    if misses:
        lines.append("not matching:")
        lines += _some(misses)
    if len(matching) < (1 if count is None else count):  # what comes next may be what's missing
        every = jobs()
        names, (state, next_run) = list(every), every.get(job.rsplit("/", 1)[-1], ("", None))
        if next_run:  # (trials 169, 198: a test that advanced too little got no hint)
            lines.append(
                f"its next attempt is due at {next_run}: a retry, or its next run (advance the "
                "clock to it)."
                if attempts
                else f"the job has no attempts; its next run is at {next_run} (advance the "
                f"clock to it, or force a run); jobs: {names}."
            )
        elif not attempts:
            lines.append(
                f"the job has no attempts and no next run: it is {state}; jobs: {names}."
                if state
                else f"there is no job {job!r}; jobs: {names or 'none'}."
            )
    raise AssertionError("\n".join(lines))


def _some(entries: list[list[str]], most: int = 20) -> list[str]:
    """The lines of ``entries`` (an attempt's lines each): of more than ``most``, the first and
    the last ``most // 2`` (trial 169: 6,410 lines for one failure)."""
    if len(entries) > most:
        left_out = [f"  … {len(entries) - most} more …"]
        entries = [*entries[: most // 2], left_out, *entries[-(most // 2) :]]
    return [line for entry in entries for line in entry]


def _names(header: str | None, wanted: str | datetime) -> bool:
    """Whether a ScheduleTime header is ``wanted``: the same text, or the same instant."""
    if isinstance(wanted, str) or header is None:
        return header == wanted
    try:
        return to_instant(header) == wanted
    except ValueError:  # (a header of a target's own making)
        return False


def _shown(wanted: str | datetime) -> str:
    return wanted if isinstance(wanted, str) else f"{iso(wanted)} (any offset)"


class AttemptAssertions(ABC):
    """``assert_attempted`` for a class that reads attempts: the in-process ``Emulator``, the
    ``cloud_scheduler`` fixture and the ``cloud_scheduler_server`` fixture mix it in, so the
    method has one signature and one meaning everywhere. A subclass gives :meth:`attempts`,
    :meth:`now` and :meth:`_next_runs`, and may give :meth:`_attempt_hint`."""

    @abstractmethod
    def attempts(self, job: str | None = None) -> list[Attempt]:
        """Every attempt in start order, optionally only those of ``job`` (ID or full name)."""

    @abstractmethod
    def now(self) -> datetime:
        """The clock's instant (aware UTC)."""

    @abstractmethod
    def _next_runs(self) -> dict[str, tuple[str, str | None]]:
        """The jobs there are by ID, each with its state and next run (its RFC 3339
        ``scheduleTime``, ``None`` while paused): listed when a job has no attempts."""

    def _attempt_hint(self, attempt: Attempt) -> str | None:
        """An extra line for an attempt that did not match; ``None`` for none."""
        return None

    def _attempts_of(self, job: str) -> list[Attempt]:
        """The attempts ``assert_attempted`` looks at (those of ``job``)."""
        return self.attempts(job)

    def assert_attempted(
        self,
        job: str,
        count: int | None = None,
        code: str | None = None,
        *,
        schedule_time: str | datetime | None = None,
    ) -> list[Attempt]:
        """Assert on the attempts of ``job`` (ID or full name); return the matching ones.

        An attempt matches when its code is ``code`` (a google.rpc code name: ``"OK"``,
        ``"INTERNAL"``…) and its ``X-CloudScheduler-ScheduleTime`` header is ``schedule_time``
        (the text as sent, or an aware datetime naming the same instant); a criterion left
        ``None`` matches every attempt. With ``count``, exactly that many must match; without
        it, at least one. An attempt still waiting on its target has code ``None``.

        :raises AssertionError: listing every attempt of the job and why it did not match,
            with the clock's instant (and, for a job with no attempts, the jobs there are).
        """
        __tracebackhide__ = True
        return check_attempted(
            self._attempts_of(job),
            job,
            count,
            code,
            schedule_time=schedule_time,
            now=self.now(),
            jobs=self._next_runs,
            hint=self._attempt_hint,
        )
