"""``DeliveryPool``: at most ``per_key`` tasks of one job at once, others' jobs unaffected, order
kept within a job, queued tasks dropped at shutdown."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from scheduler_emulator.runtime.pipeline.delivery_pool import DeliveryPool
from tests.support import wait_for

SLOW = "projects/my-project/locations/l/jobs/slow"
FAST = "projects/my-project/locations/l/jobs/fast"


class Tasks:
    """Tasks that record themselves and, if told, hold their thread until :meth:`release`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.done: list[tuple[str, int]] = []
        self.gate = threading.Event()

    def task(
        self, key: str, index: int, *, hold: bool = True
    ) -> Callable[[Callable[[], None]], None]:
        """A task that holds its pool thread (until the gate opens, with ``hold``)."""

        def run(done: Callable[[], None]) -> None:
            with self.lock:
                self.running[key] = self.running.get(key, 0) + 1
                self.peak[key] = max(self.peak.get(key, 0), self.running[key])
            if hold:
                assert self.gate.wait(10), "the test never released the task"
            with self.lock:
                self.running[key] -= 1
                self.done.append((key, index))
            done()

        return run

    def running_now(self, key: str) -> int:
        with self.lock:
            return self.running.get(key, 0)

    def finished(self, key: str) -> list[int]:
        with self.lock:
            return [index for k, index in self.done if k == key]


@pytest.fixture
def tasks() -> Iterator[Tasks]:
    recorder = Tasks()
    yield recorder
    recorder.gate.set()  # never leave a pool thread waiting


@pytest.mark.parametrize(("workers", "per_key"), [(0, 1), (1, 0), (-1, 4)])
def test_fewer_than_one_worker_or_one_task_per_key_is_refused(workers: int, per_key: int) -> None:
    with pytest.raises(ValueError, match=f"at least 1; got {workers}, {per_key}"):
        DeliveryPool(workers=workers, per_key=per_key)


def test_a_job_runs_at_most_per_key_tasks_while_another_job_goes_on(tasks: Tasks) -> None:
    pool = DeliveryPool(workers=4, per_key=2, name="test-pool")
    try:
        for index in range(5):
            pool.submit(SLOW, tasks.task(SLOW, index))
        assert wait_for(lambda: tasks.running_now(SLOW) == 2, 5)
        # two threads are free: the other job's task runs to the end while SLOW's three wait
        pool.submit(FAST, tasks.task(FAST, 0, hold=False))
        assert wait_for(lambda: tasks.finished(FAST) == [0], 5)
        assert tasks.running_now(SLOW) == 2 and tasks.finished(SLOW) == []
        tasks.gate.set()
        assert wait_for(lambda: len(tasks.finished(SLOW)) == 5, 5)
        assert tasks.peak[SLOW] == 2
    finally:
        pool.shutdown()


def test_the_tasks_of_one_job_start_in_the_order_they_were_submitted(tasks: Tasks) -> None:
    pool = DeliveryPool(workers=3, per_key=1)
    try:
        for index in range(6):
            pool.submit(SLOW, tasks.task(SLOW, index, hold=False))
        assert wait_for(lambda: len(tasks.finished(SLOW)) == 6, 5)
        assert tasks.finished(SLOW) == [0, 1, 2, 3, 4, 5]
        assert tasks.peak[SLOW] == 1
    finally:
        pool.shutdown()


def test_shutdown_drops_the_queued_tasks_and_lets_the_running_ones_finish(tasks: Tasks) -> None:
    pool = DeliveryPool(workers=1, per_key=1)
    pool.submit(SLOW, tasks.task(SLOW, 0))
    assert wait_for(lambda: tasks.running_now(SLOW) == 1, 5)
    pool.submit(SLOW, tasks.task(SLOW, 1))  # waits behind its own job (the per-job cap)
    pool.submit(SLOW, tasks.task(SLOW, 2))
    pool.shutdown()
    pool.shutdown()  # idempotent
    tasks.gate.set()
    assert wait_for(lambda: tasks.finished(SLOW) == [0], 5)
    assert tasks.finished(SLOW) == [0]  # the dropped ones never ran
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(FAST, tasks.task(FAST, 1))


def test_its_threads_are_named_daemon_threads(tasks: Tasks) -> None:
    pool = DeliveryPool(workers=2, per_key=1, name="pool-under-test")
    try:
        threads = [t for t in threading.enumerate() if t.name.startswith("pool-under-test-")]
        names = {t.name for t in threads}
        assert {"pool-under-test-0", "pool-under-test-1"} <= names  # the workers, at once
        assert all(t.daemon for t in threads)  # a target that never answers cannot block exit
    finally:
        pool.shutdown()


def test_a_quick_task_begins_in_the_thread_that_finds_it_a_place() -> None:
    pool = DeliveryPool(workers=2, per_key=1, name="test-pool")
    began: list[str] = []
    dones: list[Callable[[], None]] = []

    def quick(done: Callable[[], None]) -> None:
        began.append(threading.current_thread().name)
        dones.append(done)

    try:
        pool.submit(SLOW, quick, quick=True)  # a place is free: this thread begins it
        assert began == [threading.current_thread().name]
        pool.submit(SLOW, quick, quick=True)  # its job is at its cap: it waits
        assert began == [threading.current_thread().name]
        ender = threading.Thread(target=dones[0], name="the-ender")
        ender.start()
        ender.join(5)
        assert began[1] == "the-ender"  # begun by the thread whose task ended, no pool thread
    finally:
        pool.shutdown()


def test_quick_tasks_that_end_at_once_do_not_nest() -> None:
    # Each ends inside its own call (a request refused at once): the next one of its job is
    # begun by the same loop, not a deeper call, however many there are.
    pool = DeliveryPool(workers=1, per_key=1, name="test-pool")
    ran: list[int] = []
    try:
        for index in range(5000):

            def quick(done: Callable[[], None], index: int = index) -> None:
                ran.append(index)
                done()

            pool.submit(SLOW, quick, quick=True)
        assert wait_for(lambda: len(ran) == 5000, 5)
        assert ran == list(range(5000))
        assert pool.in_progress == 0
    finally:
        pool.shutdown()


@pytest.mark.timeout(30)
def test_quick_tasks_go_in_progress_up_to_connections_on_the_threads_it_started() -> None:
    """Quick tasks hold no thread: a burst of them keeps ``connections`` in progress (its
    connections) on the ``workers`` threads, and the next one begins when one ends."""
    pool = DeliveryPool(workers=2, per_key=1, connections=8)
    dones: list[Callable[[], None]] = []
    try:
        for index in range(9):
            pool.submit(f"job-{index}", dones.append, quick=True)
        assert (len(dones), pool.in_progress, pool.threads) == (8, 8, 2)
        dones[0]()  # its end makes room: the ninth begins in this thread
        assert (len(dones), pool.in_progress, pool.threads) == (9, 8, 2)
    finally:
        pool.shutdown()
