"""The delivery pool: attempts in progress, at most a few per job, none starving another.

A slow target must delay only its own job: :class:`DeliveryPool` runs at most ``per_key`` tasks
of one key (the job's name) at once; further tasks of that key wait behind their own job while
other keys' tasks go on. A task is *in progress* from when it is taken until it calls ``done``
(from any thread, perhaps before it returns). One sending in its own thread holds that thread;
one waiting on its target elsewhere (an ``http://`` attempt in libcurl's event loop) holds none:
200 dripping targets cost 200 sockets, not 200 threads. A *quick* task (it only begins work that
ends elsewhere) is begun by whichever thread finds it a place (the submitter, or the thread
whose task just ended), sparing a hand-over to a pool thread per attempt.

No target may starve another either: at most ``connections`` tasks are in progress at first (a
fast burst keeps to that many connections). When tasks are ready but none was taken or ended
for :data:`STALL_SECONDS` (seen twice in a row by a watcher that itself ran on time, so a
machine too loaded to schedule the process does not count), the watcher raises the limit by as
many as tasks wait, all at once: a fast task queued behind any number of slow ones waits one
stall. The limit falls back to ``connections`` once no more than that many are in progress.
Threads for tasks that hold theirs (without ``pycurl``, or with fault rules) come by the same
rule: added in a stall when every thread is busy, gone after :data:`SPARE_IDLE_SECONDS` without
work. A burst of fast deliveries grows neither. :data:`MAX_IN_PROGRESS` and :data:`MAX_THREADS`
are safety bounds far above what a machine's jobs use.

Threads are daemon threads: a target that never answers cannot keep the process alive at exit
(the engine records what was left in flight, see ``Emulator.stop``).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from ...realtime import real_monotonic
from ..delivery import CONNECTIONS

logger = logging.getLogger("scheduler_emulator")

#: A task: called with ``done``, which it calls once when its work has ended.
Task = Callable[[Callable[[], None]], None]
#: Seconds without any task ending, while tasks wait, after which threads are added.
STALL_SECONDS = 0.1
#: Seconds an added thread waits for work before it leaves.
SPARE_IDLE_SECONDS = 10.0
#: Threads at most, in all (a safety bound: each slow task that sends in its thread holds one).
MAX_THREADS = 4096
#: Tasks in progress at most (a safety bound: each slow attempt holds a socket; the daemon's
#: open-file limit must allow this many, which ``scheduler-emulator start`` sees to).
MAX_IN_PROGRESS = 8192


class _Entry(NamedTuple):
    key: str  # the job it counts against
    task: Task
    quick: bool


class DeliveryPool:
    """Run tasks, at most ``per_key`` of the same key at a time (see the module docstring).

    :param workers: threads started at once.
    :param per_key: tasks of one key in progress at once, at least 1.
    :param connections: tasks in progress at once until a stall raises that limit (at least
        ``workers``).
    :param name: thread name prefix.
    :raises ValueError: if ``workers`` or ``per_key`` is below 1.
    """

    def __init__(
        self,
        workers: int = 32,
        per_key: int = 4,
        name: str = "delivery",
        connections: int = CONNECTIONS,
    ) -> None:
        if workers < 1 or per_key < 1:
            raise ValueError(f"workers and per_key must be at least 1; got {workers}, {per_key}.")
        self.per_key = per_key
        self._connections = max(workers, connections)
        self._name = name
        self._ready: deque[_Entry] = deque()
        self._running: dict[str, int] = {}  # key -> its tasks in progress (or ready)
        self._waiting: dict[str, deque[_Entry]] = {}
        self._local = threading.local()  # .draining: this thread begins quick tasks now
        # Held directly (a Condition's enter and exit are Python code); the condition wakes
        # idle threads, notified only when some are idle.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._closed = False
        self._count = workers  # threads alive (the core ones and the added ones)
        self._idle = 0  # threads waiting for work
        self._in_progress = 0  # tasks taken whose end has not come
        self._limit = self._connections  # tasks in progress at most now
        self._progress = real_monotonic()  # when a task was last taken or ended
        self._watch_stop = threading.Event()
        for index in range(workers):
            self._add_thread(f"{name}-{index}")
        threading.Thread(target=self._watch, name=f"{name}-watch", daemon=True).start()

    def submit(self, key: str, task: Task, *, quick: bool = False) -> None:
        """Call ``task(done)`` on a pool thread when fewer than ``per_key`` tasks of ``key``
        are in progress; it ends when ``done()`` is called (once, from any thread, perhaps
        before ``task`` returns).

        :param quick: ``task`` never blocks (it only begins work that ends elsewhere): the
            thread that finds it a place calls it at once (see the module docstring).
        :raises RuntimeError: after :meth:`shutdown`.
        """
        entry = _Entry(key, task, quick)
        with self._lock:
            if self._closed:
                raise RuntimeError("the delivery pool is shut down")
            if self._running.get(key, 0) >= self.per_key:
                self._waiting.setdefault(key, deque()).append(entry)
                return
            self._running[key] = self._running.get(key, 0) + 1
            self._ready.append(entry)
            if not quick:
                self._wake_one()
                return
        self._begin_quick()

    def drop_waiting(self, key: str) -> list[Task]:
        """Take the tasks of ``key`` waiting behind its others off the queue, unrun; return
        them (in the order submitted)."""
        with self._lock:
            return [entry.task for entry in self._waiting.pop(key, ())]

    def shutdown(self) -> None:
        """Stop taking tasks and drop the queued ones; tasks in progress go on. Idempotent."""
        self._watch_stop.set()
        with self._lock:
            self._closed = True
            self._ready.clear()
            self._waiting.clear()
            self._cond.notify_all()

    @property
    def threads(self) -> int:
        """Threads alive now (``workers`` plus those added for slow tasks that hold theirs)."""
        with self._lock:
            return self._count

    @property
    def in_progress(self) -> int:
        """Tasks taken whose end has not come (running, or waiting on their target)."""
        with self._lock:
            return self._in_progress

    def _begin_quick(self) -> None:
        """Begin the quick tasks at the head of the ready queue here while places are free (one
        ending inside another goes on in this loop, not deeper); wake a thread for another."""
        if getattr(self._local, "draining", False):
            return
        self._local.draining = True
        try:
            while True:
                with self._lock:
                    if self._closed or not self._ready or self._in_progress >= self._limit:
                        return
                    if not self._ready[0].quick:
                        self._wake_one()
                        return
                    entry = self._take()
                self._begin(entry)
        finally:
            self._local.draining = False

    def _take(self) -> _Entry:
        """Take the ready task at the head (lock held): it is in progress from now."""
        self._in_progress += 1
        self._progress = real_monotonic()
        return self._ready.popleft()

    def _begin(self, entry: _Entry) -> None:
        ended = threading.Lock()

        def done() -> None:
            if ended.acquire(blocking=False):  # once
                self._end(entry.key)

        try:
            entry.task(done)
        except Exception:  # it could not begin: its place is given back
            logger.exception("a delivery task failed to begin")
            done()

    def _wake_one(self) -> None:
        """Wake an idle thread to take the ready task at the head (lock held)."""
        if self._idle:
            self._cond.notify()

    def _watch(self) -> None:
        """Raise the limit (and add threads if none is idle) on a stall: two looks in a row, each
        on time (a late one means nothing ran), see tasks ready and none taken or ended."""
        stalled_looks = 0
        looked = real_monotonic()
        while True:
            with self._lock:
                if self._closed:
                    return
                now = real_monotonic()
                on_time = now - looked < STALL_SECONDS
                stalled = now - self._progress >= STALL_SECONDS
                stalled_looks = stalled_looks + 1 if self._ready and stalled and on_time else 0
                threads = 0
                if stalled_looks >= 2:
                    stalled_looks = 0
                    wanted = len(self._ready)  # all at once: see the module docstring
                    self._limit = min(MAX_IN_PROGRESS, max(self._limit, self._in_progress + wanted))
                    if self._idle == 0:
                        threads = min(wanted, MAX_THREADS - self._count)
                        self._count += threads
                    self._progress = now  # the next look judges the grown pool
                    self._cond.notify_all()
            for _ in range(threads):
                self._add_thread(f"{self._name}-spare", SPARE_IDLE_SECONDS)
            looked = real_monotonic()
            if self._watch_stop.wait(STALL_SECONDS / 2):
                return

    def _add_thread(self, name: str, idle_limit: float | None = None) -> None:
        threading.Thread(target=self._work, args=(idle_limit,), name=name, daemon=True).start()

    def _work(self, idle_limit: float | None) -> None:
        """Take ready tasks while the limit allows; leave after ``idle_limit`` seconds idle."""
        while True:
            with self._lock:
                while not self._closed and not (self._ready and self._in_progress < self._limit):
                    self._idle += 1
                    woken = self._cond.wait(idle_limit)
                    self._idle -= 1
                    if not woken and not self._ready and idle_limit is not None:
                        break
                if self._closed or not self._ready:  # shut down, or idle too long
                    self._count -= 1
                    return
                entry = self._take()
            self._begin(entry)

    def _end(self, key: str) -> None:
        """A task of ``key`` ended: the next of its job becomes ready."""
        with self._lock:
            self._in_progress -= 1
            self._progress = real_monotonic()
            if self._in_progress <= self._connections:
                self._limit = self._connections
            waiting = self._waiting.get(key)
            if waiting:
                self._ready.append(waiting.popleft())
                if not waiting:
                    del self._waiting[key]
            elif (left := self._running.pop(key, 1) - 1) > 0:  # one place fewer for its job
                self._running[key] = left
            if not (self._ready and self._in_progress < self._limit):
                return  # nothing can be taken now
            if not self._ready[0].quick:
                self._wake_one()  # a pool thread takes it
                return
        self._begin_quick()
