"""Helpers to run the daemon as a real subprocess and a recording target on a real socket."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
from conftest import RecordingTarget
from werkzeug.serving import make_server

LISTENING = re.compile(r"listening on (http://[\d.]+:\d+)")


class Daemon:
    """``scheduler-emulator start …`` in a subprocess; ``url`` is known once it listens."""

    def __init__(self, *args: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scheduler_emulator", "start", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = self._wait_for_url()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line)
        self.lines.put("")

    def _wait_for_url(self, timeout: float = 30.0) -> str:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                self.kill()
                raise AssertionError("the daemon printed no listening line within 30 s") from None
            if not line:
                stderr = self.process.stderr.read() if self.process.stderr else ""
                self.kill()
                raise AssertionError(f"the daemon exited early: {stderr}")
            match = LISTENING.search(line)
            if match:
                self.first_line = line
                return match.group(1)

    def get(self, path: str, **kwargs: Any) -> Any:
        response = requests.get(self.url + path, timeout=30, **kwargs)
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: dict[str, Any] | None = None) -> requests.Response:
        return requests.post(self.url + path, data=json.dumps(body or {}), timeout=60)

    def attempts(self, job: str | None = None) -> list[dict[str, Any]]:
        return self.get("/_emulator/attempts", params={"job": job} if job else None)["attempts"]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.process.send_signal(sig)
        return self.process.wait(timeout=30)

    def kill(self) -> None:
        """Kill the daemon if it still runs and release its pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@contextmanager
def running_daemon(*args: str) -> Iterator[Daemon]:
    """Start a daemon and make sure it is gone afterwards."""
    daemon = Daemon(*args)
    try:
        yield daemon
    finally:
        daemon.kill()


@contextmanager
def serving(app: RecordingTarget) -> Iterator[str]:
    """Serve ``app`` on a free local port; yield its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
