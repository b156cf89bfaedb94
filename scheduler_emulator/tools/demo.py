"""``scheduler-emulator demo``: the Orders example service and the emulator on a fast clock.

Starts ``examples/orders/app.py`` on a local port (``--port``; a free one by default), loads
``examples/orders/jobs.yaml`` pointed at it, and drives a :class:`ManualClock` through a few
simulated days, printing every attempt as it is made: the nightly sweep at 02:00Z and the
six-hourly report, whose first attempt of each run meets the example's busy ``ReportStore``
(the handler raises, the timer router answers 500) and is retried 10 s later; and the daily
``restock`` Pub/Sub job, published in-process and pushed to the service's subscriber
(``POST /_pubsub/restock``) as a Pub/Sub push request, so no Pub/Sub emulator is needed.
Each attempt's line is printed as the attempt ends, and what the service logged while it
handled that attempt (``Sweep scheduled for …``, the router's failure lines, without
tracebacks) right under it, indented: the service's lines are held until their attempt's line
is out, so the order is the same on a terminal, in a pipe or in a file.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import IO

from werkzeug.serving import make_server

from ..domain.attempts import Attempt, iso
from ..domain.errors import ConfigurationError
from ..runtime import (
    DEFAULT_LOCATION,
    DEFAULT_PROJECT,
    AttemptLog,
    Emulator,
    InProcessPublisher,
    ManualClock,
)
from ..server.daemon import check_port_free
from .jobs_file import load_jobs_file
from .timeline import plural

__all__ = [
    "DEMO_START",
    "EXAMPLE_BASE_URL",
    "describe",
    "find_example_dir",
    "load_example",
    "run_demo",
]

DEMO_START = datetime(2026, 9, 24, 0, 0, tzinfo=UTC)
EXAMPLE_BASE_URL = "http://127.0.0.1:8000"


def find_example_dir() -> Path:
    """Return the ``examples/orders`` folder of a source checkout.

    Looked up under the current directory, then next to the installed package (an editable
    install from a clone).

    :raises ConfigurationError: if neither has it.
    """
    candidates = [
        Path.cwd() / "examples" / "orders",
        Path(__file__).resolve().parents[2] / "examples" / "orders",
    ]
    for candidate in candidates:
        if (candidate / "app.py").is_file() and (candidate / "jobs.yaml").is_file():
            return candidate
    raise ConfigurationError(
        "the demo needs the examples/orders folder of a clone of the repository; run it from "
        "the clone's top directory (looked in: " + ", ".join(str(c) for c in candidates) + ")."
    )


def load_example(example_dir: Path) -> ModuleType:
    """Import ``app.py`` of ``example_dir`` as a module."""
    spec = importlib.util.spec_from_file_location("orders_example_app", example_dir / "app.py")
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot import {example_dir / 'app.py'}.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def describe(attempt: Attempt) -> str:
    """One timeline line for ``attempt`` (an HTTP request, or a Pub/Sub publish)."""
    if "pubsubTopic" in attempt.request:
        return (
            f"  {iso(attempt.start_time)}  {attempt.job_id:<8} attempt {attempt.attempt}  "
            f"PUBLISH {attempt.request['pubsubTopic']}  -> {attempt.outcome}"
        )
    path = attempt.request["url"].split("/", 3)[-1]
    schedule_time = attempt.schedule_time or "(none)"
    return (
        f"  {iso(attempt.start_time)}  {attempt.job_id:<8} attempt {attempt.attempt}  "
        f"{attempt.request['method']} /{path:<23}  ScheduleTime={schedule_time}  "
        f"-> {attempt.outcome}"
    )


def run_demo(days: int, speed: float, out: IO[str], port: int = 0) -> int:
    """Run the demo for ``days`` simulated days; ``speed`` real seconds per simulated hour; the
    service on 127.0.0.1:``port`` (0: a free port).

    :return: 0 when every nightly run reached the service, 1 otherwise.
    :raises ConfigurationError: for ``days`` outside 1 to 3,650 (ten years) or ``speed``
        outside 0 to 3,600 seconds (not a number included), or a ``port`` that cannot be bound.
    """
    if not 1 <= days <= 3650:
        raise ConfigurationError(f"--days must be from 1 to 3650 (ten years); got {days}.")
    if not 0 <= speed <= 3600:  # NaN too
        raise ConfigurationError(f"--speed must be from 0 to 3600 seconds; got {speed}.")
    example_dir = find_example_dir()
    module = load_example(example_dir)
    orders = module.OrderLog()
    reports = module.ReportStore()  # busy on the first try of each run: retries show
    restocks = module.RestockLog()  # what the service's Pub/Sub subscriber received
    app = module.create_app(orders, reports=reports, restocks=restocks)
    check_port_free("127.0.0.1", port)  # (werkzeug would exit the process)
    server = make_server("127.0.0.1", port, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_port}"
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    timeline = _Timeline(out)
    handler = _ServiceLines(timeline)
    handler.setFormatter(_NoTracebackFormatter("      %(message)s"))
    orders_logger = logging.getLogger("orders")
    orders_logger.setLevel(logging.INFO)
    service_loggers = [orders_logger, logging.getLogger("scheduler_emulator.service")]
    for service_logger in service_loggers:
        service_logger.addHandler(handler)

    emulator = Emulator(
        ManualClock(DEMO_START),
        project=DEFAULT_PROJECT,
        location=DEFAULT_LOCATION,
        attempt_log=timeline,
    )
    publisher = emulator.publisher
    assert isinstance(publisher, InProcessPublisher)  # the default: messages stay in-process
    publisher.subscribe_push("restock", f"{base_url}/_pubsub/restock")
    jobs = load_jobs_file(
        example_dir / "jobs.yaml", project=DEFAULT_PROJECT, location=DEFAULT_LOCATION
    )
    for job in jobs:
        target = job.http_target
        if target is not None:
            uri = target.uri.replace(EXAMPLE_BASE_URL, base_url)
            job = replace(job, http_target=replace(target, uri=uri))
        emulator.create_job(job)
    out.write(
        f"Orders example service on {base_url}; emulator on a manual clock from "
        f"{iso(DEMO_START)}, {len(jobs)} jobs from {example_dir / 'jobs.yaml'}.\n"
        f"Simulating {days} day(s); each line is one attempt as the service received it.\n\n"
    )
    pause = threading.Event()
    try:
        for _ in range(days * 24):
            emulator.advance(timedelta(hours=1))  # each attempt's line is written as it ends
            out.flush()
            if speed > 0:
                pause.wait(speed)
    finally:
        server.shutdown()
        for service_logger in service_loggers:
            service_logger.removeHandler(handler)
        timeline.write_held()
    attempts = emulator.attempts()
    failed = sum(1 for a in attempts if a.code != "OK")
    out.write(
        f"\n{len(attempts)} attempts ({failed} failed and retried); the service counted "
        f"{plural(orders.sweeps, 'nightly sweep')}, {plural(len(reports.saved), 'report')} "
        f"and {plural(len(restocks.received), 'restock request')} in {plural(days, 'day')}.\n"
        "Next: run the daemon yourself — see README.md, 'Run the daemon'.\n"
    )
    emulator.close()
    return 0 if orders.sweeps == days else 1


class _Timeline(AttemptLog):
    """The demo's output: an execution log that writes one :func:`describe` line per finished
    attempt, followed by the service's log lines held since the previous attempt ended (those
    of this attempt: the manual clock sends one attempt at a time and the service logs before
    it answers)."""

    def __init__(self, out: IO[str]) -> None:
        super().__init__(io.StringIO())
        self._out = out
        self._lock = threading.Lock()
        self._held: list[str] = []

    def hold(self, line: str) -> None:
        """Keep a line the service logged (on its own thread) until its attempt's line is out."""
        with self._lock:
            self._held.append(line)

    def write_held(self) -> None:
        """Write the held service lines."""
        with self._lock:
            lines, self._held = self._held, []
        for line in lines:
            self._out.write(line + "\n")

    def started(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        """Nothing: an attempt's line is written when it ends."""

    def finished(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        """Write ``attempt``'s line, then what the service logged while handling it."""
        self._out.write(describe(attempt) + "\n")
        self.write_held()


class _ServiceLines(logging.Handler):
    """Hands each formatted record of the service's loggers to the timeline to hold."""

    def __init__(self, timeline: _Timeline) -> None:
        super().__init__()
        self._timeline = timeline

    def emit(self, record: logging.LogRecord) -> None:
        """Hold the formatted record."""
        self._timeline.hold(self.format(record))


class _NoTracebackFormatter(logging.Formatter):
    """Formats the message alone: the router logs a handler's exception with its traceback,
    which the demo's timeline does not need (the busy report store fails on purpose)."""

    def format(self, record: logging.LogRecord) -> str:
        """Return ``record`` formatted without its exception or stack information."""
        bare = {**record.__dict__, "exc_info": None, "exc_text": None, "stack_info": None}
        return super().format(logging.makeLogRecord(bare))
