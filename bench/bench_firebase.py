"""The Firebase bridge's once-a-second look, with 10,000 scheduled functions and nothing changing.

1. Starts a fake Functions emulator in a subprocess (its CPU is not counted): ``GET /backends``
   lists ``--functions`` scheduled functions (v1 and v2, shaped as firebase-tools 15 lists them),
   and the trigger route's 404 lists their keys.
2. In this process, a :class:`FirebaseBridge` on a manual clock makes the jobs (the first look),
   then looks ``--looks`` more times with nothing changed.

Prints the CPU time of this thread (``time.thread_time``) for the first look and per unchanged
look, beside a floor measured in the same run: the CPU of just fetching the two answers
(``/backends`` and the 404) through the same client; and one look worked in full, as every
look was before looks compared digests. At one look a second, the CPU per look in
seconds is the share of a core the bridge costs (target: under 5 %).

Run: ``python bench/bench_firebase.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.tools.firebase import FirebaseBridge, client


def serve(count: int) -> None:
    """The fake Functions emulator; prints its port, then serves until stdin closes."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    label = "cloudfunctions-emulated.googleapis.com/projects/demo-bench/locations/{r}/functions/{n}"
    triggers = []
    for i in range(count):
        name, region = f"job{i:05d}", "us-central1" if i % 2 else "europe-west1"
        triggers.append({
            "id": f"{region}-{name}", "name": name, "entryPoint": name, "region": region,
            "platform": "gcfv2" if i % 2 else "gcfv1", "codebase": "default",
            "timeoutSeconds": 60, "availableMemoryMb": 256, "secretEnvironmentVariables": [],
            "labels": {"EVENTARC_CLOUD_EVENT_SOURCE": label.format(r=region, n=name)},
            "schedule": {"schedule": f"{i % 60} {i % 24} * * *", "timeZone": "Europe/Berlin",
                         "retryConfig": {"retryCount": 2, "minBackoffSeconds": 5}},
        })  # fmt: skip
    backends = json.dumps({"backends": [{"functionTriggers": triggers}]}).encode()
    keys = ", ".join(f"{t['id']}-0" for t in triggers)
    missing = f"Function x does not exist, valid functions are: {keys}".encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(200 if self.path == "/backends" else 404, backends)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send(404, missing)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], len(backends), flush=True)
    sys.stdin.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--functions", type=int, default=10_000)
    parser.add_argument("--looks", type=int, default=20)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    fake = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(args.functions)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert fake.stdout is not None
        port, size = fake.stdout.readline().split()
        address = f"127.0.0.1:{port}"
        print(f"{args.functions} functions, /backends {int(size) / 1e6:.1f} MB")
        floor = []
        for _ in range(args.looks):
            began = time.thread_time()
            client.backends_raw(address, 30)
            client.not_found_text(address, "demo-bench", 30)
            floor.append(time.thread_time() - began)
        emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-bench")
        with FirebaseBridge(emulator, functions=address) as bridge:
            began = time.thread_time()
            first = bridge.sync()
            first_cpu = time.thread_time() - began
            looks = []
            for _ in range(args.looks):
                began = time.thread_time()
                result = bridge.sync()
                looks.append(time.thread_time() - began)
                assert result.unchanged, result
            bridge._seen = None  # as a delivery's 404 does: the next look is worked in full
            began = time.thread_time()
            bridge.sync()
            forced = time.thread_time() - began
        emulator.close()
    finally:
        fake.stdin.close()  # type: ignore[union-attr]
        fake.wait(timeout=30)
    look, base = statistics.median(looks), statistics.median(floor)
    print(f"first look: {len(first.created)} jobs made, {first_cpu:.2f} s CPU")
    print(
        f"unchanged look: {look * 1000:.1f} ms CPU (median of {args.looks}; max "
        f"{max(looks) * 1000:.1f} ms) = {look * 100:.1f} % of a core at one look a second"
    )
    print(f"floor (fetching the two answers): {base * 1000:.1f} ms; look/floor {look / base:.2f}")
    print(f"a look worked in full (digest ignored, no job changed): {forced:.2f} s CPU")


if __name__ == "__main__":
    main()
