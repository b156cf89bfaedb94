"""RunJob over gRPC and REST answers when the run is accepted, on a manual clock too: eight
concurrent calls against a target that never answers come back at once, other calls are
served meanwhile, and the clock's next move waits for the accepted attempts."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
import requests

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.server.server import serve
from tests.daemon import serving_in_thread
from tests.drip import DripTarget, drip_server
from tests.support import wait_for

grpc = pytest.importorskip("grpc")

NAME = "projects/my-project/locations/us-central1/jobs/hung"


@pytest.fixture
def hung() -> Iterator[tuple[Emulator, DripTarget, str]]:
    """An emulator on a manual clock whose job ``hung`` targets a server that reads each
    request and never answers; the daemon's server on a free port."""
    target = DripTarget(mode="hang", limit_seconds=60)
    emulator = Emulator(ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)))
    try:
        with drip_server(target) as url:
            emulator.create_job(
                name="hung",
                schedule="0 2 * * *",
                http_target={"uri": f"{url}/_triggers/timer/hung"},
                attempt_deadline="1800s",
            )
            with serving_in_thread(serve(emulator, "127.0.0.1", 0)) as served:
                yield emulator, target, served.removeprefix("http://")
        # the target is gone: the held request ends and the accepted attempts not sent yet
        # fail at once; the clock's next move waits for all of them
        emulator.clock.advance(0)
    finally:
        emulator.close()


@pytest.mark.timeout(60)
def test_eight_grpc_run_job_calls_answer_at_once_and_others_are_served(
    hung: tuple[Emulator, DripTarget, str],
) -> None:
    from scheduler_emulator import client

    emulator, target, address = hung
    scheduler = client(host=address)
    try:
        with ThreadPoolExecutor(8) as pool:
            calls = [
                pool.submit(scheduler.run_job, name=NAME, retry=None, timeout=10) for _ in range(8)
            ]
            answers = [call.result() for call in calls]  # DeadlineExceeded if any waited
        assert {answer.name for answer in answers} == {NAME}
        assert scheduler.get_job(name=NAME, retry=None, timeout=5).name == NAME
        assert len(list(scheduler.list_jobs(parent=NAME.rsplit("/jobs/", 1)[0], timeout=5))) == 1
        # accepted: eight runs, the first attempt of each recorded, in flight, at the clock's
        # instant; the target holds the first one
        attempts = emulator.attempts("hung")
        assert len(attempts) == 8
        assert {a.start_time for a in attempts} == {emulator.now()}
        assert all(a.end_time is None for a in attempts)
        assert target.requests <= 1
    finally:
        scheduler.transport.close()


@pytest.mark.timeout(60)
def test_rest_run_answers_at_once_and_the_next_clock_move_sends_the_attempt_first(
    hung: tuple[Emulator, DripTarget, str],
) -> None:
    emulator, target, address = hung
    answer = requests.post(f"http://{address}/v1/{NAME}:run", json={}, timeout=10)
    assert answer.status_code == 200
    # the forced-runs thread sends it soon: once the target holds it, the target closes it
    # (set before it connects, the target would stop accepting and leave it in the backlog)
    wait_for(lambda: target.requests == 1, 20, "the target to hold the attempt's request")
    target.stop.set()  # the attempt fails
    emulator.clock.advance(0)  # waits for the accepted attempt, sent before the clock moves
    [attempt] = emulator.attempts("hung")
    assert attempt.end_time is not None
    assert attempt.start_time == emulator.now()
