"""Load on the real daemon: N ``* * * * *`` jobs at a fast local target, system clock, SQLite.

1. Starts a minimal asyncio HTTP/1.1 target in a subprocess (loopback only; it answers 200 with
   an empty body, and exits after ``--minutes`` + 2 minutes or 10 million requests).
2. Measures floors in the same run: one Python thread driving libcurl's multi interface with
   64 connections (what the daemon's own sender can do, when ``pycurl`` is installed); a
   bare loop of the emulator's HTTP client
   (``HttpTransport``, through libcurl when ``pycurl`` is installed, as the
   daemon's is) against that target, one thread and 32 threads; and the same loop with
   ``http.client`` only, for comparison; and, when ``wrk`` is installed (``apt-get install
   wrk``), the target's own maximum under that load generator (1 thread, 32 connections).
3. Writes N jobs to a jobs file and runs ``scheduler-emulator start`` on a fresh SQLite data
   directory for ``--minutes`` whole minutes, then stops it with SIGTERM and reads its store.

Prints, over the runs due at the minutes inside the window: missed runs, duplicated runs,
lateness of each attempt's start after its minute (p50 / p99 / max, and p99 / max per minute,
with the connections the target accepted in that minute), deliveries per second
during each minute's burst and its ratio to each floor, and the daemon's peak RSS (``VmHWM``).

Run: ``python bench/daemon_load.py --jobs 1000 --minutes 3``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from daemon_process import daemon_running, work_dir

TARGET_LIMIT_REQUESTS = 10_000_000


def serve_target(port_file: str, limit_seconds: float) -> None:
    """The fast target: HTTP/1.1 keep-alive, 200 with no body to every request."""
    count = 0
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    opened: Counter[str] = Counter()  # connections accepted, by minute (written each second)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        opened[datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:00Z")] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                writer.write(answer)
                count += 1
                if count >= TARGET_LIMIT_REQUESTS:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
        async with server:
            for _ in range(int(limit_seconds)):
                await asyncio.sleep(1)
                Path(port_file + ".opened").write_text(json.dumps(opened))

    asyncio.run(main())


def floor(base: str, seconds: float, threads: int, curl: bool | None = None) -> float:
    """Requests per second of a bare HttpTransport.request loop against the target."""
    from scheduler_emulator import HttpTransport

    client = HttpTransport(curl=curl)
    headers = {"User-Agent": "Google-Cloud-Scheduler", "X-CloudScheduler": "true"}
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def loop(index: int) -> None:
        while time.monotonic() < stop:
            client.request("POST", base + "/_triggers/timer/floor", headers, b"", 10)
            counts[index] += 1

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    client.close()
    return sum(counts) / (time.monotonic() - started)


def multi_floor(base: str, seconds: float, connections: int = 64) -> float | None:
    """Requests per second of one Python thread driving libcurl's multi interface with
    ``connections`` keep-alive handles at the target: what the daemon's own sender could do
    with nothing else to do (``None`` without ``pycurl``)."""
    try:
        import pycurl
    except ImportError:
        return None
    multi = pycurl.CurlMulti()
    url = base + "/_triggers/timer/multi"
    headers = ["User-Agent: Google-Cloud-Scheduler", "X-CloudScheduler: true", "Expect:"]
    handles = []
    for _ in range(connections):
        handle = pycurl.Curl()
        handle.setopt(pycurl.URL, url)
        handle.setopt(pycurl.POSTFIELDS, "")
        handle.setopt(pycurl.HTTPHEADER, headers)
        handle.setopt(pycurl.WRITEFUNCTION, lambda chunk: None)
        multi.add_handle(handle)
        handles.append(handle)
    count, running = 0, connections
    started = time.monotonic()
    stop = started + seconds
    while running:
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        more = True
        while more:
            queued, done, failed = multi.info_read()
            more = queued > 0
            for handle in [*done, *(f[0] for f in failed)]:
                multi.remove_handle(handle)
                count += handle in done
                if time.monotonic() < stop:
                    multi.add_handle(handle)
                else:
                    running -= 1
        multi.select(0.05)
    elapsed = time.monotonic() - started
    for handle in handles:
        handle.close()
    multi.close()
    return count / elapsed


def target_maximum(base: str, seconds: int) -> float | None:
    """Requests per second ``wrk`` gets from the target (``None`` without ``wrk``)."""
    if shutil.which("wrk") is None:
        return None
    out = subprocess.run(
        ["wrk", "-t1", "-c32", f"-d{seconds}s", base + "/_triggers/timer/wrk"],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=False,
    ).stdout
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    return None


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="* * * * * jobs (%(default)s)")
    parser.add_argument(
        "--minutes", type=int, default=3, help="whole minutes measured (%(default)s)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the data dir and log")
    args = parser.parse_args()

    with work_dir("daemon-load-", args.keep) as work:
        measure(args, work)


def measure(args: argparse.Namespace, work: Path) -> None:
    """The run itself, in ``work`` (removed afterwards unless ``--keep``)."""
    port_file = work / "port"
    limit = (args.minutes + 2) * 60
    target = subprocess.Popen(
        [sys.executable, __file__, "--serve-target", str(port_file), str(limit)]
    )
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port_file.read_text()}"
        print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
        from scheduler_emulator import HttpTransport

        kind = "libcurl" if HttpTransport().uses_curl else "http.client"
        print(f"the daemon's HTTP client goes through {kind}")
        print(f"floor, bare HttpTransport loop, 1 thread  : {floor(base, 3, 1):8,.0f} requests/s")
        floor32 = floor(base, 3, 32)
        print(f"floor, bare HttpTransport loop, 32 threads: {floor32:8,.0f} requests/s")
        stdlib = floor(base, 3, 32, curl=False)
        print(f"  the same, http.client only, 32 threads: {stdlib:8,.0f} requests/s")
        multi = multi_floor(base, 3)
        if multi is not None:
            print(
                f"floor, one thread on libcurl's multi interface, 64 conns: {multi:8,.0f} "
                "requests/s"
            )
        maximum = target_maximum(base, 3)
        if maximum is not None:
            print(f"the target's own maximum (wrk, 32 conns): {maximum:8,.0f} requests/s")

        jobs = [
            {
                "name": f"load-{i}",
                "schedule": "* * * * *",
                "httpTarget": {"uri": f"{base}/_triggers/timer/load-{i}"},
                "retryConfig": {"retryCount": 0},
            }
            for i in range(args.jobs)
        ]
        with daemon_running(work, jobs) as (daemon, banner):
            print(banner)
            started = datetime.now(UTC)
            first = started.replace(second=0, microsecond=0) + timedelta(minutes=1)
            minutes = [first + timedelta(minutes=k) for k in range(args.minutes)]
            end = minutes[-1] + timedelta(seconds=20)
            while datetime.now(UTC) < end:
                time.sleep(0.5)
            rss = peak_rss_mib(daemon.pid)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)
    finally:
        target.terminate()
        target.wait(10)
    opened_file = Path(f"{port_file}.opened")
    opened = json.loads(opened_file.read_text()) if opened_file.exists() else {}

    from scheduler_emulator.runtime.storage.store import Store

    store = Store(work / "data" / "emulator.db")
    attempts = [a for a in store.attempts() if not a.forced and a.schedule_time]
    store.close()
    wanted = {m.strftime("%Y-%m-%dT%H:%M:00Z"): m for m in minutes}
    attempts = [a for a in attempts if a.schedule_time in wanted]
    runs = Counter((a.job, a.schedule_time) for a in attempts)
    ok = {(a.job, a.schedule_time) for a in attempts if a.code == "OK"}
    missed = args.jobs * len(minutes) - len(ok)
    duplicated = sum(n - 1 for n in runs.values() if n > 1)
    late = sorted((a.start_time - wanted[a.schedule_time]).total_seconds() for a in attempts)
    rates = []
    for stamp, minute in wanted.items():
        ends = [a.end_time for a in attempts if a.schedule_time == stamp and a.end_time]
        if ends:
            span = (max(ends) - minute).total_seconds()
            rates.append(len(ends) / span if span > 0 else float("inf"))
    p99 = late[max(0, int(len(late) * 0.99) - 1)] if late else float("nan")
    print(f"{args.jobs} jobs x {len(minutes)} minutes, {len(attempts)} attempts")
    print(f"  missed {missed}, duplicated {duplicated}")
    if late:
        print(
            f"  lateness p50 {statistics.median(late):.3f} s, p99 {p99:.3f} s, max {late[-1]:.3f} s"
        )
    for stamp, minute in wanted.items():  # "every run within 1.0 s" is judged per minute
        mine = sorted(
            (a.start_time - minute).total_seconds() for a in attempts if a.schedule_time == stamp
        )
        if mine:
            at = mine[max(0, int(len(mine) * 0.99) - 1)]
            print(
                f"  minute {stamp}: lateness p99 {at:.3f} s, max {mine[-1]:.3f} s; "
                f"{opened.get(stamp, 0):,} connections opened to the target"
            )
    print(f"  deliveries/s per minute's burst: {', '.join(f'{r:,.0f}' for r in rates)}")
    ratios = ", ".join(f"{r / floor32:.2f}x" for r in rates)
    print(f"  the same as a ratio to the bare 32-thread client floor: {ratios}")
    if multi is not None:
        ratios = ", ".join(f"{r / multi:.2f}x" for r in rates)
        print(f"  the same as a ratio to one thread on libcurl's multi interface: {ratios}")
    print(f"  peak RSS {rss:.0f} MiB; load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-target":
        serve_target(sys.argv[2], float(sys.argv[3]))
    else:
        main()
