"""The engine: the scheduler core, a recorder and a driver, put together once.

The core (:class:`~scheduler_emulator.core.scheduler.Scheduler`) decides; the recorder
(:mod:`~scheduler_emulator.runtime._recorder`) carries out its decisions and records every
attempt; the driver (:mod:`~scheduler_emulator.runtime._drivers`), chosen once at set-up from
the clock, decides when and in which thread attempts are sent: :class:`~scheduler_emulator.
runtime._drivers.ManualDriver` in the caller's thread as a manual clock moves (deterministic
timelines), :class:`~scheduler_emulator.runtime._drivers.ThreadedDriver` on an engine thread and
a delivery pool under a system clock. This class is what callers hold: job operations under
the engine lock, then the attempts they start handed to the driver. docs/architecture.md shows
the flow of one attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from ..core.faults import FaultPlan
from ..core.scheduler import Scheduler
from ..domain.errors import FailedPrecondition, StorageUnavailable
from ..domain.resources import Job, State
from ..domain.schedule import DEFAULT_DST_POLICY
from ._attempt_log import AttemptLog
from ._clock import Clock
from ._dispatchers import Dispatcher, HttpDispatcher
from ._drivers import Driver, driver_for
from ._options import DEFAULT_HEADER_CASE
from ._recorder import Recorder
from ._store import Store
from ._transports import Transport

if TYPE_CHECKING:
    from ._tokens import TokenAuthority

__all__ = [
    "Engine",
]


class Engine:
    """Fires jobs on schedule and records every attempt.

    :param clock: the clock; a manual clock drives the engine, a system clock needs
        :meth:`start`.
    :param store: where jobs, runs and attempts are kept.
    :param transport: how HTTP attempts reach targets (the ``"HTTP"`` dispatcher's transport).
    :param dispatchers: more dispatchers by target kind (``"PUBSUB"``, ``"APP_ENGINE_HTTP"``),
        or replacements; see :mod:`~scheduler_emulator.runtime._dispatchers`.
    :param attempt_log: optional execution log.
    :param faults: the fault plan (empty by default: exactly-once delivery).
    :param dst_policy: ``"absolute"`` (the default: wall-clock matching on absolute
        minutes) or ``"vixie"``.
    :param force_run_schedule_time: ``"next"`` (the default: a forced run carries the
        job's next scheduled time) or ``"omit"``.
    :param max_workers: delivery threads under a system clock.
    :param max_per_job: attempts of one job sent at once under a system clock; more wait
        behind their own job (their ``start_time`` is when they are sent).
    :param tokens: mints the ``Authorization`` token of jobs with ``oidcToken`` or
        ``oauthToken`` at each attempt's instant; without it no token is sent.
    :param header_case: how HTTP header names are spelled (``"google"``, ``"lower"``,
        ``"canonical"``; :func:`~scheduler_emulator.wire.spell_header`).
    """

    def __init__(
        self,
        clock: Clock,
        store: Store,
        transport: Transport,
        *,
        dispatchers: Mapping[str, Dispatcher] | None = None,
        attempt_log: AttemptLog | None = None,
        faults: FaultPlan | None = None,
        dst_policy: str = DEFAULT_DST_POLICY,
        force_run_schedule_time: str = "next",
        max_workers: int = 32,
        max_per_job: int = 4,
        tokens: TokenAuthority | None = None,
        header_case: str = DEFAULT_HEADER_CASE,
    ) -> None:
        self.core = Scheduler(
            dst_policy=dst_policy, force_run_schedule_time=force_run_schedule_time
        )
        self.clock = clock
        self.store = store
        self.transport = transport
        self.dispatchers: dict[str, Dispatcher] = {
            "HTTP": HttpDispatcher(transport, tokens, header_case=header_case)
        }
        self.dispatchers.update(dispatchers or {})
        self.attempt_log = attempt_log
        self.faults = faults if faults is not None else FaultPlan()
        self.recorder = Recorder(
            self.core, clock, store, self.dispatchers, attempt_log, self.faults
        )
        self._lock = self.recorder.lock
        self.driver: Driver = driver_for(
            clock, self.recorder, self._close_outputs, max_workers, max_per_job
        )
        clock.attach(self)

    @property
    def error_count(self) -> int:
        """Emulator errors while preparing or sending attempts (each is recorded on its
        attempt and logged once)."""
        return self.recorder.error_count

    @property
    def last_error(self) -> BaseException | None:
        """The last of those errors, for inspection."""
        return self.recorder.last_error

    # ---------------------------------------------------------------- jobs

    def put_job(
        self, job: Job, *, reschedule: bool = True, create: bool = False, from_start: bool = False
    ) -> Job:
        """Add or replace ``job`` and persist it; return it with output-only fields updated.

        See :meth:`Scheduler.put <scheduler_emulator.core.scheduler.Scheduler.put>`.

        :raises InvalidArgument: for a bad schedule or time zone (nothing changes).
        :raises AlreadyExists: with ``create``, if the job exists.
        """
        with self._lock:
            new = not self.core.has(job.name)
            view, decisions = self.core.put(
                job, self.clock.now(), reschedule=reschedule, create=create, from_start=from_start
            )
            try:
                self.store.save_job(view, self.core.next_fire(view.name))
            except StorageUnavailable:  # a full disk: list nothing that is not stored
                if new:
                    self.core.remove(view.name)
                raise
            deliveries = self.recorder.carry_out(decisions)
        self.driver.send_all(deliveries)
        self.driver.changed()  # the engine thread re-reads the next due instant
        return view

    def modify(self, name: str, change: Callable[[Job], Job]) -> Job:
        """Replace the job by ``change(job)`` atomically and reschedule it from now.

        If ``change`` raises, the job is left as it was.

        :raises NotFound: if there is no such job.
        """
        with self._lock:
            return self.put_job(change(self.core.get(name)))

    def change_state(self, name: str, required: State, new: State, rule: str) -> Job:
        """Move the job from state ``required`` to ``new`` atomically (PauseJob / ResumeJob).

        :param rule: the end of the error sentence, e.g. ``"only an ENABLED job can be paused"``.
        :raises NotFound: if there is no such job.
        :raises FailedPrecondition: if the job is not in ``required``; the message names
            its state.
        """

        def change(job: Job) -> Job:
            if job.state != required:
                raise FailedPrecondition(f"Job {name} is {job.state.name}; {rule}.")
            return replace(job, state=new)

        return self.modify(name, change)

    def remove_job(self, name: str) -> None:
        """Forget the job: no further runs or retries. An attempt in flight still completes.

        :raises NotFound: if there is no such job.
        """
        with self._lock:
            self.core.get(name)  # NotFound first
            self.store.delete_job(name)  # then memory, once the disk has it
            self.core.remove(name)

    def get_job(self, name: str) -> Job:
        """Return the job with its current output-only fields. :raises NotFound:"""
        with self._lock:
            return self.core.get(name)

    def jobs(self) -> list[Job]:
        """Return every job in creation order."""
        with self._lock:
            return self.core.jobs()

    def jobs_page(self, prefix: str, size: int, from_seq: int) -> tuple[list[Job], int | None]:
        """One ListJobs page (see :meth:`Scheduler.page
        <scheduler_emulator.core.scheduler.Scheduler.page>`)."""
        with self._lock:
            return self.core.page(prefix, size, from_seq)

    def has_job(self, name: str) -> bool:
        """Tell whether a job of that full name exists."""
        with self._lock:
            return self.core.has(name)

    def force_run(
        self, name: str, schedule_time: datetime | None = None, *, wait: bool = True
    ) -> Job:
        """Start a forced run of the job now (RunJob), even if paused or running.

        Under a manual clock, with ``wait``, the attempt is delivered (and anything then due)
        before this returns; without, this returns once the run and its first attempt are
        recorded, and the attempt is sent at the clock's instant on another thread (a clock
        move that starts first sends it before it moves).

        :param schedule_time: the ScheduleTime its attempts carry (see
            :meth:`Scheduler.force <scheduler_emulator.core.scheduler.Scheduler.force>`).
        :raises NotFound: if there is no such job.
        """
        with self._lock:
            decisions = self.core.force(name, self.clock.now(), schedule_time)
            deliveries = self.recorder.carry_out(decisions)
        if not wait:
            self.driver.send_soon(deliveries)
        else:
            self.driver.send_all(deliveries)
            self.driver.forced()
        return self.get_job(name)

    def clear(self) -> None:
        """Forget every job and timer and empty the store."""
        with self._lock:
            self.core.clear()
            self.store.reset()

    def load(self) -> int:
        """Load the stored jobs after a restart and resume open runs; return the job count.

        Next fire times count from now (no backfill). An attempt that was in flight when the
        process died is recorded as failed (``UNAVAILABLE``, emulator restarted) and its run
        retried under the job's retry config; a pending retry is kept (due at once if its time
        has passed).
        """
        with self._lock:
            deliveries = self.recorder.restore()
            count = len(self.core.jobs())
        self.driver.send_all(deliveries)
        self.driver.changed()
        return count

    # ---------------------------------------------------------------- clock interface

    def next_due(self) -> datetime | None:
        """Earliest instant with something due, or ``None`` (used by the manual clock)."""
        with self._lock:
            return self.core.next_due()

    def run_due(self) -> None:
        """Run everything due now, delivering attempts in order in this thread (manual clock).

        Under a system clock the engine thread does this itself; calling it is harmless.
        """
        self.driver.run_due()

    def idle(self) -> None:
        """The manual clock is done moving: wait for requests a ``deadline`` fault left running
        and note their answers on their attempts."""
        self.driver.idle()

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the engine thread and delivery pool (system clock only; no-op otherwise)."""
        self.driver.start()

    @property
    def in_flight(self) -> int:
        """Attempts being sent whose end is not recorded yet."""
        return self.driver.in_flight

    def stop(self, timeout: float = 10.0) -> int:
        """Stop firing at once, wait up to ``timeout`` seconds for attempts in flight, and
        record those still unfinished as interrupted (``UNAVAILABLE``, like an emulator restart:
        their runs are retried under the job's retry config, at the next start if the store
        is kept); then close the transport's connections. Idempotent.

        On a manual clock a move under way (``clock:advance``) ends at the due instant it has
        reached, with what ran there recorded.

        :param timeout: seconds to wait in all (real time) for the engine thread and the
            attempts in flight; recording the interrupted ones may take a moment more.
        :return: how many attempts were recorded as interrupted.
        """
        return self.driver.stop(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is due now and no delivery is in flight (system clock).

        :param timeout: seconds.
        :return: ``True`` if idle, ``False`` on timeout.
        """
        return self.driver.wait_idle(timeout)

    def _close_outputs(self) -> None:
        """Close the transport (its kept-alive connections) and write the execution log's
        queued lines (idempotent)."""
        self.transport.close()
        if self.attempt_log is not None:
            self.attempt_log.flush()
