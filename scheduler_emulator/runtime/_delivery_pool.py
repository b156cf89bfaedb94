"""The delivery pool: a fixed set of threads sending attempts, with a cap per job.

A slow target must delay only its own job. With one shared pool and no cap, 32 attempts of one
job whose target drips its answer occupy every thread until their deadlines, and every other
job stops firing. :class:`DeliveryPool` runs at most ``per_key`` tasks of the same key (the
job's name) at once; further tasks of that key wait in their own queue, behind their own job,
while other keys' tasks go on::

    pool = DeliveryPool(workers=32, per_key=4)
    pool.submit("projects/p/locations/l/jobs/slow", send_one_attempt)
    pool.shutdown()          # queued tasks are dropped; running ones finish on their own

No target may starve another either: with 32 jobs whose targets drip their answers, a fixed
pool of 32 threads would be held for whole deadlines while healthy jobs wait (production has no
such shared limit). So the pool is elastic: ``workers`` threads are always there, and when
tasks are ready but no task was taken or ended for :data:`STALL_SECONDS` (every thread is
held by a slow target; seen twice in a row by a watcher that itself ran on time, so a machine
too loaded to schedule the process does not count), a watcher adds threads — as many as
tasks wait, up to :data:`GROW_AT_ONCE` per look — which leave again after
:data:`SPARE_IDLE_SECONDS` without work.
A burst of fast deliveries never grows it (tasks keep ending); each slow attempt costs at most
one thread (a few hundred kB of memory), and the per-key cap bounds them per job. At most
:data:`MAX_THREADS` threads run in all, a safety bound far above what a machine's jobs use.

Threads are daemon threads: a target that never answers cannot keep the process alive at exit
(the engine records what was left in flight, see ``Engine.stop``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from ..realtime import real_monotonic

__all__ = [
    "DeliveryPool",
    "GROW_AT_ONCE",
    "MAX_THREADS",
    "SPARE_IDLE_SECONDS",
    "STALL_SECONDS",
]

Task = Callable[[], None]
#: Seconds without any task ending, while tasks wait, after which threads are added.
STALL_SECONDS = 0.1
#: Threads added at most per look of the watcher (it looks every STALL_SECONDS / 2).
GROW_AT_ONCE = 64
#: Seconds an added thread waits for work before it leaves.
SPARE_IDLE_SECONDS = 10.0
#: Threads at most, in all (a safety bound: each slow attempt holds one).
MAX_THREADS = 4096


class DeliveryPool:
    """Run tasks on ``workers`` threads, at most ``per_key`` of the same key at a time.

    :param workers: threads, started at once.
    :param per_key: tasks of one key running at once, at least 1.
    :param name: thread name prefix.
    :raises ValueError: if ``workers`` or ``per_key`` is below 1.
    """

    def __init__(self, workers: int = 32, per_key: int = 4, name: str = "delivery") -> None:
        if workers < 1 or per_key < 1:
            raise ValueError(f"workers and per_key must be at least 1; got {workers}, {per_key}.")
        self.workers = workers
        self.per_key = per_key
        self._name = name
        self._ready: deque[tuple[str, Task]] = deque()
        self._running: dict[str, int] = {}
        self._waiting: dict[str, deque[Task]] = {}
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._count = 0  # threads alive (the core ones and the added ones)
        self._idle = 0  # threads waiting for work
        self._progress = real_monotonic()  # when a task was last taken or ended
        self._watch_stop = threading.Event()
        self._start_threads()
        self._watcher = threading.Thread(target=self._watch, name=f"{name}-watch", daemon=True)
        self._watcher.start()

    def submit(self, key: str, task: Task) -> None:
        """Run ``task`` when a thread is free and fewer than ``per_key`` tasks of ``key`` run.

        :raises RuntimeError: after :meth:`shutdown`.
        """
        with self._cond:
            if self._closed:
                raise RuntimeError("the delivery pool is shut down")
            if self._running.get(key, 0) < self.per_key:
                self._running[key] = self._running.get(key, 0) + 1
                self._ready.append((key, task))
                self._cond.notify()
            else:
                self._waiting.setdefault(key, deque()).append(task)

    def shutdown(self) -> int:
        """Stop taking tasks and drop the queued ones; running tasks go on. Return how many
        queued tasks were dropped. Idempotent."""
        self._watch_stop.set()
        with self._cond:
            self._closed = True
            dropped = len(self._ready) + sum(len(q) for q in self._waiting.values())
            self._ready.clear()
            self._waiting.clear()
            self._cond.notify_all()
            return dropped

    @property
    def threads(self) -> int:
        """Threads alive now (``workers`` plus those added for slow targets)."""
        with self._cond:
            return self._count

    def _start_threads(self) -> None:
        with self._cond:
            self._count += self.workers
        for index in range(self.workers):
            thread = threading.Thread(
                target=self._work, args=(None,), name=f"{self._name}-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _watch(self) -> None:
        """Add threads while tasks wait and every thread is held (none taken or ended lately).

        A stall counts only when two looks in a row see it and each look came on time (its
        wait returned within :data:`STALL_SECONDS`): when the whole process was not scheduled
        for a while (a loaded machine), tasks did not end because nothing ran, not because
        targets are slow, and the watcher itself wakes late — such a look adds nothing.
        """
        stalled_looks = 0
        looked = real_monotonic()
        while True:
            with self._cond:
                if self._closed:
                    return
                now = real_monotonic()
                on_time = now - looked < STALL_SECONDS
                stalled = now - self._progress >= STALL_SECONDS
                if self._ready and stalled and self._idle == 0 and on_time:
                    stalled_looks += 1
                else:
                    stalled_looks = 0
                grow = 0
                if stalled_looks >= 2:
                    stalled_looks = 0
                    grow = min(len(self._ready), GROW_AT_ONCE, MAX_THREADS - self._count)
                    self._count += grow
            for _ in range(grow):
                threading.Thread(
                    target=self._work,
                    args=(SPARE_IDLE_SECONDS,),
                    name=f"{self._name}-spare",
                    daemon=True,
                ).start()
            looked = real_monotonic()
            if self._watch_stop.wait(STALL_SECONDS / 2):
                return

    def _work(self, idle_limit: float | None) -> None:
        """Run ready tasks; a spare thread (``idle_limit`` seconds) leaves when idle that long."""
        while True:
            with self._cond:
                while not self._ready and not self._closed:
                    self._idle += 1
                    woken = self._cond.wait(idle_limit)
                    self._idle -= 1
                    if not woken and not self._ready and idle_limit is not None:
                        self._count -= 1
                        return
                if self._closed:
                    self._count -= 1
                    return
                key, task = self._ready.popleft()
                self._progress = real_monotonic()
            try:
                task()
            finally:
                with self._cond:
                    self._progress = real_monotonic()
                    waiting = self._waiting.get(key)
                    if waiting:
                        self._ready.append((key, waiting.popleft()))
                        if not waiting:
                            del self._waiting[key]
                        self._cond.notify()
                    elif self._running.get(key, 0) <= 1:
                        self._running.pop(key, None)
                    else:
                        self._running[key] -= 1
