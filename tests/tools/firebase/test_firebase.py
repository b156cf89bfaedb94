"""The firebase bridge's pure parts and its command line, without node: the jobs made of
``/backends`` entries (as ``firebase deploy`` makes them), trigger keys, the legacy v1 event,
``firebase`` as ``start --firebase``, and exit 2 when nothing answers at the hub.

Against a real Functions emulator: tests/tools/firebase/test_firebase_emulator.py.
"""

from __future__ import annotations

import argparse
import io
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.domain.codec import job_from_json
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.runtime._attempt_log import AttemptLog
from scheduler_emulator.tools.cli import build_parser
from scheduler_emulator.tools.firebase import FirebaseBridge
from scheduler_emulator.tools.firebase.command import bridge_from_args, check_hub, start_argv
from scheduler_emulator.tools.firebase.functions import (
    ScheduledFunction,
    legacy_event,
    project_of,
    scheduled_functions,
    trigger_key,
    valid_trigger_keys,
)
from tests.support import wait_for

URL = "http://127.0.0.1:5001/functions/projects/demo-p/triggers/us-central1-fn-0"


def trigger(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "us-central1-fn",
        "name": "fn",
        "region": "us-central1",
        "platform": "gcfv2",
        "timeoutSeconds": 60,
        "labels": {
            "EVENTARC_CLOUD_EVENT_SOURCE": "run-emulated.googleapis.com/projects/demo-p/"
            "locations/us-central1/services/fn"
        },
        "schedule": {"schedule": "0 9 * * 1-5", "retryConfig": {"retryCount": None}},
    }
    entry.update(overrides)
    return entry


def test_a_v2_function_gets_an_http_job_with_a_token_and_a_clamped_deadline() -> None:
    fn = ScheduledFunction.from_trigger(trigger(timeoutSeconds=3600))
    job = fn.job_json("demo-p", URL)
    assert job == {
        "name": "projects/demo-p/locations/us-central1/jobs/firebase-schedule-fn-us-central1",
        "schedule": "0 9 * * 1-5",
        "timeZone": "UTC",
        "httpTarget": {
            "uri": URL,
            "httpMethod": "POST",
            "oidcToken": {
                "serviceAccountEmail": "demo-p-compute@developer.gserviceaccount.com",
                "audience": "https://us-central1-demo-p.cloudfunctions.net/fn",
            },
        },
        "attemptDeadline": "1800s",
    }
    job_from_json(job)  # a valid job
    assert ScheduledFunction.from_trigger(trigger(timeoutSeconds=9)).attempt_deadline_seconds == 180
    assert (
        ScheduledFunction.from_trigger(trigger(timeoutSeconds=300)).attempt_deadline_seconds == 300
    )


def test_a_v1_function_gets_productions_pubsub_job_in_los_angeles_by_default() -> None:
    retry = {"retryCount": 3, "minBackoffSeconds": 10, "maxRetrySeconds": 600, "maxDoublings": None}
    fn = ScheduledFunction.from_trigger(
        trigger(platform="gcfv1", schedule={"schedule": "every 5 minutes", "retryConfig": retry})
    )
    job = fn.job_json("demo-p", URL, audience="ignored for v1")
    assert job == {
        "name": "projects/demo-p/locations/us-central1/jobs/firebase-schedule-fn-us-central1",
        "schedule": "every 5 minutes",
        "timeZone": "America/Los_Angeles",
        "pubsubTarget": {
            "topicName": "projects/demo-p/topics/firebase-schedule-fn-us-central1",
            "attributes": {"scheduled": "true"},
        },
        "retryConfig": {"retryCount": 3, "minBackoffDuration": "10s", "maxRetryDuration": "600s"},
    }
    job_from_json(job)


def test_backends_duplicates_collapse_by_id_and_unscheduled_functions_are_left_out() -> None:
    answer = {
        "backends": [
            {
                "functionTriggers": [
                    trigger(schedule={"schedule": "0 1 * * *"}),
                    {"id": "us-central1-web", "name": "web", "region": "us-central1"},
                    trigger(schedule={"schedule": "0 2 * * *", "timeZone": "Europe/Berlin"}),
                ]
            }
        ]
    }
    [fn] = scheduled_functions(answer)
    assert (fn.schedule, fn.time_zone) == ("0 2 * * *", "Europe/Berlin")
    assert project_of(answer) == "demo-p"


def test_trigger_keys_come_from_the_404_and_the_newest_generation_wins() -> None:
    text = (
        "Function scheduler-emulator-probe does not exist, valid functions are: "
        "us-central1-fn-0, us-central1-fn-2, us-central1-fnx-3, us-central1-web"
    )
    keys = valid_trigger_keys(text)
    assert keys == ["us-central1-fn-0", "us-central1-fn-2", "us-central1-fnx-3", "us-central1-web"]
    assert trigger_key("us-central1-fn", keys) == "us-central1-fn-2"
    assert trigger_key("us-central1-web", keys) == "us-central1-web"
    assert trigger_key("us-central1-gone", keys) is None
    assert valid_trigger_keys("Not Found") == []


def test_the_legacy_event_has_the_schedule_time_and_productions_topic() -> None:
    event = legacy_event(
        "projects/my-project/topics/firebase-schedule-fn-us-central1",
        {"scheduled": "true"},
        "",
        "2026-01-05T08:00:00Z",
        "id-1",
    )
    assert event == {
        "context": {
            "eventId": "id-1",
            "timestamp": "2026-01-05T08:00:00Z",
            "eventType": "google.pubsub.topic.publish",
            "resource": {
                "service": "pubsub.googleapis.com",
                "name": "projects/my-project/topics/firebase-schedule-fn-us-central1",
            },
        },
        "data": {
            "@type": "type.googleapis.com/google.pubsub.v1.PubsubMessage",
            "attributes": {"scheduled": "true"},
        },
    }


def test_firebase_is_start_with_firebase() -> None:
    assert start_argv(["firebase", "--hub", "h:1", "--port", "0"]) == [
        "start", "--firebase", "h:1", "--port", "0",
    ]  # fmt: skip
    assert start_argv(["firebase", "--functions=f:2"]) == ["start", "--firebase-functions=f:2"]
    assert start_argv(["firebase", "--in-memory"]) == ["start", "--in-memory", "--firebase="]
    assert start_argv(["firebase", "--help"]) == ["firebase", "--help"]
    assert start_argv(["start", "--hub", "x"]) == ["start", "--hub", "x"]


def test_nothing_at_the_hub_exits_2_naming_the_address() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "firebase", "--hub", f"127.0.0.1:{port}",
         "--in-memory"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"nothing answers at --hub 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------ a fake Emulator Suite, in-process


class FakeSuite:
    """A fake Functions emulator or hub over http.server: ``/backends`` (the functions),
    ``/emulators`` (hub only), the trigger route (200 for a listed key, else the Functions
    emulator's 404 listing the keys, project ignored as firebase-tools does)."""

    def __init__(self, *, hub_for: str | None = None, triggers: list[dict[str, Any]]) -> None:
        self.triggers = triggers
        self.hub_for = hub_for  # a hub: the Functions emulator's address it reports
        self.received: list[dict[str, Any]] = []
        suite = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: Any) -> None:
                data = (json.dumps(body) if not isinstance(body, str) else body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if suite.hub_for is not None and self.path == "/emulators":
                    host, port = suite.hub_for.rsplit(":", 1)
                    self._answer(200, {"functions": {"name": "functions", "host": host,
                                                     "port": int(port)}})  # fmt: skip
                elif suite.hub_for is None and self.path == "/backends":
                    self._answer(200, {"backends": [{"functionTriggers": suite.triggers}]})
                else:
                    self._answer(404, "Not Found")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = self.path.rsplit("/", 1)[-1]
                keys = [f"{t['id']}-0" for t in suite.triggers]
                if suite.hub_for is None and key in keys:
                    suite.received.append({"path": self.path, "body": json.loads(body)})
                    self._answer(200, "ok")
                else:
                    self._answer(404, f"Function {key} does not exist, valid functions are: "
                                      + ", ".join(keys))  # fmt: skip

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def v1_trigger(project: str = "demo-shop") -> dict[str, Any]:
    return trigger(
        id="us-central1-cleanup",
        name="cleanup",
        platform="gcfv1",
        labels={
            "EVENTARC_CLOUD_EVENT_SOURCE": f"cloudfunctions-emulated.googleapis.com/projects/"
            f"{project}/locations/us-central1/functions/cleanup"
        },
        schedule={"schedule": "0 9 * * *", "timeZone": "UTC"},
    )


@pytest.fixture
def functions_emulator() -> Iterator[FakeSuite]:
    suite = FakeSuite(triggers=[v1_trigger()])
    yield suite
    suite.close()


@pytest.fixture
def hub(functions_emulator: FakeSuite) -> Iterator[FakeSuite]:
    suite = FakeSuite(hub_for=functions_emulator.address, triggers=[])
    yield suite
    suite.close()


def start_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(start_argv(["firebase", *argv, "--in-memory"]))


def test_an_empty_functions_emulator_is_waited_for_with_a_hint_at_load_errors() -> None:
    empty = FakeSuite(triggers=[])
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    bridge = FirebaseBridge(
        emulator, functions=empty.address, poll_interval=0.05, empty_hint_after=0.3
    )
    try:
        bridge.start()
        wait_for(lambda: any("missing runtime" in m for m in bridge.messages), 10, "the hint")
        assert "lists no functions yet" in bridge.messages[0]
        [hint] = [m for m in bridge.messages if "missing runtime" in m]
        assert "check its log" in hint and '"runtime": "nodejs20"' in hint
    finally:
        bridge.close()
        empty.close()


def test_without_project_the_functions_emulators_becomes_the_daemons_default(
    functions_emulator: FakeSuite,
) -> None:
    args = start_args("--functions", functions_emulator.address)
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project=args.project)
    bridge = bridge_from_args(args, emulator, io.StringIO())
    assert bridge is not None and emulator.project == "my-project"
    result = bridge.sync()
    assert emulator.project == "demo-shop"  # /_emulator/config, env-init, short job IDs
    assert result.created == [
        "projects/demo-shop/locations/us-central1/jobs/firebase-schedule-cleanup-us-central1"
    ]
    assert emulator.get_job("firebase-schedule-cleanup-us-central1").name == result.created[0]
    assert any("default project is now demo-shop" in m for m in bridge.messages)
    # Given, --project is the daemon's and the bridge's project, and is not changed.
    args = start_args("--functions", functions_emulator.address, "--project", "demo-shop")
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project=args.project)
    bridge = bridge_from_args(args, emulator, io.StringIO())
    assert bridge is not None and bridge.project == "demo-shop" and not bridge.adopt_project


def test_a_project_the_functions_emulator_does_not_run_is_refused(
    functions_emulator: FakeSuite,
) -> None:
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shpo")
    bridge = FirebaseBridge(emulator, functions=functions_emulator.address, project="demo-shpo")
    with pytest.raises(ConfigurationError, match="which runs demo-shop") as caught:
        bridge.sync()
    assert "--project demo-shpo" in str(caught.value)
    assert emulator.list_jobs() == []
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "firebase", "--functions",
         functions_emulator.address, "--project", "demo-shpo", "--in-memory", "--port", "0"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--project demo-shpo is not the project" in done.stderr
    assert "which runs demo-shop" in done.stderr and "Traceback" not in done.stderr


def test_a_hub_address_from_the_environment_is_named_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("FIREBASE_EMULATOR_HUB", f"127.0.0.1:{port}")
    with pytest.raises(ConfigurationError) as caught:
        check_hub(start_args())
    message = str(caught.value)
    assert f"nothing answers at 127.0.0.1:{port} (from $FIREBASE_EMULATOR_HUB)" in message
    assert "--hub 127.0.0.1" not in message


def test_swapped_hub_and_functions_addresses_are_named(
    functions_emulator: FakeSuite, hub: FakeSuite
) -> None:
    with pytest.raises(ConfigurationError, match="looks like the Functions emulator") as caught:
        check_hub(start_args("--hub", functions_emulator.address))
    assert f"--functions {functions_emulator.address}" in str(caught.value)
    with pytest.raises(ConfigurationError, match="looks like the Emulator Suite's hub") as caught:
        check_hub(start_args("--functions", hub.address))
    assert f"--hub {hub.address}" in str(caught.value)
    check_hub(start_args("--hub", hub.address))  # the right way round: accepted
    check_hub(start_args("--functions", functions_emulator.address, "--project", "demo-shop"))


def test_v1_attempts_log_their_topic_and_forced_runs_carry_the_next_schedule_time(
    hub: FakeSuite, functions_emulator: FakeSuite
) -> None:
    log = io.StringIO()
    emulator = Emulator(
        ManualClock(datetime(2026, 1, 5, 8, tzinfo=UTC)),
        project="demo-shop",
        attempt_log=AttemptLog(log),
    )
    topic = "projects/demo-shop/topics/firebase-schedule-cleanup-us-central1"
    with FirebaseBridge(emulator, hub=hub.address) as bridge:
        [job] = bridge.sync().created
        emulator.advance(timedelta(hours=1))  # the 09:00 run
        emulator.run_job(job)  # forced at 09:00: carries the next schedule time
    entries = [json.loads(line)["jsonPayload"] for line in log.getvalue().splitlines()]
    assert len(entries) == 4
    assert {(e["targetType"], e["pubsubTopic"]) for e in entries} == {("PUB_SUB", topic)}
    stamps = [r["body"]["context"]["timestamp"] for r in functions_emulator.received]
    assert stamps == ["2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z"]
    assert [a.forced for a in emulator.attempts(job)] == [False, True]
