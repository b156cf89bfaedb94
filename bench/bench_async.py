"""Async handlers under the ``cloud_scheduler`` fixture's virtual clock (issue 12, item 2).

An ``async def`` handler that awaits ``asyncio.sleep(0.05)`` must finish while the plugin's
freeze shows the app the virtual instant; before freezegun's ``real_asyncio`` was used, the
event loop's clock was frozen too and each attempt hung until its deadline (180 s). Two cases,
each an hourly job advanced one virtual day (24 attempts, 24 x 50 ms = 1.2 s of sleeping):

1. a FastAPI app mounted in-process (``cloud_scheduler.mount``, httpx's ``ASGITransport``);
2. the same app behind uvicorn on a real loopback port, in this process.

Target: every attempt OK, under 5 s of real time each. Run: ``python bench/bench_async.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import uvicorn
from fastapi import FastAPI

from pytest_plugin.scheduler import CloudScheduler
from scheduler_emulator.service import TimerRequest, TimerRouter

ROUNDS = 3
START = datetime(2026, 9, 24, tzinfo=UTC)


def make_app() -> tuple[FastAPI, list[datetime]]:
    router, seen = TimerRouter(), []

    @router.timer("nightly")
    async def nightly(request: TimerRequest) -> None:
        await asyncio.sleep(0.05)
        seen.append(datetime.now(UTC))

    app = FastAPI()
    router.init_app(app)
    return app, seen


def serve(app: Any) -> tuple[uvicorn.Server, threading.Thread, int]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        thread.join(0.01)
    return server, thread, server.servers[0].sockets[0].getsockname()[1]


def one_day(uri: str, app: Any | None, seen: list[datetime]) -> float:
    scheduler = CloudScheduler(START)
    try:
        if app is not None:
            scheduler.mount("https://orders-abc123-uc.a.run.app", app)
        scheduler.create_job(name="nightly", schedule="0 * * * *", http_target={"uri": uri})
        started = time.perf_counter()
        scheduler.advance(timedelta(days=1))
        elapsed = time.perf_counter() - started
        scheduler.assert_attempted("nightly", count=24, code="OK")
        assert seen[0] == datetime(2026, 9, 24, 1, tzinfo=UTC), seen[0]
        return elapsed
    finally:
        scheduler.close()


def main() -> None:
    mounted = []
    for _ in range(ROUNDS):
        app, seen = make_app()
        uri = "https://orders-abc123-uc.a.run.app/_triggers/timer/nightly"
        mounted.append(one_day(uri, app, seen))
    served = []
    for _ in range(ROUNDS):
        app, seen = make_app()
        server, thread, port = serve(app)
        try:
            served.append(one_day(f"http://127.0.0.1:{port}/_triggers/timer/nightly", None, seen))
        finally:
            server.should_exit = True
            thread.join(30)
    for label, times in (("mounted FastAPI app", mounted), ("uvicorn on a loopback port", served)):
        print(
            f"{label}: one virtual day, 24 attempts of an async handler sleeping 50 ms: "
            f"median {statistics.median(times):.2f} s, max {max(times):.2f} s (target < 5 s)"
        )


if __name__ == "__main__":
    main()
