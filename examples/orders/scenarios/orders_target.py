"""The Orders example service as a scenario target: a slow nightly sweep, with or without the
run-once guard.

``duplicates.yaml`` serves ``create_app()`` in-process; ``duplicates-guarded.yaml`` serves
``create_guarded_app()``. Both use the example's own app (``../app.py``, loaded as the demo
loads it) unchanged, with two additions made from outside:

- the nightly sweep takes ``sweep_seconds`` of real time (an :class:`~app.OrderLog` whose
  ``sweep`` works that long), so that a ``deadline`` fault's retry arrives while the first
  handler still runs — the seed's "long-running target" cause of duplicates;
- with ``guard=True``, every timer request goes through a
  :class:`~scheduler_emulator.service.RunOnceGuard` (in-memory SQLite store) before the app:
  a duplicate of a completed run is answered 200 without sweeping, a run in progress 409.

A service guards its handlers with ``@guard.once`` under ``@router.timer`` (see
``scheduler_emulator.service.guard``); this module wraps the WSGI app instead, with the guard's
framework-neutral :meth:`~scheduler_emulator.service.RunOnceGuard.run`, so that the example's
``app.py`` stays as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from scheduler_emulator.service import DEFAULT_PREFIX, RunOnceGuard
from scheduler_emulator.service.guard import DUPLICATE_RESPONSE, RunRefusedError
from scheduler_emulator.tools.demo import load_example

orders = load_example(Path(__file__).resolve().parent.parent)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class SlowOrderLog(orders.OrderLog):  # type: ignore[name-defined]
    """An :class:`OrderLog` whose sweep takes ``seconds`` of real time before it counts.

    :param seconds: how long each sweep works, in real seconds.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def sweep(self) -> int:
        """Work for ``seconds`` (a slow handler), then count the sweep.

        :return: the number of sweeps so far, this one included.
        """
        threading.Event().wait(self.seconds)  # the slow work itself, in real time
        return int(super().sweep())


def guarded(app: WsgiApp, guard: RunOnceGuard, prefix: str = DEFAULT_PREFIX) -> WsgiApp:
    """Put ``guard`` in front of the timer requests (paths under ``prefix``) of ``app``.

    :param app: the WSGI app.
    :param guard: the run-once guard.
    :param prefix: the timer routes' path prefix.
    :return: a WSGI app answering as the guard decides (200 duplicate, 400, 409) or as ``app``.
    """

    def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("PATH_INFO", "").startswith(prefix):
            return app(environ, start_response)
        headers = {
            key[5:].replace("_", "-"): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        answer: dict[str, Any] = {}

        def capture(status: str, response_headers: list[tuple[str, str]], *exc: Any) -> Any:
            answer["status"], answer["headers"] = status, response_headers
            return lambda data: None

        def work() -> list[bytes]:
            chunks = app(environ, capture)
            try:
                return list(chunks)
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()

        def acknowledged(_: list[bytes]) -> bool:
            return 200 <= int(answer["status"].split(" ", 1)[0]) <= 299

        try:
            result = guard.run(headers, work, succeeded=acknowledged)
        except RunRefusedError as refusal:
            response = refusal.response()
            start_response(response.status_line, list(response.headers))
            return [response.body]
        if not result.ran:
            start_response(DUPLICATE_RESPONSE.status_line, list(DUPLICATE_RESPONSE.headers))
            return [DUPLICATE_RESPONSE.body]
        start_response(answer["status"], answer["headers"])
        return result.value or []

    return middleware


def create_app(*, guard: bool = False, sweep_seconds: float = 0.6) -> WsgiApp:
    """A fresh Orders service (its own sweep count) for one replay.

    :param guard: put a :class:`RunOnceGuard` in front of the timers.
    :param sweep_seconds: how long each nightly sweep works, in real seconds.
    :return: the WSGI app; ``GET /sweeps`` answers ``{"sweeps": N, ...}``.
    """
    app: WsgiApp = orders.create_app(SlowOrderLog(sweep_seconds))
    return guarded(app, RunOnceGuard()) if guard else app


def create_guarded_app() -> WsgiApp:
    """A fresh Orders service behind a :class:`RunOnceGuard`: ``create_app(guard=True)`` as the
    no-argument factory a scenario's ``target.app`` may name."""
    return create_app(guard=True)
