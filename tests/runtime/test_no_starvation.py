"""No target can starve another: with every delivery thread held by slow targets, the pool
adds threads for the tasks that wait (the per-job cap stays), and a fast burst never grows it."""

from __future__ import annotations

import threading
import time

from scheduler_emulator.runtime._delivery_pool import DeliveryPool
from tests.support import wait_for


def test_tasks_behind_slow_ones_run_at_once_on_added_threads() -> None:
    pool = DeliveryPool(workers=4, per_key=2)
    release = threading.Event()
    done: list[float] = []
    try:
        for i in range(40):  # 20 slow jobs x 2 attempts: every core thread is held
            pool.submit(f"slow-{i % 20}", lambda: release.wait(30))
        submitted = time.monotonic()
        for i in range(10):
            pool.submit(f"fast-{i}", lambda: done.append(time.monotonic()))
        assert wait_for(lambda: len(done) == 10, 5)
        assert max(done) - submitted < 1.0
        assert pool.threads >= 40 + 4  # one per slow attempt (the cap allows 2 per job), +core
        ran: list[int] = []
        pool.submit("slow-0", lambda: ran.append(1))  # the per-job cap holds: a third waits
        assert not wait_for(lambda: bool(ran), 0.5)
        release.set()
        assert wait_for(lambda: bool(ran), 5)
    finally:
        release.set()
        pool.shutdown()


def test_a_burst_of_fast_tasks_does_not_grow_the_pool() -> None:
    pool = DeliveryPool(workers=4, per_key=4)
    done = threading.Semaphore(0)
    try:
        for i in range(20_000):
            pool.submit(f"job-{i % 5000}", done.release)
        for _ in range(20_000):
            assert done.acquire(timeout=30)
        assert pool.threads == 4
    finally:
        pool.shutdown()
