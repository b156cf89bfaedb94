"""No target can starve another: with every place in the pool held by slow targets, the pool
makes room for the tasks that wait — more places for tasks that end later (they hold no
thread), more threads for tasks that hold theirs — the per-job cap stays, and a fast burst
grows nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from scheduler_emulator.runtime.pipeline.delivery_pool import DeliveryPool
from tests.support import wait_for


def holding(work: Callable[[], object]) -> Callable[[Callable[[], None]], None]:
    """A pool task that does ``work`` in its pool thread, then ends."""

    def task(done: Callable[[], None]) -> None:
        try:
            work()
        finally:
            done()

    return task


def test_tasks_behind_slow_ones_run_at_once_on_added_threads() -> None:
    pool = DeliveryPool(workers=4, per_key=2)
    release = threading.Event()
    done: list[float] = []
    try:
        for i in range(40):  # 20 slow jobs x 2 attempts: every core thread is held
            pool.submit(f"slow-{i % 20}", holding(lambda: release.wait(30)))
        submitted = time.monotonic()
        for i in range(10):
            pool.submit(f"fast-{i}", holding(lambda: done.append(time.monotonic())))
        assert wait_for(lambda: len(done) == 10, 5)
        assert max(done) - submitted < 1.0
        assert pool.threads >= 40 + 4  # one per slow attempt (the cap allows 2 per job), +core
        ran: list[int] = []
        # The per-job cap holds: a third waits.
        pool.submit("slow-0", holding(lambda: ran.append(1)))
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
            pool.submit(f"job-{i % 5000}", holding(done.release))
        for _ in range(20_000):
            assert done.acquire(timeout=30)
        assert pool.threads == 4
    finally:
        pool.shutdown()


def test_tasks_that_end_later_hold_no_thread_and_tasks_behind_them_run_at_once() -> None:
    # The threaded driver's http:// attempts: each waits on its target in libcurl's event
    # loop, its place in the pool taken until it calls done, but no thread.
    pool = DeliveryPool(workers=4, per_key=2)
    dones: list[Callable[[], None]] = []
    lock = threading.Lock()

    def begin(done: Callable[[], None]) -> None:
        with lock:
            dones.append(done)

    ran: list[float] = []
    try:
        for i in range(200):  # 100 slow jobs x 2 attempts, all waiting on their targets
            pool.submit(f"slow-{i % 100}", begin)
        assert wait_for(lambda: pool.in_progress == 200, 5), pool.in_progress
        submitted = time.monotonic()
        for i in range(10):
            pool.submit(f"fast-{i}", holding(lambda: ran.append(time.monotonic())))
        assert wait_for(lambda: len(ran) == 10, 5)
        assert max(ran) - submitted < 1.0
        assert pool.threads == 4  # the slow ones hold their places, not threads
        pool.submit("slow-0", begin)  # the per-job cap holds: a third waits
        assert not wait_for(lambda: len(dones) == 201, 0.5)
        with lock:
            first = dones[0]
        first()
        first()  # done twice counts once
        assert wait_for(lambda: len(dones) == 201, 5)
        with lock:
            for done in dones[1:]:
                done()
        assert wait_for(lambda: pool.in_progress == 0, 5)
    finally:
        pool.shutdown()


def test_a_task_that_fails_to_begin_gives_its_place_back() -> None:
    pool = DeliveryPool(workers=1, per_key=1)
    ran: list[int] = []

    def broken(done: Callable[[], None]) -> None:
        raise RuntimeError("could not begin")

    try:
        pool.submit("job", broken)
        pool.submit("job", holding(lambda: ran.append(1)))  # behind it, in its job's queue
        assert wait_for(lambda: ran == [1], 5)
        assert pool.in_progress == 0
    finally:
        pool.shutdown()
