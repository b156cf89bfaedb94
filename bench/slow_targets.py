"""Targets that drip their answers cannot starve the daemon (issues 11 and 19, full size).

1. Starts two loopback targets in a subprocess: a fast one (200, empty body) and a dripping one
   (headers at once, then a 10,000-byte body one byte per ``--drip-interval`` seconds).
2. Runs ``scheduler-emulator start`` (system clock, SQLite data dir) with ``--healthy`` jobs on
   ``* * * * *`` at the fast target and ``--dripping`` jobs at the dripping target, each with a
   15 s attempt deadline and no retries.
3. For ``--minutes`` minutes, a few seconds before each minute boundary, forces one run of
   every dripping job (RunJob), so that they are all in flight across the boundary; stops the
   daemon once their deadlines have passed and reads its store. With ``--scheduled`` the
   dripping jobs are ``* * * * *`` too and listed first, so that at each minute their runs
   fall due in the same instant as the healthy ones, ahead of them (the reliability probe's
   case), and nothing is forced.

Prints the healthy jobs' lateness at those minutes (their ``startTime`` after it; target: every
one within 1 s) and how long each dripping attempt lasted from its send to its end (target: its
15 s deadline, within 0.1 s, not the 10,000 s the body would take), and how many threads the
daemon had while every dripping attempt was in flight (with ``pycurl`` they wait in libcurl's
event loop and hold none; without it the delivery pool adds a thread for each).

Run: ``python bench/slow_targets.py`` (200 dripping jobs, 20 healthy ones, 3 minutes: about
four minutes in all). Without the ``curl`` extra, run it in a
virtualenv without ``pycurl``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests
from daemon_process import daemon_running, work_dir


def serve_targets(port_file: str, drip_interval: float, limit_seconds: float) -> None:
    """The fast and the dripping target; writes ``"<fast port> <drip port>"`` to port_file."""
    fast_answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    body_bytes = 10_000

    async def read_request(reader: asyncio.StreamReader) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:" and int(line[15:]):
                await reader.readexactly(int(line[15:]))

    async def fast(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await read_request(reader)
                writer.write(fast_answer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        writer.close()

    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await read_request(reader)
            writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {body_bytes}\r\n\r\n".encode())
            for _ in range(body_bytes):
                await writer.drain()
                writer.write(b"x")
                await asyncio.sleep(drip_interval)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        writer.close()

    async def main() -> None:
        fast_server = await asyncio.start_server(fast, "127.0.0.1", 0, backlog=1024)
        drip_server = await asyncio.start_server(drip, "127.0.0.1", 0, backlog=1024)
        ports = [s.sockets[0].getsockname()[1] for s in (fast_server, drip_server)]
        Path(port_file).write_text(f"{ports[0]} {ports[1]}")
        await asyncio.sleep(limit_seconds)

    asyncio.run(main())


def daemon_threads(pid: int) -> int:
    """The process's thread count now (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--healthy", type=int, default=20, help="* * * * * jobs at the fast target (%(default)s)"
    )
    parser.add_argument(
        "--dripping",
        type=int,
        default=200,
        help="jobs at the dripping target, one forced run each per minute (%(default)s)",
    )
    parser.add_argument("--minutes", type=int, default=3, help="minutes measured (%(default)s)")
    parser.add_argument(
        "--scheduled",
        action="store_true",
        help="dripping jobs on * * * * *, due with the healthy ones and ahead of them",
    )
    parser.add_argument(
        "--drip-interval", type=float, default=1.0, help="seconds per body byte (%(default)s)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the data dir and log")
    args = parser.parse_args()

    with work_dir("slow-targets-", args.keep) as work:
        measure(args, work)


def measure(args: argparse.Namespace, work: Path) -> None:
    """The run itself, in ``work`` (removed afterwards unless ``--keep``)."""
    port_file = work / "ports"
    serve_for = str(60 * args.minutes + 180)
    targets = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port_file), str(args.drip_interval), serve_for]
    )
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.05)
        fast_port, drip_port = port_file.read_text().split()
        healthy = [
            {
                "name": f"healthy-{i}",
                "schedule": "* * * * *",
                "httpTarget": {"uri": f"http://127.0.0.1:{fast_port}/_triggers/timer/{i}"},
            }
            for i in range(args.healthy)
        ]
        dripping = [
            {
                "name": f"drip-{i}",
                "schedule": "* * * * *" if args.scheduled else "0 0 1 1 *",
                "httpTarget": {"uri": f"http://127.0.0.1:{drip_port}/_triggers/timer/drip-{i}"},
                "attemptDeadline": "15s",
                "retryConfig": {"retryCount": 0},
            }
            for i in range(args.dripping)
        ]
        jobs = dripping + healthy if args.scheduled else healthy + dripping
        with daemon_running(work, jobs) as (daemon, banner):
            print(banner)
            base = banner.split()[3]
            now = datetime.now(UTC)
            first = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
            if (first - now).total_seconds() < 10:
                first += timedelta(minutes=1)
            minutes = [first + timedelta(minutes=k) for k in range(args.minutes)]
            prefix = "projects/my-project/locations/us-central1/jobs/drip-"
            with requests.Session() as session:
                for minute in [] if args.scheduled else minutes:
                    time.sleep(max(0.0, (minute - datetime.now(UTC)).total_seconds() - 5))
                    for i in range(args.dripping):
                        url = f"{base}/v1/{prefix}{i}:run"
                        session.post(url, json={}, timeout=10).raise_for_status()
            # 8 s into the last minute every dripping attempt is in flight: how many threads
            # does the daemon hold for them? (libcurl's event loop: none each; without
            # pycurl, one each, added by the delivery pool.)
            busy = minutes[-1] + timedelta(seconds=8)
            time.sleep(max(0.0, (busy - datetime.now(UTC)).total_seconds()))
            threads = daemon_threads(daemon.pid)
            end = minutes[-1] + timedelta(seconds=30)
            time.sleep(max(0.0, (end - datetime.now(UTC)).total_seconds()))
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)
    finally:
        targets.terminate()
        targets.wait(10)

    from scheduler_emulator.runtime.storage.store import Store

    store = Store(work / "data" / "emulator.db")
    attempts = store.attempts()
    store.close()
    stamps = {m.strftime("%Y-%m-%dT%H:%M:00Z"): m for m in minutes}
    healthy = [a for a in attempts if a.job_id.startswith("healthy-") and a.schedule_time in stamps]
    late = sorted((a.start_time - stamps[a.schedule_time]).total_seconds() for a in healthy)
    drips = [a for a in attempts if a.job_id.startswith("drip-") and a.end_time is not None]
    took = sorted((a.end_time - a.start_time).total_seconds() for a in drips if a.end_time)
    codes = sorted({a.code or "?" for a in drips})
    healthy_codes = sorted({a.code or "?" for a in healthy})
    wanted = args.healthy * len(minutes)
    print(f"{wanted} healthy runs due: {len(healthy)} attempts, codes {healthy_codes}")
    if late:
        print(
            f"  lateness p50 {statistics.median(late):.3f} s, max {late[-1]:.3f} s (target < 1 s)"
        )
        worst = {
            stamp[11:16]: max(
                (a.start_time - minute).total_seconds() for a in healthy if a.schedule_time == stamp
            )
            for stamp, minute in stamps.items()
            if any(a.schedule_time == stamp for a in healthy)
        }
        print("  max per minute: " + ", ".join(f"{m} {s:.3f} s" for m, s in worst.items()))
    forced = args.dripping * len(minutes)
    kind = "scheduled" if args.scheduled else "forced"
    print(f"{forced} {kind} dripping runs: {len(drips)} ended, codes {codes}")
    if took:
        print(f"  send to end: min {took[0]:.2f} s, max {took[-1]:.2f} s (deadline 15 s)")
    print(f"  daemon threads with {args.dripping} dripping attempts in flight: {threads}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--serve":
        serve_targets(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        main()
