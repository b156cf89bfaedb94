"""The Orders example as a FastAPI service: the same timers as ``app.py``, as ``async def``.

- ``nightly`` (``POST /_triggers/timer/nightly``) sweeps stale orders and logs ``Sweep scheduled
  for <ScheduleTime>``;
- ``report`` (``POST /_triggers/timer/report``) binds the job's JSON body to the pydantic model
  :class:`Order` and saves it in the (deliberately flaky) :class:`~app.ReportStore`: the first
  try of every run raises, the router answers the 500 problem, Cloud Scheduler's retry saves it.

``GET /sweeps`` answers ``{"sweeps": N, "reports": [...]}``. The router is installed with
``router.init_app(app)``, which adds it as ASGI middleware in front of FastAPI's own routes.

Run it with ``python examples/orders/app_fastapi.py [PORT]`` (uvicorn, default port 8000); its
tests are those of ``test_orders.py``, which runs every test on the Flask, FastAPI and Starlette
variants alike.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import pydantic
from app import OrderLog, ReportStore
from fastapi import FastAPI

from scheduler_emulator.service import TimerRequest, TimerRouter

logger = logging.getLogger("orders")


class Order(pydantic.BaseModel):
    """The ``report`` job's payload, validated by pydantic from its JSON body.

    :param id: the order's identifier, e.g. ``"A-1001"``.
    :param total: the order's total, in the shop's currency.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    id: str
    total: float


def create_app(log: OrderLog | None = None, *, reports: ReportStore | None = None) -> FastAPI:
    """Build the Orders service on FastAPI, with the ``nightly`` and ``report`` timers.

    :param log: where sweeps are counted; a fresh :class:`~app.OrderLog` when omitted.
    :param reports: where reports are saved; a fresh, flaky :class:`~app.ReportStore` when
        omitted.
    :return: the FastAPI app; its timers are served under ``/_triggers/timer/``.
    """
    orders = log if log is not None else OrderLog()
    store = reports if reports is not None else ReportStore()
    app = FastAPI(title="orders")
    router = TimerRouter()

    @router.timer("nightly")
    async def nightly(request: TimerRequest) -> None:
        scheduled = request.schedule_time_header or "(no ScheduleTime: not a scheduled run)"
        logger.info("Sweep scheduled for %s", scheduled)
        orders.sweep()

    @router.timer("report")
    async def report(order: Order, request: TimerRequest) -> None:
        store.save(order, run=request.schedule_time_header)  # type: ignore[arg-type]
        logger.info("Report saved for order %s (total %.2f)", order.id, order.total)

    @app.get("/sweeps")
    async def sweeps() -> dict[str, Any]:
        return {"sweeps": orders.sweeps, "reports": [dict(o) for o in store.saved]}

    router.init_app(app)
    return app


app = create_app()

if __name__ == "__main__":
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
