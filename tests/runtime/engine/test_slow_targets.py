"""A slow target delays only its own job, and its attempts end at their deadline (system clock,
real HTTP to a target that drips its answer one byte at a time)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from scheduler_emulator import Emulator, MountTransport
from tests.drip import DripTarget, drip_server
from tests.support import RecordingTarget, ShiftedClock, wait_for

HEALTHY = 50
FORCED = 40
DEADLINE = 1.0


def test_a_dripping_target_neither_outlives_its_deadline_nor_delays_other_jobs() -> None:
    drip = DripTarget(mode="drip_body", interval=0.05, limit_seconds=20)
    healthy = RecordingTarget()
    clock = ShiftedClock(lead=2.5)
    with drip_server(drip) as drip_base:
        emulator = Emulator(clock, transport=MountTransport({"http://healthy.test": healthy}))
        try:
            for i in range(HEALTHY):
                emulator.create_job(
                    name=f"healthy-{i}",
                    schedule="* * * * *",
                    http_target={"uri": f"http://healthy.test/_triggers/timer/{i}"},
                )
            boundary = emulator.get_job("healthy-0").schedule_time
            assert boundary is not None
            emulator.create_job(
                name="drip",
                schedule="0 0 1 1 *",
                http_target={"uri": drip_base + "/_triggers/timer/drip"},
                retry_config={"retryCount": 0},
                attempt_deadline="15s",
            )
            # The API's minimum is 15 s; a shorter one keeps the test short.
            emulator.engine.modify(
                emulator.job_name("drip"),
                lambda job: replace(job, attempt_deadline=timedelta(seconds=DEADLINE)),
            )
            emulator.start()
            for _ in range(FORCED):
                emulator.run_job("drip")

            def ended(prefix: str) -> list:
                return [
                    a
                    for a in emulator.attempts()
                    if a.job_id.startswith(prefix) and a.end_time is not None
                ]

            assert wait_for(lambda: len(ended("healthy-")) >= HEALTHY, bound_seconds=15)
            assert wait_for(lambda: len(ended("drip")) >= 8, bound_seconds=10)
            healthy_attempts = ended("healthy-")
            drip_attempts = ended("drip")
        finally:
            emulator.close()
    lateness = [(a.start_time - boundary).total_seconds() for a in healthy_attempts]
    assert all(0 <= late < 1.0 for late in lateness), sorted(lateness)[-5:]
    assert {a.code for a in healthy_attempts} == {"OK"}
    for attempt in drip_attempts:
        assert attempt.code == "DEADLINE_EXCEEDED"
        assert attempt.end_time is not None
        took = (attempt.end_time - attempt.start_time).total_seconds()
        assert DEADLINE - 0.05 <= took < DEADLINE + 0.5, took


DRIPPING = 60  # more dripping attempts than the pool's 32 core threads
SLOW_DEADLINE = 2.0


def test_many_dripping_jobs_do_not_starve_healthy_ones() -> None:
    drip = DripTarget(mode="drip_body", interval=0.05, limit_seconds=20)
    healthy = RecordingTarget()
    clock = ShiftedClock(lead=3.5)
    with drip_server(drip) as drip_base:
        emulator = Emulator(clock, transport=MountTransport({"http://healthy.test": healthy}))
        try:
            for i in range(20):
                emulator.create_job(
                    name=f"healthy-{i}",
                    schedule="* * * * *",
                    http_target={"uri": f"http://healthy.test/_triggers/timer/{i}"},
                )
            boundary = emulator.get_job("healthy-0").schedule_time
            assert boundary is not None
            for i in range(DRIPPING):
                emulator.create_job(
                    name=f"drip-{i}",
                    schedule="0 0 1 1 *",
                    http_target={"uri": f"{drip_base}/_triggers/timer/drip-{i}"},
                    retry_config={"retryCount": 0},
                    attempt_deadline="15s",
                )
                emulator.engine.modify(
                    emulator.job_name(f"drip-{i}"),
                    lambda job: replace(job, attempt_deadline=timedelta(seconds=SLOW_DEADLINE)),
                )
            emulator.start()
            for _ in range(2):  # every core thread held, and more attempts waiting
                for i in range(DRIPPING):
                    emulator.run_job(f"drip-{i}")

            def ended(prefix: str) -> list:
                return [
                    a
                    for a in emulator.attempts()
                    if a.job_id.startswith(prefix) and a.end_time is not None
                ]

            assert wait_for(lambda: len(ended("healthy-")) >= 20, bound_seconds=15)
            assert wait_for(lambda: len(ended("drip-")) >= 2 * DRIPPING, bound_seconds=15)
            healthy_attempts = ended("healthy-")
            drip_attempts = ended("drip-")
        finally:
            emulator.close()
    lateness = [(a.start_time - boundary).total_seconds() for a in healthy_attempts]
    assert all(0 <= late < 1.0 for late in lateness), sorted(lateness)[-5:]
    assert {a.code for a in drip_attempts} == {"DEADLINE_EXCEEDED"}
    for attempt in drip_attempts:
        assert attempt.end_time is not None
        took = (attempt.end_time - attempt.start_time).total_seconds()
        assert SLOW_DEADLINE - 0.05 <= took < SLOW_DEADLINE + 0.5, took
