"""The Orders example service: a Flask app whose timers Cloud Scheduler runs.

Two timers, served by a :class:`~scheduler_emulator.service.TimerRouter` in front of the app:

- ``nightly`` (``POST /_triggers/timer/nightly``, the seed's job) sweeps stale orders: it counts
  the sweep in :class:`OrderLog` and logs ``Sweep scheduled for <ScheduleTime>``;
- ``report`` (``POST /_triggers/timer/report``) takes an :class:`Order` from the job's JSON body
  and saves it in a :class:`ReportStore`. The store is **deliberately flaky**: it is busy on the
  first try of every run, so the handler raises, the router answers 500 and Cloud Scheduler's
  retry (same ``X-CloudScheduler-ScheduleTime``) succeeds. ``ReportStore(busy_on_first_try=False)``
  turns that off.

A Pub/Sub subscriber too: the ``restock`` job publishes ``{"sku", "quantity"}`` to the topic
``restock`` every morning, and a push subscription delivers it to ``POST /_pubsub/restock``,
which decodes the push envelope and records the request in a :class:`RestockLog`.

``GET /sweeps`` answers ``{"sweeps": N, "reports": [...], "restocks": [...]}``, a probe for
tests and curl.

Run it with ``python examples/orders/app.py [PORT]`` (default 8000), then start the emulator with
``scheduler-emulator start --jobs examples/orders/jobs.yaml --in-memory``; its tests are in
``test_orders.py`` next to this file (``pytest examples/orders``).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import threading
from dataclasses import asdict, dataclass

from flask import Flask, Response, jsonify, request

from scheduler_emulator.service import SchedulerTokenMiddleware, TimerRequest, TimerRouter

logger = logging.getLogger("orders")

#: The Cloud Run service's URL: the audience of the jobs' OIDC tokens (``jobs.yaml``).
AUDIENCE = "https://orders-abc123-uc.a.run.app"
#: The only service account allowed to run the timers.
INVOKER = "scheduler-invoker@my-project.iam.gserviceaccount.com"
#: Google's signing keys, which Cloud Scheduler's tokens are checked against on Cloud Run.
GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v3/certs"


@dataclass(frozen=True)
class Order:
    """The ``report`` job's payload, bound from its JSON body.

    :param id: the order's identifier, e.g. ``"A-1001"``.
    :param total: the order's total, in the shop's currency.
    """

    id: str
    total: float


class OrderLog:
    """Counts the nightly sweeps; safe to share between request threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sweeps = 0

    @property
    def sweeps(self) -> int:
        """How many sweeps ran so far."""
        with self._lock:
            return self._sweeps

    def sweep(self) -> int:
        """Sweep stale orders (here: count the sweep).

        :return: the number of sweeps so far, this one included.
        """
        with self._lock:
            self._sweeps += 1
            return self._sweeps


class ReportStoreBusy(RuntimeError):
    """The report store refused a write; a retry of the same run will get through."""


class ReportStore:
    """Where reports are saved; busy on the first try of each run, on purpose.

    A run is identified by its ``X-CloudScheduler-ScheduleTime`` (the same on every retry of a
    run); calls without that header (function style, a request sent by hand) share one run key.

    :param busy_on_first_try: when true (the default, what the demo shows), the first
        :meth:`save` of each run raises :class:`ReportStoreBusy`.
    """

    def __init__(self, *, busy_on_first_try: bool = True) -> None:
        self.busy_on_first_try = busy_on_first_try
        self._lock = threading.Lock()
        self._tried: set[str | None] = set()
        self._saved: list[Order] = []

    @property
    def saved(self) -> list[Order]:
        """The orders saved so far, oldest first (a copy)."""
        with self._lock:
            return list(self._saved)

    def save(self, order: Order, run: str | None) -> None:
        """Save the report of ``order`` for the run ``run``.

        :param order: the job's payload.
        :param run: the run's ``X-CloudScheduler-ScheduleTime``, or ``None`` when absent.
        :raises ReportStoreBusy: on the first try of a run, when ``busy_on_first_try`` is set.
        """
        with self._lock:
            first_try = run not in self._tried
            self._tried.add(run)
            if self.busy_on_first_try and first_try:
                raise ReportStoreBusy(
                    f"The report store is busy; the report of order {order.id} for run {run} "
                    "was not saved. A retry of the run will get through."
                )
            self._saved.append(order)


class RestockLog:
    """The restock requests the Pub/Sub subscriber received, with their message IDs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._received: list[dict[str, object]] = []

    @property
    def received(self) -> list[dict[str, object]]:
        """``{"sku", "quantity", "messageId", "publishTime"}`` per message, oldest first."""
        with self._lock:
            return list(self._received)

    def add(self, entry: dict[str, object]) -> None:
        """Record one restock request."""
        with self._lock:
            self._received.append(entry)


def create_app(
    log: OrderLog | None = None,
    *,
    reports: ReportStore | None = None,
    certs_url: str | None = None,
    restocks: RestockLog | None = None,
) -> Flask:
    """Build the Orders service: a Flask app with the ``nightly`` and ``report`` timers.

    :param log: where sweeps are counted; a fresh :class:`OrderLog` when omitted.
    :param reports: where reports are saved; a fresh, flaky :class:`ReportStore` when omitted.
    :param restocks: where the Pub/Sub subscriber records restock requests; a fresh
        :class:`RestockLog` when omitted.
    :param certs_url: when set, every timer request must carry a Cloud Scheduler OIDC token for
        :data:`AUDIENCE`, minted for :data:`INVOKER` and signed by a key at this URL (Google's on
        Cloud Run, the emulator's ``/_emulator/oidc/certs`` locally); others get 401. ``None``
        checks no token.
    :return: the Flask app; its timers are served under ``/_triggers/timer/``.
    """
    orders = log if log is not None else OrderLog()
    store = reports if reports is not None else ReportStore()
    restock_log = restocks if restocks is not None else RestockLog()
    app = Flask("orders")
    router = TimerRouter()

    @router.timer("nightly")
    def nightly(request: TimerRequest) -> None:
        # Cloud Scheduler sends the header for cron jobs; function-style calls have no headers.
        scheduled = request.schedule_time_header or "(no ScheduleTime: not a scheduled run)"
        logger.info("Sweep scheduled for %s", scheduled)
        orders.sweep()

    @router.timer("report")
    def report(order: Order, request: TimerRequest) -> None:
        store.save(order, run=request.schedule_time_header)
        logger.info("Report saved for order %s (total %.2f)", order.id, order.total)

    @app.post("/_pubsub/restock")
    def restock() -> tuple[str, int]:
        # A Pub/Sub push request: {"message": {"data": <base64>, "messageId", ...}, ...}.
        envelope = request.get_json(force=True, silent=True) or {}
        message = envelope.get("message") or {}
        try:
            payload = json.loads(base64.b64decode(message.get("data", "")))
        except ValueError:
            return "not a restock message", 400  # a 4xx makes Pub/Sub redeliver it later
        restock_log.add(
            {
                "sku": payload["sku"],
                "quantity": payload["quantity"],
                "messageId": message.get("messageId"),
                "publishTime": message.get("publishTime"),
            }
        )
        logger.info("Restock of %s x%s requested", payload["sku"], payload["quantity"])
        return "", 204

    @app.get("/sweeps")
    def sweeps() -> Response:
        return jsonify(
            sweeps=orders.sweeps,
            reports=[asdict(o) for o in store.saved],
            restocks=restock_log.received,
        )

    router.init_app(app)
    if certs_url is not None:
        app.wsgi_app = SchedulerTokenMiddleware(  # type: ignore[method-assign]
            app.wsgi_app, audience=AUDIENCE, certs_url=certs_url, email=INVOKER
        )
    return app


def configured_certs_url() -> str | None:
    """The keys the timers' tokens are checked against: ``ORDERS_CERTS_URL`` if set (e.g. the
    emulator's), Google's on Cloud Run (which sets ``K_SERVICE``), else none (no check)."""
    if os.environ.get("ORDERS_CERTS_URL"):
        return os.environ["ORDERS_CERTS_URL"]
    return GOOGLE_CERTS_URL if os.environ.get("K_SERVICE") else None


app = create_app(certs_url=configured_certs_url())

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    app.run(host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
