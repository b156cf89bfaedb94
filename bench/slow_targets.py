"""A target that drips its answer cannot starve the daemon (issue 11, the full-size case).

1. Starts two loopback targets in a subprocess: a fast one (200, empty body) and a dripping one
   (headers at once, then a 10,000-byte body one byte per ``--drip-interval`` seconds).
2. Runs ``scheduler-emulator start`` (system clock, SQLite data dir) with ``--healthy`` jobs on
   ``* * * * *`` at the fast target and one job at the dripping target with a 15 s attempt
   deadline and no retries.
3. A few seconds before a minute boundary, forces ``--forced`` runs of the dripping job
   (RunJob), so that they are in flight across the boundary; stops the daemon once their
   deadlines have passed and reads its store.

Prints the healthy jobs' lateness at that minute (their ``startTime`` after it; target: every
one within 1 s) and how long each dripping attempt lasted from its send to its end (target: its
deadline, not the 10,000 s the body would take).

Run: ``python bench/slow_targets.py`` (it waits for a minute boundary, then ten rounds of 15 s:
about three minutes).
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--healthy", type=int, default=50, help="* * * * * jobs at the fast target (%(default)s)"
    )
    parser.add_argument(
        "--forced",
        type=int,
        default=40,
        help="forced runs of the dripping job; 4 at a time, 15 s each (%(default)s)",
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
    targets = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port_file), str(args.drip_interval), "240"]
    )
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.05)
        fast_port, drip_port = port_file.read_text().split()
        jobs = [
            {
                "name": f"healthy-{i}",
                "schedule": "* * * * *",
                "httpTarget": {"uri": f"http://127.0.0.1:{fast_port}/_triggers/timer/{i}"},
            }
            for i in range(args.healthy)
        ]
        jobs.append(
            {
                "name": "drip",
                "schedule": "0 0 1 1 *",
                "httpTarget": {"uri": f"http://127.0.0.1:{drip_port}/_triggers/timer/drip"},
                "attemptDeadline": "15s",
                "retryConfig": {"retryCount": 0},
            }
        )
        with daemon_running(work, jobs) as (daemon, banner):
            print(banner)
            base = banner.split()[3]
            now = datetime.now(UTC)
            minute = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
            if (minute - now).total_seconds() < 8:
                minute += timedelta(minutes=1)
            time.sleep(max(0.0, (minute - datetime.now(UTC)).total_seconds() - 3))
            name = "projects/my-project/locations/us-central1/jobs/drip"
            with requests.Session() as session:
                for _ in range(args.forced):
                    session.post(f"{base}/v1/{name}:run", json={}, timeout=10).raise_for_status()
            # Every forced run waits behind its job (at most 4 at once), each ending at its 15 s
            # deadline: wait for them all, with room.
            end = minute + timedelta(seconds=15 * (args.forced // 4 + 1) + 10)
            time.sleep(max(0.0, (end - datetime.now(UTC)).total_seconds()))
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)
    finally:
        targets.terminate()
        targets.wait(10)

    from scheduler_emulator.runtime.store import Store

    store = Store(work / "data" / "emulator.db")
    attempts = store.attempts()
    store.close()
    stamp = minute.strftime("%Y-%m-%dT%H:%M:00Z")
    healthy = [a for a in attempts if a.job_id.startswith("healthy-") and a.schedule_time == stamp]
    late = sorted((a.start_time - minute).total_seconds() for a in healthy)
    drips = [a for a in attempts if a.job_id == "drip" and a.end_time is not None]
    took = sorted((a.end_time - a.start_time).total_seconds() for a in drips if a.end_time)
    codes = sorted({a.code or "?" for a in drips})
    healthy_codes = sorted({a.code or "?" for a in healthy})
    print(f"{args.healthy} healthy jobs at {stamp}: {len(healthy)} attempts, codes {healthy_codes}")
    if late:
        print(
            f"  lateness p50 {statistics.median(late):.3f} s, max {late[-1]:.3f} s (target < 1 s)"
        )
    print(f"{args.forced} forced dripping runs: {len(drips)} ended, codes {codes}")
    if took:
        print(f"  send to end: min {took[0]:.2f} s, max {took[-1]:.2f} s (deadline 15 s)")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--serve":
        serve_targets(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        main()
