"""Shared fixtures: UTC pinned, a recording WSGI target, an emulator on a manual clock, and a
live daemon with a served target (the gcloud and client-library tests)."""

from __future__ import annotations

import compileall
import contextlib
import os
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

os.environ["TZ"] = "UTC"
time.tzset()

from scheduler_emulator.runtime import HttpTransport, WsgiTransport  # noqa: E402
from scheduler_emulator.runtime._clock import ManualClock  # noqa: E402
from scheduler_emulator.runtime._emulator import Emulator  # noqa: E402
from tests.daemon import MANUAL, Daemon, running_daemon, serving  # noqa: E402
from tests.signals import interrupted  # noqa: E402
from tests.support import FIRESTORE_SHARED_FILE, RecordingTarget, stop_group  # noqa: E402

# Google's generated message modules register their protobuf files in one process-wide pool.
# pytester's in-process runs drop the modules a child test imported, and a later import would
# register the same files again ("duplicate file name"): import them once, before any child run.
for _module in ("google.api_core.datetime_helpers", "google.cloud.scheduler_v1"):
    with contextlib.suppress(ImportError):  # the extras that bring them are optional
        __import__(_module)

#: The Firebase projects' function sources are run by the Functions emulator, not imported.
collect_ignore_glob = ["tools/firebase/firebase_project*"]

#: Cache the test modules' assertion rewriting (pytest writes it only when this is false) even
#: under ``PYTHONDONTWRITEBYTECODE=1``: rewriting every module again costs each xdist worker
#: about 10 s of collection.
sys.dont_write_bytecode = False
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_configure(config: pytest.Config) -> None:
    """xdist hands modules out in collection order (:func:`pytest_collection_modifyitems`),
    not by their number of tests: a long module has few tests, each of tens of seconds.

    The controller (or a run without xdist) byte-compiles the package and the tests first
    (``__pycache__``, ignored by git): every daemon and CLI subprocess the tests start imports
    them, and under ``PYTHONDONTWRITEBYTECODE=1`` would compile them from source each time
    (about 0.25 s of CPU per process).

    A SIGTERM ends the run as Ctrl-C does (:func:`interrupted`)."""
    signal.signal(signal.SIGTERM, interrupted)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if not hasattr(config, "workerinput"):
        for name in ("scheduler_emulator", "pytest_plugin", "tests"):
            skip = re.compile(r"firebase_project")  # sources the Functions emulator runs
            compileall.compile_dir(os.path.join(ROOT, name), rx=skip, quiet=2)
    else:
        _rewrite_share(config)


def _rewrite_share(config: pytest.Config) -> None:
    """On a fresh clone every xdist worker rewrote the asserts of every test module, each in
    the same order at the same time (about 5 s of CPU each): each worker first writes pytest's
    cache of its share of the modules, then collects, finding the others' shares cached.
    Uses pytest's own (private) rewriting functions; without them, nothing is done."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        worker, count = config.workerinput["workerid"], config.workerinput["workercount"]
        modules = sorted(Path(ROOT, "tests").rglob("test_*.py"))
        for path in modules[int(worker.removeprefix("gw")) :: count]:
            pyc = rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)
            if "firebase_project" not in str(path) and rewrite._read_pyc(path, pyc) is None:
                source_hash, code = rewrite._rewrite_test(path, config)
                if rewrite.try_makedirs(pyc.parent):
                    rewrite._write_pyc(state, code, source_hash, pyc)
    except (AttributeError, ImportError, KeyError, TypeError, ValueError):
        return


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller of an xdist run stops the Firestore emulator its workers shared, if one
    started it (``firestore_emulator`` in tests/service/guard/conftest.py)."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    shared = config._tmp_path_factory.getbasetemp() / FIRESTORE_SHARED_FILE  # (as xdist reads it)
    if shared.exists():
        stop_group(int(shared.read_text().split()[0]))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers a core. Most of the suite's time is spent waiting on the
    processes it starts (daemons, the Functions and Pub/Sub emulators, Chromium, pip in a
    fresh virtualenv), not on the CPU: two workers a core keep both cores busy (measured in
    docs/performance.md)."""
    return 2 * (os.cpu_count() or 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules with the most ``slow`` tests (tens of seconds each) first, every module's
    tests in their own order. ``--dist loadfile`` hands whole modules to the workers in this
    order, so the long ones start at once and the short ones fill in around them, instead of
    a long one running alone at the end."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])


@pytest.fixture(params=[False, True], ids=["http.client", "libcurl"])
def http_transport(request: pytest.FixtureRequest) -> Iterator[HttpTransport]:
    """The daemon's HTTP transport, once with ``http.client`` only and once through libcurl
    (skipped without ``pycurl``): the two must behave the same."""
    if request.param:
        pytest.importorskip("pycurl")
    transport = HttpTransport(curl=request.param)
    yield transport
    transport.close()


@pytest.fixture
def target() -> RecordingTarget:
    """A recording WSGI target answering 200 (set ``.status`` to change that)."""
    return RecordingTarget()


@pytest.fixture
def clock() -> ManualClock:
    """A manual clock at 2026-09-24T01:59:00Z."""
    return ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))


@pytest.fixture
def emulator(clock: ManualClock, target: RecordingTarget) -> Iterator[Emulator]:
    """An in-memory emulator on ``clock`` delivering every request to ``target`` in-process."""
    emu = Emulator(clock, transport=WsgiTransport(target))
    yield emu
    emu.close()


@pytest.fixture(scope="module")
def served_target() -> Iterator[tuple[RecordingTarget, str]]:
    """A recording target on a free port and its nightly URI (module-wide; cleared per test by
    :func:`daemon`)."""
    app = RecordingTarget()
    with serving(app) as base_url:
        yield app, f"{base_url}/_triggers/timer/nightly"


@pytest.fixture(scope="module")
def module_daemon() -> Iterator[Daemon]:
    """One in-memory daemon on a manual clock at 2026-09-24T01:59:00Z for the module."""
    with running_daemon("--in-memory", *MANUAL) as daemon:
        yield daemon


@pytest.fixture
def daemon(module_daemon: Daemon, served_target: tuple[RecordingTarget, str]) -> Daemon:
    """The module's daemon with no jobs or attempts, and the served target with no requests."""
    response = module_daemon.post("/_emulator/reset")
    assert response.status_code == 200, response.text
    with served_target[0].lock:
        served_target[0].requests.clear()
    return module_daemon
