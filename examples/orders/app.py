"""The Orders example service: a Flask app whose timer routes Cloud Scheduler calls.

- ``POST /_triggers/timer/nightly`` sweeps stale orders (the seed's nightly job).
- ``POST /_triggers/timer/report`` builds a report from the JSON body; it fails the first
  attempt of every run with a 500, so the emulator's retries show up.
- ``GET /sweeps`` answers ``{"sweeps": N, "reports": N, "deliveries": [...]}`` (a probe for tests).

Run it alone with ``python examples/orders/app.py [PORT]`` (default 8000), then start the
emulator with ``scheduler-emulator start --jobs examples/orders/jobs.yaml --in-memory``.
"""

from __future__ import annotations

import logging
import sys
import threading
from dataclasses import dataclass, field

from flask import Flask, jsonify, request

logger = logging.getLogger("orders")


@dataclass
class OrderLog:
    """What the service did: sweeps, reports, and every delivery it saw (thread-safe)."""

    sweeps: int = 0
    reports: int = 0
    deliveries: list[dict[str, str]] = field(default_factory=list)
    failed_runs: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sweep(self) -> None:
        """Sweep stale orders (here: count the sweep)."""
        with self.lock:
            self.sweeps += 1


def create_app(log: OrderLog | None = None) -> Flask:
    """Return the Orders WSGI app, recording into ``log`` (a fresh one by default)."""
    app = Flask("orders")
    orders = log if log is not None else OrderLog()
    app.config["ORDER_LOG"] = orders

    def seen(timer: str) -> dict[str, str]:
        entry = {
            "timer": timer,
            "jobName": request.headers.get("X-CloudScheduler-JobName", ""),
            "scheduleTime": request.headers.get("X-CloudScheduler-ScheduleTime", ""),
            "userAgent": request.headers.get("User-Agent", ""),
        }
        with orders.lock:
            orders.deliveries.append(entry)
        return entry

    @app.post("/_triggers/timer/nightly")
    def nightly() -> tuple[str, int]:
        entry = seen("nightly")
        orders.sweep()
        logger.info("orders: nightly sweep for run %s -> 200", entry["scheduleTime"])
        return "", 200

    @app.post("/_triggers/timer/report")
    def report() -> tuple[str, int]:
        entry = seen("report")
        payload = request.get_json(force=True, silent=True) or {}
        run = entry["scheduleTime"]
        with orders.lock:
            first_try = run not in orders.failed_runs
            orders.failed_runs.add(run)
            if not first_try:
                orders.reports += 1
        if first_try:
            logger.info("orders: report %s for run %s -> 500 (first try fails)", payload, run)
            return "report store busy", 500
        logger.info("orders: report %s for run %s -> 200", payload, run)
        return "", 200

    @app.get("/sweeps")
    def sweeps():  # type: ignore[no-untyped-def]
        with orders.lock:
            return jsonify(
                sweeps=orders.sweeps, reports=orders.reports, deliveries=list(orders.deliveries)
            )

    return app


app = create_app()

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    app.run(host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
