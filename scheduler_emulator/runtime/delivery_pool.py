"""The delivery pool: a fixed set of threads sending attempts, with a cap per job.

A slow target must delay only its own job. With one shared pool and no cap, 32 attempts of one
job whose target drips its answer occupy every thread until their deadlines, and every other
job stops firing. :class:`DeliveryPool` runs at most ``per_key`` tasks of the same key (the
job's name) at once; further tasks of that key wait in their own queue, behind their own job,
while other keys' tasks go on::

    pool = DeliveryPool(workers=32, per_key=4)
    pool.submit("projects/p/locations/l/jobs/slow", send_one_attempt)
    pool.shutdown()          # queued tasks are dropped; running ones finish on their own

Threads are daemon threads: a target that never answers cannot keep the process alive at exit
(the engine records what was left in flight, see ``Engine.stop``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

Task = Callable[[], None]


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
        self._start_threads()

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
        with self._cond:
            self._closed = True
            dropped = len(self._ready) + sum(len(q) for q in self._waiting.values())
            self._ready.clear()
            self._waiting.clear()
            self._cond.notify_all()
            return dropped

    def _start_threads(self) -> None:
        for index in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"{self._name}-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._ready and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                key, task = self._ready.popleft()
            try:
                task()
            finally:
                with self._cond:
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
