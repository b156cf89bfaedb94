"""Helpers shared by the test modules: a recording WSGI target, the Orders example's nightly
job, the one ``wait_for``, a free port, the fenced blocks of a Markdown document and the one
reader of case tables (``case_table``).

Imported as ``from tests.support import …`` (not from ``conftest``: several conftest files exist and
would shadow each other's module name).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from scheduler_emulator import HttpTarget, SystemClock
from scheduler_emulator.domain.resources import HttpMethod
from scheduler_emulator.realtime import real_monotonic
from scheduler_emulator.tools.targets_setup import group_alive

TARGET = "http://target.test/_triggers/timer/nightly"

T = TypeVar("T")


@dataclass
class Received:
    """One request the recording target received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RecordingTarget:
    """A WSGI app that records each request and answers ``status`` (a code or a callable) with
    ``body``."""

    status: int | Callable[[Received], int] = 200
    body: bytes = b"ok"
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        headers = {
            key[5:].replace("_", "-").title(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        received = Received(
            environ["REQUEST_METHOD"],
            environ["PATH_INFO"],
            environ.get("QUERY_STRING", ""),
            headers,
            environ["wsgi.input"].read(length) if length else b"",
        )
        with self.lock:
            self.requests.append(received)
        with self.arrived:
            self.arrived.notify_all()
        status = self.status(received) if callable(self.status) else self.status
        start_response(f"{status} X", [("Content-Type", "text/plain")])
        return [self.body]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Return the requests once at least ``count`` arrived (over a real socket).

        :param timeout: seconds to wait at most.
        :raises AssertionError: if fewer than ``count`` arrived within ``timeout``.
        """
        with self.arrived:
            done = self.arrived.wait_for(lambda: len(self.requests) >= count, timeout)
        assert done, f"expected {count} request(s) within {timeout} s; got {self.requests}"
        return list(self.requests)


def assert_delivered(
    request: Received,
    schedule_time: str,
    job: str = "nightly",
    path: str = "/_triggers/timer/nightly",
) -> None:
    """Assert that ``request`` is Cloud Scheduler's POST to ``path`` for the run of ``job`` at
    ``schedule_time`` (RFC 3339, as the header carries it): the ``X-CloudScheduler-*`` headers
    and Google's User-Agent.

    :raises AssertionError: naming the first thing that differs.
    """
    assert (request.method, request.path) == ("POST", path)
    assert request.headers["X-Cloudscheduler-Jobname"] == job
    assert request.headers["X-Cloudscheduler-Scheduletime"] == schedule_time
    assert request.headers["X-Cloudscheduler"] == "true"
    assert request.headers["User-Agent"] == "Google-Cloud-Scheduler"


def retry_config_json(retry_count: int) -> dict[str, Any]:
    """The ``retryConfig`` the API shows for a job that set only ``retryCount``: the other four
    fields at Google's defaults (no retry duration limit, backoff 5 s doubling 5 times up to
    an hour)."""
    return {
        "retryCount": retry_count,
        "maxRetryDuration": "0s",
        "minBackoffDuration": "5s",
        "maxBackoffDuration": "3600s",
        "maxDoublings": 5,
    }


def stored_http_target(uri: str, **fields: Any) -> HttpTarget:
    """The HTTP target the service keeps for one that set only ``uri`` (and ``fields``): method
    POST and Google's ``User-Agent`` header."""
    return HttpTarget(
        uri=uri,
        http_method=HttpMethod.POST,
        headers={"User-Agent": "Google-Cloud-Scheduler"},
        **fields,
    )


def nightly_job(**overrides: Any) -> dict[str, Any]:
    """The Orders example's nightly job as REST JSON, pointed at the recording target."""
    job: dict[str, Any] = {
        "name": "nightly",
        "schedule": "0 2 * * *",
        "timeZone": "Etc/UTC",
        "httpTarget": {"uri": TARGET, "httpMethod": "POST"},
        "retryConfig": {"retryCount": 3},
    }
    job.update(overrides)
    return job


class ShiftedClock(SystemClock):
    """Real time shifted so that the next whole minute is ``lead`` seconds away."""

    def __init__(self, lead: float) -> None:
        real = super().now()
        boundary = real.replace(second=0, microsecond=0) + timedelta(minutes=1)
        self.shift = boundary - real - timedelta(seconds=lead)

    def now(self) -> datetime:
        return super().now() + self.shift


def wait_for(condition: Callable[[], T], bound_seconds: float, what: str | None = None) -> T:
    """Poll ``condition`` every 20 ms until it returns a truthy value, for at most
    ``bound_seconds`` (real time, whatever freezegun does): the one polling helper of the tests.

    :param condition: called until its value is truthy.
    :param bound_seconds: how long to keep asking.
    :param what: what is waited for; with it, running out of time raises.
    :raises AssertionError: on timeout when ``what`` is given ("gave up waiting for <what>").
    :return: the first truthy value; on timeout without ``what``, the last (falsy) value, so
        that ``assert wait_for(...)`` fails.
    """
    deadline = real_monotonic() + bound_seconds
    tick = threading.Event()  # never set: wait() is a bounded pause between polls
    while not (value := condition()):
        if real_monotonic() > deadline:
            if what is not None:
                raise AssertionError(f"gave up waiting for {what} after {bound_seconds:g} s")
            return value
        tick.wait(0.02)
    return value


def send_started(transport: Any, request: Any, timeout_seconds: float) -> Any:
    """Send ``request`` the threaded driver's way — ``transport.start`` (a
    ``StartingTransport``), the result coming to a callback on another thread — and return that
    result (a ``TransportResult``).

    :raises AssertionError: when the transport cannot start the request, or no result came
        within ``timeout_seconds`` plus 10 s.
    """
    results: list[Any] = []
    came = threading.Event()

    def done(result: Any) -> None:
        results.append(result)
        came.set()

    assert transport.start(request, timeout_seconds, done), "the transport did not start it"
    assert came.wait(timeout_seconds + 10), "no result came"
    return results[0]


def stop_group(pid: int) -> None:
    """Stop the process group led by ``pid`` (e.g. gcloud and the Java emulator it launched):
    SIGTERM first; whatever of the group is still there 20 s later gets SIGKILL."""
    if group_alive(pid):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    pause = threading.Event()
    while group_alive(pid) and time.monotonic() < deadline:
        pause.wait(0.1)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap gcloud if it is ours, so it lingers no zombie
    if group_alive(pid):  # only what outlived the 20 s: a gone group's number is reused
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


#: Where an xdist run's workers find the Firestore emulator they share, in the run's
#: temporary directory (``firestore_emulator`` in tests/service/guard/conftest.py).
FIRESTORE_SHARED_FILE = "firestore-emulator.pid-host"


@contextlib.contextmanager
def refusing_url() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` where a connection is refused for the block: the port is held
    bound but not listening, so that no other test's server takes it meanwhile."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, below Linux's ephemeral range
    (32768 up), where outgoing connections take theirs: a process given it starts seconds
    later, and a port the OS picked could meanwhile be another test's connection (the Firebase
    hub once failed so: "port taken")."""
    for port in random.sample(range(20000, 32768), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free TCP port from 20000 to 32767")


_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


@dataclass
class Fenced:
    """One fenced block of a Markdown document."""

    #: The word after the opening fence (``python``, ``bash``…), or "".
    language: str
    #: The opening fence's line number (from 1).
    line: int
    #: The last non-blank line before the fence, stripped (where markers such as
    #: ``<!-- illustrative: why -->`` stand).
    previous: str
    #: The lines between the fences, the fence's indentation removed, ending with a newline.
    text: str


def fenced_blocks(doc: Path) -> list[Fenced]:
    """Every fenced block of the Markdown file ``doc``, in order (fences may be indented)."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found: list[Fenced] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        indent, language = match.groups()
        end = index + 1
        while not lines[end].strip().startswith("```"):
            end += 1
        previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
        body = "\n".join(line.removeprefix(indent) for line in lines[index + 1 : end])
        found.append(Fenced(language, index + 1, previous.strip(), body + "\n"))
        index = end + 1
    return found


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Run ``scheduler-emulator ARGV`` in this process, its output captured.

    :return: (exit code, stdout, stderr).
    """
    from scheduler_emulator.tools.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(argv))
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def run_command(
    capsys: pytest.CaptureFixture[str] | None, *argv: str, process: bool = False
) -> tuple[int, str, str]:
    """Run ``scheduler-emulator ARGV`` expected to exit by itself: in this process through the
    command line's ``main`` (argparse's ``SystemExit`` gives the code; output read with
    ``capsys``), or with ``process`` or without ``capsys`` as a real subprocess (``python -m
    scheduler_emulator``, stdin empty, 60 s bound), which each family of refusals keeps for one
    case (the exit code of the process, no traceback, the whole stderr).

    :return: (exit code, stdout, stderr).
    """
    if process or capsys is None:
        done = subprocess.run(
            [sys.executable, "-m", "scheduler_emulator", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        return done.returncode, done.stdout, done.stderr
    from scheduler_emulator.tools.cli import main

    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def case_table(test_file: str, table: str, *more: Any) -> pytest.MarkDecorator:
    """``@pytest.mark.parametrize`` over the ``[[table]]`` entries of a test module's case file.

    The case file of ``tests/<layer>/test_<name>.py`` is ``tests/<layer>/cases/<name>.toml``
    (pass ``__file__``). Each entry is one case: its ``id`` key becomes the test id and its other
    keys, in the order the first entry with the usual keys gives them, the test function's
    arguments. Tables of plain values (schedules, REST bodies, messages, field paths) live there
    rather than in long ``pytest.param`` lists, so a case is one small block a reader can scan.
    ``more`` are ``pytest.param`` cases appended after the file's: those with values TOML cannot
    hold or that are computed (a 501-character ID, a size just over a limit).

    Raises ``KeyError`` for a table the file lacks and ``ValueError`` when an entry has no ``id``,
    repeats an ``id`` or has other keys than most entries have (a misspelt key fails loudly,
    naming the entry's number, id and the keys it misses or adds, instead of dropping a case).
    """
    path = Path(test_file).parent / "cases" / (Path(test_file).stem.removeprefix("test_") + ".toml")
    with path.open("rb") as handle:
        tables = tomllib.load(handle)
    if table not in tables:
        raise KeyError(f"{path} has no [[{table}]]; its tables: {', '.join(tables) or 'none'}")
    entries = tables[table]
    names = _case_keys(path, table, entries)
    params = [pytest.param(*(entry[name] for name in names), id=entry["id"]) for entry in entries]
    return pytest.mark.parametrize(names, [*params, *more])


def _case_keys(path: Path, table: str, entries: list[dict[str, Any]]) -> list[str]:
    """The argument names of a case table: the keys most of its entries have, besides ``id``
    (so a misspelt key in the first entry is blamed on that entry, not on all the others)."""
    shapes = Counter(frozenset(entry) for entry in entries)
    usual = max(shapes, key=lambda shape: shapes[shape])  # the first of the most common
    names = [key for key in next(e for e in entries if frozenset(e) == usual) if key != "id"]
    problems, seen = [], {}
    for number, entry in enumerate(entries, 1):
        case_id = entry.get("id")
        missing = sorted({*names, "id"} - set(entry))
        extra = sorted(set(entry) - {*names, "id"})
        if missing or extra:
            problems.append(f"entry {number} ({case_id!r}): missing {missing}, unexpected {extra}")
        elif case_id in seen:
            problems.append(f"entry {number}: id {case_id!r} is entry {seen[case_id]}'s too")
        seen.setdefault(case_id, number)
    if problems:
        raise ValueError(
            f"{path} [[{table}]]: every entry needs the keys id, {', '.join(names)}; "
            + "; ".join(problems)
        )
    return names


def grpc_client_own_connection(host: str) -> Any:
    """Google's ``CloudSchedulerClient`` on a gRPC channel with a TCP connection of its own,
    as a client in another process has (channels of one process otherwise share one
    connection per address). Needs the ``[grpc]`` extra.

    :param host: the daemon's ``host:port``.
    """
    import grpc
    from google.cloud import scheduler_v1
    from google.cloud.scheduler_v1.services.cloud_scheduler import transports

    channel = grpc.insecure_channel(host, options=[("grpc.use_local_subchannel_pool", 1)])
    return scheduler_v1.CloudSchedulerClient(
        transport=transports.CloudSchedulerGrpcTransport(channel=channel)
    )


def read_all(sock: socket.socket) -> bytes:
    """Read until the peer closes the connection (bounded by the socket's timeout)."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)
