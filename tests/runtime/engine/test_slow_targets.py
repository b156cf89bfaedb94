"""A slow target delays only its own job, and its attempts end at their deadline (system clock,
real HTTP to a target that drips its answer one byte at a time)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from scheduler_emulator import Attempt, Emulator, MountTransport
from tests.drip import DripTarget, drip_server
from tests.support import RecordingTarget, ShiftedClock, wait_for


def beside_dripping_jobs(
    *, healthy: int, dripping: int, forced: int, deadline: float, lead: float
) -> tuple[datetime, list[Attempt], list[Attempt]]:
    """``healthy`` ``* * * * *`` jobs (in-process) beside ``dripping`` jobs whose target drips
    its answer (real HTTP), each forced ``forced`` times just before the minute with a
    ``deadline``-second attempt deadline; return the minute and both jobs' ended attempts."""
    drip = DripTarget(mode="drip_body", interval=0.05, limit_seconds=20)
    clock = ShiftedClock(lead=lead)
    with drip_server(drip) as drip_base:
        emulator = Emulator(
            clock, transport=MountTransport({"http://healthy.test": RecordingTarget()})
        )
        try:
            for i in range(healthy):
                emulator.create_job(
                    name=f"healthy-{i}",
                    schedule="* * * * *",
                    http_target={"uri": f"http://healthy.test/_triggers/timer/{i}"},
                )
            boundary = emulator.get_job("healthy-0").schedule_time
            assert boundary is not None
            for i in range(dripping):
                emulator.create_job(
                    name=f"drip-{i}",
                    schedule="0 0 1 1 *",
                    http_target={"uri": f"{drip_base}/_triggers/timer/drip-{i}"},
                    retry_config={"retryCount": 0},
                    attempt_deadline="15s",
                )
                # The API's minimum is 15 s; a shorter one keeps the test short.
                job = emulator.get_job(f"drip-{i}")
                emulator.upsert_job(replace(job, attempt_deadline=timedelta(seconds=deadline)))
            emulator.start()
            for _ in range(forced):
                for i in range(dripping):
                    emulator.run_job(f"drip-{i}")

            def ended(prefix: str) -> list[Attempt]:
                return [
                    a
                    for a in emulator.attempts()
                    if a.job_id.startswith(prefix) and a.end_time is not None
                ]

            assert wait_for(lambda: len(ended("healthy-")) >= healthy, bound_seconds=15)
            # Every forced attempt of a job beyond its cap of 4 waits behind it: at least the
            # first 4 rounds end within the bound.
            wanted = dripping * min(forced, 8)
            assert wait_for(lambda: len(ended("drip-")) >= wanted, bound_seconds=15)
            return boundary, ended("healthy-"), ended("drip-")
        finally:
            emulator.close()


def assert_on_time_and_cut_at_the_deadline(
    boundary: datetime, healthy: list[Attempt], dripping: list[Attempt], deadline: float
) -> None:
    lateness = [(a.start_time - boundary).total_seconds() for a in healthy]
    assert all(0 <= late < 1.0 for late in lateness), sorted(lateness)[-5:]
    assert {a.code for a in healthy} == {"OK"}
    assert {a.code for a in dripping} == {"DEADLINE_EXCEEDED"}
    for attempt in dripping:
        assert attempt.end_time is not None
        took = (attempt.end_time - attempt.start_time).total_seconds()
        assert deadline - 0.05 <= took < deadline + 0.5, took


def test_a_dripping_target_neither_outlives_its_deadline_nor_delays_other_jobs() -> None:
    # One job forced 40 times: at most 4 of its attempts at once, the rest behind its own job.
    boundary, healthy, dripping = beside_dripping_jobs(
        healthy=50, dripping=1, forced=40, deadline=1.0, lead=2.5
    )
    assert_on_time_and_cut_at_the_deadline(boundary, healthy, dripping, 1.0)


def test_many_dripping_jobs_do_not_starve_healthy_ones() -> None:
    # 60 jobs x 2 forced runs: more dripping attempts than the pool's 32 places.
    boundary, healthy, dripping = beside_dripping_jobs(
        healthy=20, dripping=60, forced=2, deadline=2.0, lead=3.5
    )
    assert_on_time_and_cut_at_the_deadline(boundary, healthy, dripping, 2.0)
