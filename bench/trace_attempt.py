"""Trace one HTTP attempt on the system clock: hops, modules, threads and store writes.

A job with ``* * * * *`` fires once on a system clock shifted so that its minute is
:data:`LEAD_SECONDS` away (no minute-long wait), after a warm-up attempt (a forced run) that
opens libcurl's event loop; the target is a plain ``http://`` server in this process. Every
function of ``scheduler_emulator`` entered on any thread is profiled (``sys.setprofile`` /
``threading.setprofile``) from before the minute until the attempt's end is on disk, and every
statement of the store's SQLite connection is traced.

What it prints:

- **hops**: the calls that cross from one module of ``runtime/`` or ``core/`` (the attempt's
  path; domain values and the leaves are its steps' tools) to another, each distinct
  caller → callee pair once; a thread entering the package from outside (a thread's loop, a
  callback from C, a context manager) counts as one;
- **modules**: the modules of ``runtime/`` and ``core/`` entered;
- **busy threads**: threads that entered any of them in the window;
- **store writes**: statements that changed the store, and those that wrote the attempt row.

Run: ``python bench/trace_attempt.py`` (``--calls`` also lists every hop in order).
"""

from __future__ import annotations

import argparse
import http.server
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import scheduler_emulator
from scheduler_emulator import Emulator
from tests.support import ShiftedClock

PACKAGE = str(Path(scheduler_emulator.__file__).parent)
#: The attempt's path: the engine (runtime/) and the core; domain values and the leaves are
#: the steps' tools, not steps.
_PIPELINE = ("runtime.", "core.")
#: Seconds from the start to the traced attempt's minute (a warm-up attempt runs first).
LEAD_SECONDS = 5.0
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class _Target(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet."""


def _module(filename: str) -> str:
    return filename[len(PACKAGE) + 1 :].removesuffix(".py").replace("/", ".")


class Tracer:
    """Collects the calls and the store's writes while :attr:`active`."""

    def __init__(self) -> None:
        self.active = False
        self.calls: Counter[str] = Counter()
        self.edges: dict[tuple[str, str], str] = {}  # (caller, callee) -> thread, in order
        self.threads: set[str] = set()
        self.writes: list[str] = []
        self.lock = threading.Lock()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.active or event != "call":
            return
        name = _name(frame)
        if name is None or not name.startswith(_PIPELINE) or "<" in name.split(":")[1][:1]:
            return
        back = frame.f_back
        caller = _name(back) if back is not None else None
        thread = threading.current_thread().name
        with self.lock:
            self.calls[name] += 1
            self.threads.add(thread)
            if caller is None or caller.split(":")[0] != name.split(":")[0]:
                self.edges.setdefault((caller or f"({thread})", name), thread)

    def statement(self, sql: str) -> None:
        if self.active and sql.lstrip()[:7].upper().startswith(_WRITES):
            with self.lock:
                self.writes.append(" ".join(sql.split())[:100])


def _name(frame: FrameType) -> str | None:
    """``module:qualname`` of a frame of the package, else ``None``."""
    code = frame.f_code
    if not code.co_filename.startswith(PACKAGE):
        return None
    return f"{_module(code.co_filename)}:{code.co_qualname}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", action="store_true", help="list every hop in order")
    args = parser.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Target)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    uri = f"http://127.0.0.1:{server.server_address[1]}/_triggers/timer/tick"
    tracer = Tracer()
    with tempfile.TemporaryDirectory() as data_dir:
        clock = ShiftedClock(lead=LEAD_SECONDS)
        # Before the emulator: its threads (the store's writer starts with the store) are
        # profiled from their start; nothing is counted until the window opens.
        threading.setprofile(tracer.profile)
        emulator = Emulator(clock, data_dir=Path(data_dir))
        emulator.create_job(name="tick", schedule="* * * * *", http_target={"uri": uri})
        emulator.store._writer.db.set_trace_callback(tracer.statement)  # on the writer thread
        emulator.start()
        emulator.run_job("tick")  # warm up: the first attempt opens libcurl's loop
        deadline = time.monotonic() + 10
        while not any(a.end_time for a in emulator.attempts("tick")):
            if time.monotonic() > deadline:
                sys.exit("the warm-up attempt did not end within 10 s")
            time.sleep(0.01)
        time.sleep(0.2)  # let the engine thread settle into its wait before the window opens
        tracer.active = True
        if clock.now().second < 30:  # the minute came before the window opened (a slow machine)
            sys.exit(f"the warm-up took over {LEAD_SECONDS:g} s; run again on a quieter machine")
        reader = sqlite3.connect(emulator.store.path)
        ended = "SELECT 1 FROM attempts WHERE NOT forced AND end_time IS NOT NULL"
        deadline = time.monotonic() + LEAD_SECONDS + 10
        while time.monotonic() < deadline:  # the attempt's end on disk (read on the side)
            if reader.execute(ended).fetchone():
                break
            time.sleep(0.01)
        else:
            sys.exit("the attempt did not end within 10 s of its minute")
        time.sleep(0.3)  # writes that follow the end (the run, the job's status)
        tracer.active = False
        threading.setprofile(None)
        reader.close()
        emulator.close()
    server.shutdown()
    server.server_close()

    modules = sorted({c.split(":")[0] for c in tracer.calls})
    attempt_writes = [
        w for w in tracer.writes if w.split()[1:3] in (["INTO", "attempts"], ["attempts", "SET"])
    ]
    print(f"hops on the main path : {len(tracer.edges)}")
    print(f"modules               : {len(modules)}  ({', '.join(modules)})")
    print(f"busy threads          : {len(tracer.threads)}  ({', '.join(sorted(tracer.threads))})")
    print(f"store writes          : {len(tracer.writes)}  (the attempt row: {len(attempt_writes)})")
    print(f"functions entered     : {len(tracer.calls)} ({sum(tracer.calls.values())} calls)")
    if args.calls:
        print("\nhops (caller -> callee, first seen first):")
        for (caller, callee), thread in tracer.edges.items():
            print(f"  [{thread}] {caller} -> {callee}")
        print("\nstore writes:")
        for write in tracer.writes:
            print(f"  {write}")


if __name__ == "__main__":
    main()
