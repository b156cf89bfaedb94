"""The Orders example as a plain Starlette service behind the router's ASGI wrapper.

The same timers as ``app.py``: ``nightly`` is a plain ``def`` (the router runs it in a worker
thread, off the event loop) and ``report`` an ``async def`` whose payload binds to the dataclass
:class:`~app.Order`. ``router.asgi(starlette_app)`` serves the timer routes in front of the
Starlette app, with no framework integration at all: the same wrapper works for any ASGI app.

Run it with ``python examples/orders/app_starlette.py [PORT]`` (uvicorn, default port 8000).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import asdict

from app import Order, OrderLog, ReportStore
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from scheduler_emulator.service import TimerAsgiMiddleware, TimerRequest, TimerRouter

__all__ = ["Order", "create_app"]

logger = logging.getLogger("orders")


def create_app(
    log: OrderLog | None = None, *, reports: ReportStore | None = None
) -> TimerAsgiMiddleware:
    """Build the Orders service on Starlette, with the ``nightly`` and ``report`` timers.

    :param log: where sweeps are counted; a fresh :class:`~app.OrderLog` when omitted.
    :param reports: where reports are saved; a fresh, flaky :class:`~app.ReportStore` when
        omitted.
    :return: the ASGI app: the timer routes under ``/_triggers/timer/``, then Starlette's.
    """
    orders = log if log is not None else OrderLog()
    store = reports if reports is not None else ReportStore()
    router = TimerRouter()

    @router.timer("nightly")
    def nightly(request: TimerRequest) -> None:
        scheduled = request.schedule_time_header or "(no ScheduleTime: not a scheduled run)"
        logger.info("Sweep scheduled for %s", scheduled)
        orders.sweep()

    @router.timer("report")
    async def report(order: Order, request: TimerRequest) -> None:
        store.save(order, run=request.schedule_time_header)
        logger.info("Report saved for order %s (total %.2f)", order.id, order.total)

    async def sweeps(request: Request) -> JSONResponse:
        return JSONResponse({"sweeps": orders.sweeps, "reports": [asdict(o) for o in store.saved]})

    return router.asgi(Starlette(routes=[Route("/sweeps", sweeps)]))


app = create_app()

if __name__ == "__main__":
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
