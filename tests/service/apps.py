"""What the service tests put the timer router in: the example timers, and the Flask app
functions-framework serves for an HTTP function.

functions-framework itself is not a dependency: it hands a Flask request to the user's function
on every path and turns the return value into a response with ``flask.make_response``;
:func:`functions_framework_app` does the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import flask

from scheduler_emulator.service import TimerRequest, TimerRouter

#: The methods :func:`functions_framework_app` routes to the function by default.
ALL_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass
class Order:
    """The ``report`` timer's payload."""

    sku: str
    quantity: int = 1


class SeedTimers:
    """A router with the example timers, recording each run as ``(timer, argument)`` in ``runs``:

    - ``nightly(request: TimerRequest)`` records the request;
    - ``report(order: Order)`` records the order;
    - ``explode()`` raises ``RuntimeError("disk full")``.

    :param prefix: the router's route prefix.
    :param app: the WSGI app for every other path (``None``: 404).
    """

    def __init__(self, prefix: str = "/_triggers/timer/", app: Any = None) -> None:
        self.runs: list[tuple[str, Any]] = []
        self.router = router = TimerRouter(prefix, app)

        @router.timer("nightly")
        def nightly(request: TimerRequest) -> None:
            self.runs.append(("nightly", request))

        @router.timer("report")
        def report(order: Order) -> None:
            self.runs.append(("report", order))

        @router.timer("explode")
        def explode() -> None:
            raise RuntimeError("disk full")

    @property
    def seen(self) -> list[tuple[str, Any]]:
        """``runs`` with each nightly request replaced by its schedule time header."""
        return [
            (name, arg.schedule_time_header if isinstance(arg, TimerRequest) else arg)
            for name, arg in self.runs
        ]


def functions_framework_app(
    function: Callable[[flask.Request], Any], methods: Sequence[str] = ALL_METHODS
) -> flask.Flask:
    """What functions-framework serves for an HTTP function: every path, each of ``methods``."""
    app = flask.Flask("function")

    def run(path: str) -> flask.Response:
        return flask.make_response(function(flask.request))

    app.add_url_rule("/", "run", run, methods=list(methods), defaults={"path": ""})
    app.add_url_rule("/<path:path>", "run", run, methods=list(methods))
    return app
