"""Every clock a mounted app reads agrees with the virtual instant, in any local zone.

Issue (freezegun #89, #314, #405, #506): with ``TZ=Asia/Kolkata`` a handler's naive
``datetime.now()`` read the UTC wall time while ``time.localtime()`` read local time; on New
York's fall-back day ``datetime.now(ZoneInfo("America/New_York"))`` at 06:30Z said the first
01:30 (``fold=0``), an hour early. Trial 53: a handler's work on a worker thread
(``asyncio.to_thread``, a thread of its own) read real ``time.time()``. Each case runs in a
child pytest whose process has that ``TZ``; the expected values are computed there with
zoneinfo from the instant alone.
"""

from __future__ import annotations

import asyncio
import datetime as datetime_module
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from freezegun import api, freeze_time

from pytest_plugin.app_time import MonotonicFloor, freeze

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

CHILD_TEST = '''
import asyncio
import os
import threading
import time
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

NEW_YORK = ZoneInfo("America/New_York")
READINGS = []


def read_clocks():
    """What a handler reads, in comparable form."""
    now, today, from_ts = datetime.now(), datetime.today(), datetime.fromtimestamp(time.time())
    in_new_york = datetime.now(ZoneInfo("America/New_York"))
    converted = datetime.now(UTC).astimezone(NEW_YORK)  # (trial 131: fold lost, an hour early)
    local_aware = datetime.now().astimezone()
    return {
        "datetime.now(UTC).astimezone(ZoneInfo)": (converted.isoformat(), converted.fold),
        "datetime.now().astimezone().timestamp()": local_aware.timestamp(),
        "time.time()": time.time(),
        "datetime.now()": (now.isoformat(), now.fold),
        "datetime.now(UTC)": datetime.now(UTC).isoformat(),
        "datetime.now(ZoneInfo)": (in_new_york.isoformat(), in_new_york.fold),
        "datetime.today()": (today.isoformat(), today.fold),
        "date.today()": date.today().isoformat(),
        "datetime.fromtimestamp(time.time())": (from_ts.isoformat(), from_ts.fold),
        "datetime.now().timestamp()": now.timestamp(),
        "time.localtime()": tuple(time.localtime())[:9],
        "time.strftime('%H:%M')": time.strftime("%H:%M"),
    }


def expected_clocks(instant):
    """The same readings, computed with zoneinfo from the instant."""
    local = instant.astimezone(ZoneInfo(os.environ["TZ"]))
    naive = (local.replace(tzinfo=None).isoformat(), local.fold)
    in_new_york = instant.astimezone(NEW_YORK)
    return {
        "datetime.now(UTC).astimezone(ZoneInfo)": (in_new_york.isoformat(), in_new_york.fold),
        "datetime.now().astimezone().timestamp()": instant.timestamp(),
        "time.time()": instant.timestamp(),
        "datetime.now()": naive,
        "datetime.now(UTC)": instant.isoformat(),
        "datetime.now(ZoneInfo)": (in_new_york.isoformat(), in_new_york.fold),
        "datetime.today()": naive,
        "date.today()": local.date().isoformat(),
        "datetime.fromtimestamp(time.time())": naive,
        "datetime.now().timestamp()": instant.timestamp(),
        "time.localtime()": tuple(local.timetuple())[:8] + (1 if local.dst() else 0,),
        "time.strftime('%H:%M')": local.strftime("%H:%M"),
    }


def wsgi_app(environ, start_response):
    READINGS.append(read_clocks())
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def wsgi_app_reading_on_a_thread(environ, start_response):
    worker = threading.Thread(target=lambda: READINGS.append(read_clocks()))
    worker.start()
    worker.join()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


async def asgi_app(scope, receive, send):
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["path"] == "/to-thread":  # as asyncio.to_thread and Starlette's def endpoints
        READINGS.append(await asyncio.to_thread(read_clocks))
    else:
        READINGS.append(read_clocks())
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


INSTANTS = {
    # 01:30 EST, the second 01:30 of New York's fall-back day (fold=1)
    "fall-back-repeated-hour": datetime(2024, 11, 3, 6, 30, 15, tzinfo=UTC),
    # summer: New York on daylight saving time; Kolkata's date already the next day
    "summer-late-evening": datetime(2024, 7, 1, 20, 45, tzinfo=UTC),
}


APPS = {
    "wsgi": (wsgi_app, "/"),
    "asgi": (asgi_app, "/"),
    "wsgi-thread": (wsgi_app_reading_on_a_thread, "/"),
    "asgi-to-thread": (asgi_app, "/to-thread"),
}


@pytest.mark.parametrize("kind", list(APPS))
@pytest.mark.parametrize("instant", list(INSTANTS.values()), ids=list(INSTANTS))
def test_every_clock_agrees(cloud_scheduler, kind, instant):
    READINGS.clear()
    cloud_scheduler.emulator.clock.reset_to(instant)
    app, path = APPS[kind]
    cloud_scheduler.mount("http://svc.test", app)
    cloud_scheduler.create_job(
        name="clocks", schedule="0 0 1 1 *", http_target={"uri": "http://svc.test" + path}
    )
    cloud_scheduler.run_job("clocks")
    cloud_scheduler.assert_attempted("clocks", 1, "OK")
    assert READINGS == [expected_clocks(instant)]
'''


@pytest.mark.timeout(120)
@pytest.mark.parametrize("zone", ["Asia/Kolkata", "America/New_York", "UTC"])
def test_a_handler_reads_the_virtual_instant_on_every_clock(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, zone: str
) -> None:
    monkeypatch.setenv("TZ", zone)
    pytester.makepyfile(test_clocks=CHILD_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=8)


def test_the_corrections_last_only_as_long_as_the_plugins_freeze() -> None:
    """A test's own freeze_time keeps freezegun's behaviour (its tz_offset arithmetic), and
    nothing stays installed after a delivery."""
    names = ("now", "today", "fromtimestamp", "timestamp")
    originals = {name: api.FakeDatetime.__dict__[name] for name in names}
    localtime = api.fake_localtime
    with freeze(datetime(2024, 11, 3, 6, 30, tzinfo=UTC)):
        assert api.FakeDatetime.__dict__["now"] is not originals["now"]
        assert api.fake_localtime is not localtime
    assert {name: api.FakeDatetime.__dict__[name] for name in names} == originals
    assert api.fake_localtime is localtime
    with freeze_time("2024-11-03 06:30:00", tz_offset=2):
        assert datetime_module.datetime.now().hour == 8


def test_a_datetime_subclass_first_imported_under_the_freeze_stays_a_real_one() -> None:
    """Google's ``DatetimeWithNanoseconds`` (Firestore's timestamps, the run-once guard's store)
    first imported while the plugin's freeze runs must not subclass freezegun's fake: every real
    datetime would then pass its isinstance check and Firestore fail on ``timestamp_pb``."""
    pytest.importorskip("google.api_core.datetime_helpers")
    code = (
        "import datetime, sys\n"
        "from pytest_plugin.app_time import freeze\n"
        "assert 'google.api_core.datetime_helpers' not in sys.modules\n"
        "with freeze(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)):\n"
        "    from google.api_core.datetime_helpers import DatetimeWithNanoseconds\n"
        "print(isinstance(datetime.datetime.now(), DatetimeWithNanoseconds))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr


@pytest.mark.timeout(60)
def test_an_event_loop_in_another_thread_never_reads_the_frozen_instant() -> None:
    """A server's event loop (uvicorn in a thread, as docs/testing.md runs it) keeps real time
    through every freeze, also while one starts and stops: freezegun's ``real_asyncio`` gave
    loops real time only between the two, and a timer set in those windows was 56 years away
    (trial 30: uvicorn never saw ``should_exit``)."""
    loop = asyncio.new_event_loop()
    latest: list[float] = [0.0]
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            latest[0] = max(latest[0], loop.time())

    reader = threading.Thread(target=read)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads take turns often: the reader runs in the windows
    reader.start()
    try:
        for _ in range(20):
            with freeze(datetime(2026, 1, 1, tzinfo=UTC)):
                pass
    finally:
        sys.setswitchinterval(switch)
        stop.set()
        reader.join()
        loop.close()
    assert latest[0] <= api.real_monotonic()


@pytest.mark.timeout(60)
def test_a_handlers_monotonic_clocks_start_at_the_instant_and_run_in_real_time() -> None:
    """Trial 109: every clock stood still for a whole delivery, so a handler's time budget
    (``while time.monotonic() < deadline``) ran until the attempt deadline ended it. The wall
    clocks still stand still; the monotonic ones run from the virtual instant."""
    instant = datetime(2026, 1, 1, tzinfo=UTC)
    with freeze(instant) as factory:
        import time

        counter, first = time.perf_counter_ns(), time.monotonic()
        assert instant.timestamp() <= first < instant.timestamp() + 5
        deadline, loops = first + 0.05, 0
        while time.monotonic() < deadline:  # ends after 50 ms of real time
            loops += 1
        assert time.perf_counter_ns() - counter >= 50_000_000 and loops > 1
        assert time.time() == instant.timestamp()  # the wall clock has not moved
        factory.move_to(datetime(2026, 1, 1, 1, tzinfo=UTC))
        moved = time.monotonic()  # and they move with the virtual clock, from its instant
        assert instant.timestamp() + 3600 <= moved < instant.timestamp() + 3600 + 5


@pytest.mark.timeout(60)
def test_the_monotonic_clocks_never_go_back_across_deliveries_and_clock_moves() -> None:
    """Trial 131: a handler that worked 2 real seconds read monotonic 01:00:02.1; the retry a
    virtual second later, in the next clock move, read 01:00:01.0 — back 1.1 s, which a rate
    limiter or a circuit breaker reads as time running backwards."""
    import time

    instant, floor, seen = datetime(2026, 1, 1, 1, tzinfo=UTC), MonotonicFloor(), []
    with freeze(instant, floor):
        end = time.monotonic() + 0.2
        while time.monotonic() < end:  # a handler's 0.2 real seconds
            pass
        seen.append(time.monotonic())
    with freeze(instant + timedelta(seconds=0.1), floor) as factory:  # the next clock move
        seen.append(time.monotonic())
        end = api.real_monotonic() + 0.2  # (trial 133: from the floor, real time ran slow)
        while api.real_monotonic() < end:
            pass
        seen.append(time.monotonic())
        assert seen[-1] - seen[-2] >= 0.2
        factory.move_to(instant + timedelta(seconds=0.15))
        seen.append(time.monotonic())
        factory.move_to(instant + timedelta(hours=1))  # a later delivery: its own instant
        seen.append(time.monotonic())
    assert seen == sorted(seen) and seen[0] >= instant.timestamp() + 0.2
    assert instant.timestamp() + 3600 <= seen[-1] < instant.timestamp() + 3600 + 0.1


FINALIZER_READS_THE_CLOCK = """
import gc, time
from datetime import UTC, datetime
from pytest_plugin.app_time import MonotonicFloor, freeze

class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        time.monotonic()

gc.set_threshold(50)  # the cyclic collector runs wherever an object is allocated: often
with freeze(datetime(2026, 1, 1, tzinfo=UTC), MonotonicFloor()):
    for _ in range(20_000):
        Cycle()
        time.monotonic()
print("done")
"""


@pytest.mark.timeout(60)
def test_a_finalizer_that_reads_the_monotonic_clock_while_it_is_read_does_not_deadlock() -> None:
    """A test of the suite hung for 15 minutes in an ASGI app's delivery: the cyclic collector
    ran a finalizer that read ``time.monotonic()`` while the same thread was inside it, holding
    the floor's lock. (In a process of its own: a thread left deadlocked holds the freeze.)"""
    reader = subprocess.run(
        [sys.executable, "-c", FINALIZER_READS_THE_CLOCK],
        capture_output=True, text=True, timeout=30, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert reader.stdout == "done\n", reader.stderr
