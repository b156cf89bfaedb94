"""The two ways of driving the engine: when, and in which thread, attempts are sent (the
table in docs/architecture.md compares them). :func:`driver_for`, the only place that asks
which clock runs, picks one at set-up:

- :class:`ManualDriver` (a :class:`~scheduler_emulator.ManualClock`): at each due instant the
  clock calls :meth:`ManualDriver.run_due`, which sends one attempt after another in the
  caller's thread (deterministic timelines); an attempt starts at the virtual instant it fell
  due. A forced run accepted over the API is sent by one thread that settles the clock, or by
  the next clock move if that starts first.
- :class:`ThreadedDriver` (a system clock): one engine thread waits for the next due instant
  and hands attempts to the delivery pool (at most 4 of one job at once); it also records
  their ends, a batch per hold of the engine lock, once the due batch under way is all sent
  (each at the instant its answer came). An attempt starts when it is recorded, just before
  it is sent, or, if it waited in the pool's queue, when it leaves.

Both carry out the recorder's steps the same way; the engine contract tests run every
scenario on both.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import partial

from ...domain.attempts import Attempt
from ...domain.errors import ClockError
from ...realtime import real_monotonic
from .._clock import Clock, ManualClock
from .delivery_pool import DeliveryPool
from .recorder import (
    DELETED,
    INTERRUPTED,
    STOPPED,
    Delivery,
    Injected,
    LateAnswers,
    LateResponse,
    Recorder,
    Sent,
    note_late_answer,
)

logger = logging.getLogger("scheduler_emulator")


class Driver:
    """What the engine asks of its driver; the defaults are what a driver with nothing to do
    there does.

    :param clock: the clock.
    :param recorder: carries out the core's decisions and records attempts.
    :param close: closes the transport's connections and flushes the log (at stop).
    """

    #: The kind of clock that runs, ``"manual"`` or ``"system"`` (``/_emulator/config``'s).
    clock_mode: str
    #: Why the engine thread stopped firing (a data directory that cannot be written), or
    #: ``None``: what the daemon stops on (a manual clock's moves raise instead).
    failure: str | None = None

    def __init__(self, clock: Clock, recorder: Recorder, close: Callable[[], None]) -> None:
        self.clock = clock
        self.recorder = recorder
        self._close = close

    def manual_clock(self) -> ManualClock:
        """The manual clock that moves time by hand.

        :raises ClockError: on the system clock, saying how to get one."""
        raise ClockError(
            "the emulator runs on the system clock; start it on a manual clock to move time "
            "by hand (scheduler-emulator start --clock manual; Emulator(ManualClock(...)))."
        )

    def send_all(self, deliveries: Iterable[Delivery]) -> None:
        """Send ``deliveries`` (recorded as started), and what follows from them."""
        raise NotImplementedError

    def changed(self) -> None:
        """The jobs changed: re-read the next due instant."""

    def send_forced(self, deliveries: Iterable[Delivery], *, wait: bool) -> None:
        """Send ``deliveries`` (a forced run); with ``wait``, return once they and what is then
        due on a manual clock are sent, else at once."""
        self.send_all(deliveries)

    def run_due(self) -> None:
        """Run everything due now (the manual clock calls this at each due instant)."""

    def sending_forced_runs(self) -> bool:
        """Whether this thread is the one sending the forced runs accepted over the API."""
        return False

    def deleted(self, job: str) -> None:
        """The job ``job`` (full name) was deleted: its attempts not sent yet end unsent."""

    def idle(self) -> None:
        """The manual clock is done moving."""

    def start(self) -> None:
        """Start firing on real time."""

    def stop(self, timeout: float) -> int:
        """Stop firing; return how many attempts were recorded as interrupted."""
        raise NotImplementedError

    @property
    def in_flight(self) -> int:
        """Attempts being sent now whose end is not recorded yet."""
        raise NotImplementedError

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is due now and nothing is in flight; ``True`` if idle, ``False``
        on timeout. A manual clock's moves deliver before they return: always idle."""
        return True


def driver_for(clock: Clock, recorder: Recorder, close: Callable[[], None]) -> Driver:
    """The driver for ``clock`` (the parameters are :class:`Driver`'s): :class:`ManualDriver`
    for a manual clock, else :class:`ThreadedDriver`."""
    if isinstance(clock, ManualClock):
        return ManualDriver(clock, recorder, close)
    return ThreadedDriver(clock, recorder, close)


class ManualDriver(Driver):
    """Sends in the caller's thread as a manual clock moves (see the module docstring)."""

    clock_mode = "manual"

    def __init__(self, clock: ManualClock, recorder: Recorder, close: Callable[[], None]) -> None:
        super().__init__(clock, recorder, close)
        self.clock: ManualClock = clock
        self.late = LateAnswers(recorder.store.finish_attempt)
        self._stopping = False
        self._sending: Delivery | None = None
        self._soon: list[Delivery] = []  # forced runs accepted, not sent yet
        self._soon_lock = threading.Lock()
        self._soon_sender: threading.Thread | None = None  # settling the clock for them
        self._cut_short = 0  # attempts the stop recorded as interrupted or not sent
        self._queues: list[deque[Delivery]] = []  # of the send_all calls under way

    def manual_clock(self) -> ManualClock:
        """The clock the caller moves."""
        return self.clock

    def send_all(self, deliveries: Iterable[Delivery]) -> None:
        """Send in this thread, in order, with their follow-ups."""
        queue: deque[Delivery] = deque()
        self._queues.append(queue)  # (what waits in it counts as in flight)
        try:
            while True:
                for queued in deliveries:  # logged as started: it leaves at the instant recorded
                    self.recorder.log(queued.attempt, queued.target_type)
                    queue.append(queued)
                if not queue:
                    return
                delivery = queue.popleft()
                if self._stopping:
                    injected = STOPPED
                    self._cut_short += 1
                elif not self.recorder.core.has(delivery.attempt.job):
                    injected = DELETED  # while it waited behind the job's others
                else:
                    self.late.before_send(delivery.attempt.run_id)
                    self._sending = delivery
                    try:
                        injected = self.recorder.send(delivery)
                    finally:
                        self._sending = None
                with self.recorder.lock:
                    if injected.late is not None and not delivery.ended:  # noted at idle
                        self.late.add(delivery.attempt, injected.late)
                    deliveries = self.recorder.finish(delivery, injected)
        finally:
            self._queues.remove(queue)

    def send_forced(self, deliveries: Iterable[Delivery], *, wait: bool) -> None:
        """With ``wait``, send ``deliveries`` in this thread and settle the clock (anything then
        due is sent too). Otherwise queue them and return: one thread settles the clock for
        them (sending them at its instant, in the order accepted, and anything then due); a
        clock move that starts first sends them before it moves."""
        if wait:
            self.send_all(deliveries)
            self.clock.settle()
            return
        with self._soon_lock:
            self._soon.extend(deliveries)
            if self._soon_sender is None:
                self._soon_sender = threading.Thread(
                    target=self._settle_soon, name="forced-runs", daemon=True
                )
                self._soon_sender.start()

    def _settle_soon(self) -> None:
        while True:
            self.clock.settle()
            with self._soon_lock:
                if not self._soon or self._stopping:
                    self._soon_sender = None
                    return

    def sending_forced_runs(self) -> bool:
        """Whether this thread is the one settling the clock for the forced runs accepted over
        the API (it waits for no Cloud Run execution they start: trial 200's second RunJob
        waited two minutes behind another job's execution)."""
        return threading.current_thread() is self._soon_sender

    def _take_soon(self) -> list[Delivery]:
        with self._soon_lock:
            taken, self._soon = self._soon, []
        return taken

    def run_due(self) -> None:
        """Run everything due now, sending in this thread, until nothing more is due (forced
        runs accepted by :meth:`send_forced` first, those accepted meanwhile too: recorded as
        started at this instant, they are sent before the clock moves on); the clock calls it
        at each due instant."""
        recorder = self.recorder
        while not self._stopping:
            self.send_all(self._take_soon())
            now = self.clock.now()  # stored alive with the starts: a restart resumes from it
            with recorder.lock, recorder.store.batch(alive=now):
                deliveries = recorder.carry_out(recorder.core.due(now))
            if not deliveries and not self._soon:
                return
            self.send_all(deliveries)

    def idle(self) -> None:
        """The clock is done moving: wait for the requests ``deadline`` faults left running and
        note their answers."""
        if not self._stopping:
            self.late.settle()

    def stop(self, timeout: float) -> int:
        """End the clock's move at its current instant (e.g. SIGTERM during a ``clock:advance``):
        the attempt being sent may finish within ``timeout`` seconds, else it is recorded as
        interrupted; the attempts of that instant not sent yet are recorded as not sent
        (``UNAVAILABLE``, the emulator stopped) and nothing later runs. Close the transport's
        connections, then give the move 1 s more to record what waited behind that attempt.
        Idempotent; returns how many attempts were recorded as interrupted or not sent."""
        if self._stopping:
            return 0  # a second call (close after stop) does not wait again
        self._stopping = self.recorder.core.stopping = True
        started = real_monotonic()
        settled = self.clock.interrupt(timeout)
        self.send_all(self._take_soon())  # recorded as not sent
        if (sender := self._soon_sender) is not None:
            sender.join(max(0.0, timeout - (real_monotonic() - started)))
        delivery = None if settled else self._sending
        if delivery is not None:  # its run's retry is stored, as any end's decisions are
            with self.recorder.lock:
                self._cut_short += int(not delivery.ended)
                follow_ups = self.recorder.finish(delivery, INTERRUPTED)
            self.send_all(follow_ups)  # recorded as not sent
        self._close()
        if not settled:  # its send ends as the connections close: the move records the rest
            self.clock.interrupt(1.0)
        return self._cut_short

    @property
    def in_flight(self) -> int:
        """The attempt being sent (a clock move is under way), those waiting behind it and the
        forced runs accepted, not sent yet (trial 200: the stop said 0 with one waiting)."""
        waiting = sum(len(queue) for queue in list(self._queues)) + len(self._soon)
        return (self._sending is not None) + waiting


class ThreadedDriver(Driver):
    """Sends on a delivery pool as real time passes (see the module docstring): 32 threads, 4
    attempts of one job at once; more wait behind their own job (and start when sent)."""

    clock_mode = "system"

    def __init__(self, clock: Clock, recorder: Recorder, close: Callable[[], None]) -> None:
        super().__init__(clock, recorder, close)
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: DeliveryPool | None = None
        self._outstanding: set[Delivery] = set()  # submitted to the pool, end not recorded
        self._idle = threading.Condition(recorder.lock)
        self._idle_waiters = 0  # threads in wait_idle (the only ones it is notified for)
        # (delivery, what its send gave, real monotonic end) of attempts sent on the pool: the
        # engine thread records a batch per lock hold (not 32 threads contending per attempt).
        self._ends: deque[tuple[Delivery, Sent, float]] = deque()
        self._submitting = threading.local()  # .delivery: the one this thread submits now

    def send_all(self, deliveries: Iterable[Delivery]) -> None:
        """Hand ``deliveries`` to the pool (after a stop: record them as not sent)."""
        for delivery in deliveries:
            with self.recorder.lock:
                if (pool := self._pool) is None:  # stopped, or never started
                    self._finish(delivery, STOPPED)
                    continue
                self._outstanding.add(delivery)
            # Without fault rules an attempt that can start (http:// with pycurl) only begins
            # here: whichever thread finds it a place begins it (quick), no pool thread.
            quick = not self.recorder.faults.rules and delivery.prepared.startable
            self._submitting.delivery = delivery
            try:
                pool.submit(delivery.attempt.job, partial(self._deliver, delivery), quick=quick)
            except RuntimeError:  # shut down meanwhile: stop() records it
                continue
            finally:
                self._submitting.delivery = None
            self.changed()

    def start(self) -> None:
        """Start the engine thread and the delivery pool (idempotent)."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self.recorder.core.stopping = False
        self._pool = DeliveryPool(workers=32, per_key=4)
        self._thread = threading.Thread(target=self._loop, name="scheduler-engine", daemon=True)
        self._thread.start()

    @property
    def in_flight(self) -> int:
        """Attempts handed to the delivery pool whose end is not recorded yet."""
        with self.recorder.lock:
            return len(self._outstanding)

    def stop(self, timeout: float) -> int:
        """Stop as :meth:`Emulator.stop <scheduler_emulator.Emulator.stop>` says (idempotent);
        return how many attempts were recorded as interrupted."""
        deadline = real_monotonic() + timeout

        def left() -> float:
            return max(0.0, deadline - real_monotonic())

        self._stopping.set()
        self._wakeup.set()
        ran, self._thread = self._thread, None
        if ran is not None:
            ran.join(left() + _SLICE_SECONDS)  # within a slice: it stops after it
        self.recorder.core.stopping = True  # no delayed run starts from the ends recorded here
        pool, self._pool = self._pool, None
        if pool is not None:  # (else never started, or stopped already: nothing outstanding)
            pool.shutdown()  # queued attempts are not sent
        while True:  # the engine thread is gone: record the ends here as they come
            self._wakeup.clear()
            self._record_ends(self.clock.now())
            with self._idle:
                if not any(d.sent for d in self._outstanding) or left() <= 0:
                    break
            self._wakeup.wait(left())
        with self._idle:
            unfinished = sorted(self._outstanding, key=lambda d: d.attempt.id)
            recorded = len(unfinished)
            for delivery in unfinished:  # follow-ups recorded as not sent: the engine stopped
                # (trial 219: those queued behind their job's 4 read "in flight" too)
                follow_ups = self._finish(delivery, INTERRUPTED if delivery.sent else STOPPED)
                recorded += len(follow_ups)
                self.send_all(follow_ups)
        if ran is not None:  # where a manual clock resumes on this data dir: every end recorded
            self.recorder.store.save_alive(self.clock.now())  # reads as ended there
        self._close()
        return recorded

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds, see :meth:`Driver.wait_idle`."""

        def idle() -> bool:
            due = self.recorder.core.next_due()
            return not self._outstanding and (due is None or due > self.clock.now())

        with self._idle:
            self._idle_waiters += 1
            try:
                return self._idle.wait_for(idle, timeout)
            finally:
                self._idle_waiters -= 1

    def _loop(self) -> None:
        recorder = self.recorder
        try:
            while not self._stopping.is_set():
                self._wakeup.clear()  # an end or a change after this wakes the wait below
                self._record_ends(self.clock.now())
                with recorder.lock:
                    now = self.clock.now()
                    decisions = recorder.core.due(now)
                # A slice per transaction, so a large batch's first attempts leave while the rest
                # are recorded; the first stores the instant alive (a restart runs late what it
                # owed). Ends wait until the batch is sent (its starts commit first), at their time.
                for first in range(0, len(decisions), _SLICE):
                    if first and self._stopping.is_set():  # the rest is left as a crash here
                        break  # would leave it: the instant is stored alive, its runs run late
                    with recorder.lock, recorder.store.batch(alive=None if first else now):
                        deliveries = recorder.carry_out(decisions[first : first + _SLICE])
                    self.send_all(deliveries)
                with recorder.lock:
                    due = recorder.core.next_due()
                self.clock.wait(due, self._wakeup)
        except Exception as exc:  # noqa: BLE001 - said, and the daemon stops (trial 74: a zombie)
            if not self._stopping.is_set():  # (not a store a stop closed meanwhile)
                self.failure = str(exc)
                logger.error("the engine stopped firing: %s", exc)

    def deleted(self, job: str) -> None:
        """End ``job``'s attempts waiting behind its others in the pool now, unsent (trial 203:
        they waited in flight until a place freed, up to an attempt deadline)."""
        if (pool := self._pool) is not None:
            for task in pool.drop_waiting(job):
                task(lambda: None)  # (it held no place) -> _deliver: recorded as not sent

    def _deliver(self, delivery: Delivery, release: Callable[[], None]) -> None:
        """Begin ``delivery``; begun off :meth:`send_all`'s thread, it waited and starts now."""
        if self._stopping.is_set():
            release()
            return  # taken from the queue as the engine stopped: stop() records it
        queued = getattr(self._submitting, "delivery", None) is not delivery
        if queued and not self.recorder.core.has(delivery.attempt.job):  # deleted meanwhile
            self._ended(delivery, release, DELETED)
            return
        self.recorder.begin(delivery, partial(self._ended, delivery, release), queued=queued)

    def _ended(self, delivery: Delivery, release: Callable[[], None], sent: Sent) -> None:
        """Queue what the send gave (on any thread) for the engine thread, with when it ended."""
        self._ends.append((delivery, sent, real_monotonic()))
        self.changed()
        release()

    def changed(self) -> None:
        """Wake the engine thread (the next due instant may be earlier, or an end came), setting
        the event only if unset (a set costs a notify even then): a burst sets it once per turn
        of the engine thread, not once per attempt."""
        if not self._wakeup.is_set():
            self._wakeup.set()

    def _record_ends(self, now: datetime) -> None:
        """Record the queued ends, a batch per hold of the lock, each at the instant it came
        (``now`` moved by the real seconds since); then submit their follow-ups."""
        recorder = self.recorder
        read = real_monotonic()  # as ``now`` was read
        while self._ends:
            follow_ups: list[Delivery] = []
            with recorder.lock:
                for _ in range(_ENDS):
                    try:
                        delivery, sent, ended = self._ends.popleft()
                    except IndexError:  # all taken (by a stop racing an engine thread)
                        break
                    delivery.answered = now + timedelta(seconds=ended - read)
                    try:
                        follow_ups.extend(self._finish(delivery, sent))
                    except Exception as exc:  # recording failed (e.g. the store is closed)
                        job = delivery.attempt.job_id
                        recorder.note_error(exc, f"job {job}: attempt not recorded")
                        self._outstanding.discard(delivery)  # (the lock is the condition's)
                        self._idle.notify_all()
            self.send_all(follow_ups)

    def _finish(self, delivery: Delivery, sent: Sent) -> list[Delivery]:
        """Record the end of ``delivery`` once (:meth:`Recorder.finish`); return its follow-ups.
        The answer to a request a ``deadline`` fault left running is noted when it comes."""
        with self.recorder.lock:
            follow_ups = self.recorder.finish(delivery, sent)
            if isinstance(sent, Injected) and sent.late is not None:
                late = (delivery.attempt, sent.late)
                threading.Thread(target=self._note_late, args=late, daemon=True).start()
            if delivery in self._outstanding:
                if self._pool is not None:
                    self._outstanding.update(follow_ups)
                self._outstanding.discard(delivery)
                if self._idle_waiters:
                    self._idle.notify_all()
            return follow_ups

    def _note_late(self, attempt: Attempt, late: LateResponse) -> None:
        def record(noted: Attempt) -> None:
            with self.recorder.lock:
                self.recorder.store.finish_attempt(noted)

        try:
            note_late_answer(attempt, late, record)
        except Exception as exc:  # (the store closed meanwhile: a stop)
            self.recorder.note_error(exc, f"job {attempt.job_id}: late answer not noted")


#: Decisions of one due batch recorded per store transaction.
_SLICE = 400
#: The longest a stop waits beyond its timeout for the engine thread to finish its slice (it
#: takes milliseconds), so that nothing is recorded after the store closes.
_SLICE_SECONDS = 30.0
#: Ends of attempts recorded per hold of the engine lock.
_ENDS = 256
