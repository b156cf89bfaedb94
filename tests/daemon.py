"""Helpers to run the daemon as a real subprocess and a recording target on a real socket."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
from werkzeug.serving import make_server

from pytest_plugin.live import LiveScheduler
from tests.support import RecordingTarget

#: ``start`` flags of a daemon on a manual clock at 2026-09-24T01:59:00Z (one minute before the
#: 02:00 runs the tests schedule).
MANUAL = ("--clock", "manual", "--start", "2026-09-24T01:59:00Z")


class Daemon(LiveScheduler):
    """:class:`LiveScheduler` with the raw request helpers the daemon tests use."""

    def get(self, path: str, **kwargs: Any) -> Any:
        response = requests.get(self.url + path, timeout=30, **kwargs)
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: dict[str, Any] | None = None) -> requests.Response:
        return requests.post(self.url + path, json=body or {}, timeout=60)

    def kill(self) -> None:
        """SIGKILL the daemon (a crash: nothing of its stop runs), then release its pipes."""
        self.stop(signal.SIGKILL)
        self.close()


@contextmanager
def running_daemon(*args: str) -> Iterator[Daemon]:
    """Start a daemon and make sure it is gone afterwards (stopped as the live fixture stops
    one: SIGTERM, then SIGKILL)."""
    daemon = Daemon(*args)
    try:
        yield daemon
    finally:
        daemon.close()


@contextmanager
def serving(app: RecordingTarget) -> Iterator[str]:
    """Serve ``app`` on a free local port; yield its base URL."""
    with serving_in_thread(make_server("127.0.0.1", 0, app, threaded=True)) as url:
        yield url


@contextmanager
def serving_in_thread(server: Any) -> Iterator[str]:
    """Run a ``socketserver``-style server (bound to a 127.0.0.1 port) on a thread; yield its
    base URL; shut it down afterwards (within 50 ms: the poll interval ``shutdown`` waits on)."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
