"""The firebase bridge's pure parts and its command line, without node: the jobs made of
``/backends`` entries (as ``firebase deploy`` makes them), trigger keys, the legacy v1 event,
``firebase`` as ``start --firebase``, and exit 2 when nothing answers at the hub.

Against a real Functions emulator: tests/tools/firebase/test_firebase_emulator.py.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.domain.attempts import REASON_WIDTH
from scheduler_emulator.domain.codec import job_from_json
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.runtime.storage.attempt_log import AttemptLog
from scheduler_emulator.tools.cli import build_parser, main
from scheduler_emulator.tools.firebase import FirebaseBridge
from scheduler_emulator.tools.firebase.client import Unreachable
from scheduler_emulator.tools.firebase.command import (
    START_CHECK_SECONDS,
    bridge_from_args,
    check_hub,
    start_argv,
)
from scheduler_emulator.tools.firebase.delivery import FUNCTION_FAILED, FUNCTIONS_DOWN
from scheduler_emulator.tools.firebase.functions import (
    ScheduledFunction,
    app_engine_location,
    legacy_event,
    project_of,
    scheduled_functions,
    trigger_keys,
    valid_trigger_keys,
)
from tests.daemon import MANUAL, running_daemon, serving
from tests.drip import DripTarget, drip_server
from tests.support import RecordingTarget, case_table, wait_for

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
        trigger(
            id="europe-west1-fn",
            region="europe-west1",
            platform="gcfv1",
            schedule={"schedule": "every 5 minutes", "retryConfig": retry},
        )
    )
    job = fn.job_json("demo-p", URL, audience="ignored for v1")
    # In the project's App Engine location (us-central1 by default), not the function's region
    assert job == {
        "name": "projects/demo-p/locations/us-central1/jobs/firebase-schedule-fn-europe-west1",
        "schedule": "every 5 minutes",
        "timeZone": "America/Los_Angeles",
        "pubsubTarget": {
            "topicName": "projects/demo-p/topics/firebase-schedule-fn-europe-west1",
            "attributes": {"scheduled": "true"},
        },
        "retryConfig": {"retryCount": 3, "minBackoffDuration": "10s", "maxRetryDuration": "600s"},
    }
    job_from_json(job)
    # A project whose App Engine app is elsewhere (firebase-tools reads App Engine's "europe-west"
    # as europe-west1); a v2 function's job stays in its own region whatever that is.
    elsewhere = fn.job_json("demo-p", URL, app_engine=app_engine_location("europe-west"))
    assert elsewhere["name"] == (
        "projects/demo-p/locations/europe-west1/jobs/firebase-schedule-fn-europe-west1"
    )
    v2 = ScheduledFunction.from_trigger(trigger(id="asia-east1-fn", region="asia-east1"))
    assert v2.job_name("demo-p", "europe-west1") == (
        "projects/demo-p/locations/asia-east1/jobs/firebase-schedule-fn-asia-east1"
    )


def test_the_app_engine_location_is_a_flag_of_firebase_and_start() -> None:
    argv = start_argv(["firebase", "--app-engine-location", "europe-west", "--functions", "f:1"])
    assert argv == ["start", "--firebase-app-engine-location", "europe-west",
                    "--firebase-functions", "f:1"]  # fmt: skip
    args = build_parser().parse_args(argv)
    assert args.firebase_app_engine_location == "europe-west1"
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)))
    bridge = bridge_from_args(args, emulator, io.StringIO())
    assert bridge is not None and bridge.app_engine == "europe-west1"
    bridge.close()
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "firebase", "--app-engine-location",
         "Europe/West", "--in-memory"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert "argument --app-engine-location: " in done.stderr and "Europe/West" in done.stderr
    with pytest.raises(ConfigurationError, match="is for the Firebase bridge"):
        check_hub(build_parser().parse_args(["start", "--firebase-app-engine-location", "x1"]))


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
    [fn], skipped = scheduled_functions(answer)
    assert (fn.schedule, fn.time_zone, skipped) == ("0 2 * * *", "Europe/Berlin", [])
    assert project_of(answer) == ("demo-p", [])


def test_trigger_keys_come_from_the_404_and_the_newest_generation_wins() -> None:
    text = (
        "Function scheduler-emulator-probe does not exist, valid functions are: "
        "us-central1-fn-0, us-central1-fn-2, us-central1-fnx-3, us-central1-web"
    )
    keys = valid_trigger_keys(text)
    assert keys == ["us-central1-fn-0", "us-central1-fn-2", "us-central1-fnx-3", "us-central1-web"]
    by_function = trigger_keys(keys)
    assert by_function["us-central1-fn"] == "us-central1-fn-2"
    assert by_function["us-central1-web"] == "us-central1-web"
    assert "us-central1-gone" not in by_function
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
    assert (
        f"no Firebase Emulator Suite hub answers at 127.0.0.1:{port} (--hub, or start's --firebase)"
        in done.stderr
    )
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("flag", ["--firebase", "--firebase-functions"])
@pytest.mark.parametrize("address", ["nocolon", "http://127.0.0.1:4400", ":4400"])
def test_an_address_that_is_not_host_port_exits_2_naming_the_flag(
    capsys: pytest.CaptureFixture[str], flag: str, address: str
) -> None:
    """Before anything is looked up (a trial's ``--firebase nocolon`` got a DNS failure under
    ``--hub``'s name)."""
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["start", flag, address])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    example = "127.0.0.1:4400" if flag == "--firebase" else "127.0.0.1:5001"
    assert f"argument {flag}: the address must be HOST:PORT" in err and repr(address) in err
    assert f"such as {example}" in err


# ------------------------------------------------------------ a fake Emulator Suite, in-process


class FakeSuite:
    """A fake Functions emulator or hub over http.server: ``/backends`` (the functions),
    ``/emulators`` (hub only), the trigger route (200 for a listed key, else the Functions
    emulator's 404 listing the keys, project ignored as firebase-tools does)."""

    def __init__(self, *, hub_for: str | None = None, triggers: list[dict[str, Any]]) -> None:
        self.triggers = triggers
        self.body: str | None = None  # what /backends answers instead of the triggers
        self.hub_for = hub_for  # a hub: the Functions emulator's address it reports
        self.received: list[dict[str, Any]] = []
        self.status = 200  # what a listed function answers (500: it threw, with no body)
        self.failed = ""  # the body of a 500 (a v1 function's dead worker: {"code": "ECONNRESET"})
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
                    listed = {"backends": [{"functionTriggers": suite.triggers}]}
                    self._answer(200, listed if suite.body is None else suite.body)
                else:
                    self._answer(404, "Not Found")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = self.path.rsplit("/", 1)[-1]
                keys = [f"{t['id']}-0" for t in suite.triggers if isinstance(t, dict)]
                if suite.hub_for is None and key in keys:
                    suite.received.append({"path": self.path, "body": json.loads(body)})
                    self._answer(suite.status, "ok" if suite.status < 500 else suite.failed)
                else:
                    self._answer(404, f"Function {key} does not exist, valid functions are: "
                                      + ", ".join(keys))  # fmt: skip

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        # polled every 50 ms: close() waits for the next poll (0.5 s by default)
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

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


def test_a_wait_for_the_functions_emulator_is_said_again_while_it_lasts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trial 79: a bridge pointed at the logging emulator said once that it answered 426, then
    nothing, for good."""
    from scheduler_emulator.tools.firebase import bridge as module

    monkeypatch.setattr(module, "WAITING_REMINDER", 0.2)
    with serving(RecordingTarget(status=426)) as url:  # (as the logging emulator answers)
        emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
        bridge = FirebaseBridge(emulator, functions=url.removeprefix("http://"), poll_interval=0.05)
        try:
            bridge.start()
            wait_for(lambda: any(m.startswith("still waiting") for m in bridge.messages), 10)
            assert bridge.messages[0].startswith("waiting for the Functions emulator")
        finally:
            bridge.close()


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


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--hub", "localhost"], "error: argument --hub: the address must be HOST:PORT"),
        (["--functions=x"], "error: argument --functions: the address must be HOST:PORT"),
        (["--hubs", "h:1"], "error: unrecognized arguments: --hubs h:1; did you mean --hub?"),
    ],
    ids=["hub", "functions", "misspelt"],
)
def test_a_refusal_says_firebases_own_flags(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 209b: ``firebase --hub localhost`` was refused as ``start: error: argument
    --firebase``, and the pointer led to ``start --help``."""
    with pytest.raises(SystemExit) as exited:
        main(["firebase", *argv, "--in-memory"])
    first, pointer = capsys.readouterr().err.splitlines()
    assert exited.value.code == 2
    assert first.startswith(f"scheduler-emulator firebase: {said}"), first
    assert pointer == "(`scheduler-emulator firebase --help` lists what it takes.)"


def test_jobs_files_jobs_are_made_in_the_functions_emulators_project(
    functions_emulator: FakeSuite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 209: ``firebase --jobs`` adopted demo-shop after the file's jobs were made in
    my-project, so every short job ID the views were given named no job."""
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text('- {name: busy, schedule: "* * * * *", httpTarget: {uri: "http://h/x"}}\n')
    args = start_args("--functions", functions_emulator.address, "--jobs", str(jobs))
    check_hub(args)
    assert args.project == "demo-shop"
    assert capsys.readouterr().err == (
        "firebase: the daemon's default project is now demo-shop, the Functions emulator's (was "
        "my-project; give --project to choose it): --jobs files' jobs are made in it\n"
    )
    given = start_args("--functions", functions_emulator.address, "--jobs", str(jobs),
                       "--project", "demo-shop")  # fmt: skip
    check_hub(given)
    assert capsys.readouterr().err == ""


def test_a_restart_with_jobs_files_does_not_count_the_bridges_jobs_as_kept(
    functions_emulator: FakeSuite, tmp_path: Path
) -> None:
    """Trial 209b: the restart's note listed the bridge's jobs as "in no file … are kept:
    scheduler-emulator delete ID drops one"; the bridge makes them again."""
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text('- {name: busy, schedule: "* * * * *", httpTarget: {uri: "http://h/x"}}\n')
    args = ("--firebase-functions", functions_emulator.address, "--project", "demo-shop",
            "--jobs", str(jobs), "--data-dir", str(tmp_path / "data"), *MANUAL)  # fmt: skip
    listed = "/v1/projects/demo-shop/locations/us-central1/jobs"
    with running_daemon(*args) as first:
        wait_for(lambda: len(first.get(listed).get("jobs", [])) > 1, 30, "the bridge's jobs")
        first.stop()
    with running_daemon(*args) as second:
        second.stop()
        assert second.process.stderr is not None
        assert "note: each job in the --jobs files" not in second.process.stderr.read()


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
    assert f"hub answers at 127.0.0.1:{port} (from $FIREBASE_EMULATOR_HUB)" in message
    assert "--hub 127.0.0.1" not in message


def test_the_hub_of_the_current_directorys_firebase_json_is_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Trial 79: a project whose firebase.json puts the hub on 9991 got "nothing answers at
    127.0.0.1:4400 (the default …)"; firebase-tools itself reads the port from there."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.delenv("FIREBASE_EMULATOR_HUB", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "firebase.json").write_text(json.dumps({"emulators": {"hub": {"port": port}}}))
    with pytest.raises(ConfigurationError) as caught:
        check_hub(start_args())
    assert f"at 127.0.0.1:{port} (from ./firebase.json's emulators.hub)" in str(caught.value)
    (tmp_path / "firebase.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match="127.0.0.1:4400 \\(the default"):
        check_hub(start_args())


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


@pytest.mark.parametrize("flag", ["--hub", "--functions"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_daemons_own_address_is_refused_not_waited_for(flag: str, host: str) -> None:
    """Trial 101: --functions at the daemon's own port waited for ever on its 404s."""
    args = start_args(flag, f"{host}:9960", "--port", "9960")
    with pytest.raises(ConfigurationError, match=f"^{host}:9960 is this daemon's own address"):
        check_hub(args)


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


@pytest.mark.parametrize("answer", ["", '{"code":"ECONNRESET"}'], ids=["empty", "v1-worker"])
def test_a_function_that_threw_points_at_the_functions_emulators_log(
    hub: FakeSuite, functions_emulator: FakeSuite, answer: str
) -> None:
    """Trial 79: an empty 500 read URL_UNREACHABLE-UNREACHABLE_5xx and nothing more, though
    the reason is in the Functions emulator's log; trial 227: a v1 function's read
    {"code":"ECONNRESET"}."""
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, 8, tzinfo=UTC)), project="demo-shop")
    functions_emulator.status, functions_emulator.failed = 500, answer
    with FirebaseBridge(emulator, hub=hub.address) as bridge:
        [job] = bridge.sync().created
        emulator.run_job(job)
    [attempt] = emulator.attempts(job)
    assert attempt.code == "INTERNAL"
    if answer:  # its answer, then what it means
        assert attempt.reason == (
            answer + " — emulator's hint: a Node proxy's answer when the process running the "
            "handler died (the Firebase Functions emulator's, when a function threw): its "
            "terminal says why"
        )
    else:
        assert attempt.debug_info.endswith(". " + FUNCTION_FAILED), attempt.debug_info
    assert len(attempt.debug_info) <= REASON_WIDTH  # whole in a REASON (trial 101)


def test_a_stopped_functions_emulator_is_named_in_the_reason(
    hub: FakeSuite, functions_emulator: FakeSuite
) -> None:
    """Trial 101: a refused connection read like any unreachable URL, though the bridge knew
    whose it was."""
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, 8, tzinfo=UTC)), project="demo-shop")
    with FirebaseBridge(emulator, hub=hub.address) as bridge:
        [job] = bridge.sync().created
        functions_emulator.close()
        emulator.run_job(job)
    [attempt] = emulator.attempts(job)
    assert attempt.code == "UNAVAILABLE"
    assert attempt.debug_info == (
        "URL_UNREACHABLE-UNREACHABLE_CONNECTION_ERROR. Connection refused. " + FUNCTIONS_DOWN
    )


# ------------------------------------------------------------ each function alone


def good_triggers(project: str = "demo-shop") -> list[dict[str, Any]]:
    """Three functions that each make a job: v1, v2, and v2 in europe-west1."""
    label = {
        "EVENTARC_CLOUD_EVENT_SOURCE": f"cloudfunctions-emulated.googleapis.com/projects/{project}"
        "/locations/us-central1/functions/x"
    }
    return [
        v1_trigger(project),
        trigger(id="us-central1-report", name="report", labels=label),
        trigger(id="europe-west1-digest", name="digest", region="europe-west1", labels=label),
    ]


def with_value(entry: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    """``entry`` with ``value`` at the dotted path ``field``."""
    entry = json.loads(json.dumps(entry))
    *parents, last = field.split(".")
    node = entry
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return entry


@case_table(
    __file__,
    "bad_function",
    pytest.param("name", "x" * 600, "name", id="name-600-characters"),
)
def test_one_bad_function_is_skipped_alone_with_one_line_naming_it(
    field: str, value: str, field_named: str
) -> None:
    bad = with_value(trigger(id="us-central1-bad", name="bad"), field, value)
    suite = FakeSuite(triggers=[*good_triggers(), bad])
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    out = io.StringIO()
    bridge = FirebaseBridge(emulator, functions=suite.address, say=out)
    try:
        result = bridge.sync()
        again = bridge.sync()
    finally:
        bridge.close()
        suite.close()
    assert sorted(j.name.rsplit("/", 1)[-1] for j in emulator.list_jobs()) == [
        "firebase-schedule-cleanup-us-central1",
        "firebase-schedule-digest-europe-west1",
        "firebase-schedule-report-us-central1",
    ]
    [line] = result.skipped
    [said] = [m for m in out.getvalue().splitlines() if "no job" in m]  # said once, not per look
    assert said == f"firebase: {line}"
    assert line.startswith("no job for function ")
    assert line.endswith(  # (trial 227: a fix saved, the emulator hot-reloaded: still no job)
        " Fix it, then restart firebase emulators:start (a hot reload keeps a function's old "
        "options)."
    )
    assert field_named in line
    assert repr(value)[:40] in line if field == "name" else value in line
    assert ("bad" in line) if field != "name" else True
    assert len(line) < 400 and "Traceback" not in line
    assert again.skipped == [line] and again.created == []


def test_a_v2_function_on_an_english_like_schedule_is_told_of_its_real_time_schedule_time() -> None:
    """Trial 190: ``every 5 minutes`` gave a v2 function real time on a manual clock, unsaid."""
    english = trigger(id="us-central1-tick", name="tick", schedule={"schedule": "every 5 minutes"})
    suite = FakeSuite(triggers=[*good_triggers(), english])
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    out = io.StringIO()
    bridge = FirebaseBridge(emulator, functions=suite.address, say=out)
    try:
        bridge.sync()
    finally:
        bridge.close()
        suite.close()
    created = [line for line in out.getvalue().splitlines() if "created job" in line]
    noted = [line for line in created if "event.scheduleTime reads real time" in line]
    assert len(created) == 4 and len(noted) == 1 and "tick" in noted[0], created


def test_a_malformed_project_label_is_refused_and_never_adopted() -> None:
    suite = FakeSuite(triggers=good_triggers(project="../evil"))
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    out = io.StringIO()
    bridge = FirebaseBridge(emulator, functions=suite.address, adopt_project=True, say=out)
    try:
        result = bridge.sync()
        assert emulator.project == "demo-shop"
        assert len(result.created) == 3
        assert all(j.name.startswith("projects/demo-shop/locations/") for j in emulator.list_jobs())
        assert any("'../evil'" in m and "not a project ID" in m for m in bridge.messages)
        # Fixed: the well-formed project is adopted, the jobs move there, none stays behind.
        suite.triggers = good_triggers(project="demo-fixed")
        bridge.sync()
        assert emulator.project == "demo-fixed"
        assert {j.name.split("/")[1] for j in emulator.list_jobs()} == {"demo-fixed"}
        # the old project's jobs are named so, not as the ones just created (trial 101)
        gone = [m for m in bridge.messages if m.startswith("deleted job ")]
        assert len(gone) == 3 and all(
            m.endswith(" of project demo-shop: the Functions emulator runs project demo-fixed now")
            for m in gone
        ), gone
    finally:
        bridge.close()
        suite.close()
    assert "Traceback" not in out.getvalue()


@case_table(__file__, "backends_shape")
def test_a_backends_answer_of_another_shape_gets_a_message_in_our_words(
    body: str, message: str
) -> None:
    suite = FakeSuite(triggers=good_triggers())
    suite.body = body
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    bridge = FirebaseBridge(emulator, functions=suite.address, poll_interval=0.05)
    try:
        with pytest.raises(Unreachable) as caught:
            bridge.sync()
        assert message in str(caught.value)
        bridge.start()  # the thread says it once, in our words
        wait_for(lambda: any(message in m for m in bridge.messages), 10, "the message")
    finally:
        bridge.close()
        suite.close()
    for text in [str(caught.value), *bridge.messages]:
        assert "AttributeError" not in text and "has no attribute" not in text
    # Beside good functions, an odd entry is skipped alone.
    good = json.dumps(good_triggers())[1:-1]
    suite = FakeSuite(triggers=good_triggers())
    suite.body = f'{{"backends": [{{"functionTriggers": [7, {good}]}}, "x"]}}'
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    try:
        with FirebaseBridge(emulator, functions=suite.address) as bridge:
            assert len(bridge.sync().created) == 3
        assert any("functionTriggers[0]: not an object" in m for m in bridge.messages)
        assert any("ignored backends[1]" in m for m in bridge.messages)
    finally:
        suite.close()


def test_a_codebase_still_loading_after_a_restart_keeps_its_jobs_and_their_state() -> None:
    """Trial 156: firebase-tools lists every codebase at once and loads them one after another;
    a look between the two loads deleted the second codebase's jobs (a paused one came back
    enabled)."""
    node, python = good_triggers()[:2], good_triggers()[2:]

    def backends(*codebases: list[dict[str, Any]]) -> str:
        return json.dumps({"backends": [{"functionTriggers": c} for c in codebases]})

    suite = FakeSuite(triggers=good_triggers())
    suite.body = backends(node, python)
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    try:
        with FirebaseBridge(emulator, functions=suite.address) as bridge:
            [digest] = [n for n in bridge.sync().created if "digest" in n]
            emulator.pause_job(digest)
            suite.body = backends(node, [])  # restarted: the Python codebase not loaded yet
            assert bridge.sync().deleted == []
            assert emulator.get_job(digest).state.name == "PAUSED"
            [kept] = [m for m in bridge.messages if m.startswith("kept ")]
            assert "firebase-schedule-digest-europe-west1" in kept and "1 codebase(s)" in kept
            suite.body = backends(node, python)
            assert bridge.sync().deleted == [] and emulator.get_job(digest).state.name == "PAUSED"
            suite.body = backends(node, [trigger(id="europe-west1-other", name="other")])
            assert bridge.sync().deleted == [digest]  # gone from a loaded codebase: deleted
    finally:
        suite.close()


def test_an_unchanged_answer_is_not_worked_on_again() -> None:
    suite = FakeSuite(triggers=good_triggers())
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
    upserts: list[str] = []
    upsert = emulator.upsert_job

    def counted(job: Any) -> Any:
        upserts.append(job.name)
        return upsert(job)

    emulator.upsert_job = counted  # type: ignore[method-assign]
    try:
        with FirebaseBridge(emulator, functions=suite.address) as bridge:
            first = bridge.sync()
            assert (len(first.created), first.unchanged, len(upserts)) == (3, False, 3)
            assert bridge.sync().unchanged and len(upserts) == 3
            # A job deleted through the API comes back at the next look, as before.
            emulator.delete_job(first.created[0])
            assert not bridge.sync().unchanged and len(upserts) == 4
            # A changed function is worked on again.
            suite.triggers[1]["schedule"] = {"schedule": "0 10 * * *"}
            changed = bridge.sync()
            assert changed.updated == [first.created[1]] and len(upserts) == 5
    finally:
        suite.close()


# ------------------------------------------------------------ --functions at the wrong thing


def _daemon_listens(functions: str, *extra: str) -> tuple[float, list[str]]:
    """Start ``firebase --functions FUNCTIONS``; return the seconds until it listened and its
    stderr once it has said there that it is waiting (then it is stopped). Its stdout, the
    execution log's, holds the startup line and no bridge line (trial 135: a ``jq`` on the
    JSON log read them)."""
    lines: list[str] = []
    out: list[str] = []
    began = time.monotonic()
    daemon = subprocess.Popen(
        [sys.executable, "-m", "scheduler_emulator", "firebase", "--functions", functions,
         "--in-memory", "--port", "0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    readers = [
        threading.Thread(target=sink.extend, args=(stream,), daemon=True)
        for sink, stream in ((lines, daemon.stderr), (out, daemon.stdout))
    ]
    for reader in readers:
        reader.start()
    try:
        wait_for(lambda: any("listening on" in line for line in out), 30, "listening")
        listened = time.monotonic() - began
        wait_for(lambda: any("waiting for the Functions" in line for line in lines), 30, "why")
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        for reader in readers:
            reader.join(timeout=10)
        for stream in (daemon.stdout, daemon.stderr):
            if stream is not None:
                stream.close()
    assert daemon.returncode == 0, lines
    assert not any(line.startswith("firebase:") for line in out), out
    return listened, lines


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("target", "problem"),
    [
        pytest.param(
            DripTarget(mode="drip_headers", interval=2.0), "no complete answer within 5 s",
            id="one-byte-every-2-s",
        ),
        pytest.param(DripTarget(mode="raw", raw=b"HELLO\r\n"), "failed", id="not-http"),
        pytest.param(
            DripTarget(mode="raw", raw=b"HTTP/1.1 200 OK\r\n"
                       b"Content-Length: 99999999999999999999999\r\n\r\n{"),
            "/backends", id="huge-content-length",
        ),
    ],
)  # fmt: skip
def test_the_daemon_listens_at_once_whatever_answers_at_functions(
    target: DripTarget, problem: str
) -> None:
    with drip_server(target) as url:
        address = url.removeprefix("http://")
        # What stands between starting and listening is bounded: START_CHECK_SECONDS in all.
        began = time.monotonic()
        check_hub(start_args("--functions", address))
        checked = time.monotonic() - began
        assert checked < START_CHECK_SECONDS + 1.5, checked  # 1.5 s: imports on a busy machine
        listened, lines = _daemon_listens(address)
    print(
        f"checked in {checked:.2f} s; the daemon listened after {listened:.2f} s "
        f"(load {os.getloadavg()[0]:.1f})"
    )
    [waiting] = [line for line in lines if "waiting for the Functions" in line]
    assert problem in waiting and len(waiting) < 400, waiting
    assert not any("Traceback" in line or "Error(" in line for line in lines), lines


def test_an_answer_over_the_size_cap_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scheduler_emulator.tools.firebase import client

    monkeypatch.setattr(client, "MAX_ANSWER_BYTES", 1 << 20)
    refused = pytest.raises(Unreachable, match=r"/backends answered more than 1 MB, the most read")
    with drip_server(DripTarget(mode="big_body", body_bytes=3 << 20)) as url, refused:
        client.backends(url.removeprefix("http://"), 10)


def test_the_bridges_jobs_are_not_warned_of_as_having_nowhere_to_publish_or_old_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 164: a restart warned that a v1 function's Pub/Sub job had nowhere to publish (the
    bridge POSTs it to the trigger route), and that a v2 function's OIDC tokens were stamped
    with a manual clock's time (the Functions emulator checks none)."""
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    topic = {"topicName": "projects/my-project/topics/ticks", "data": "aGk="}
    oidc = {
        "uri": "http://127.0.0.1:9/",
        "oidcToken": {"serviceAccountEmail": "a@b.iam.gserviceaccount.com"},
    }
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([
        {"name": "firebase-schedule-cleanup-us-central1", "schedule": "0 9 * * *",
         "pubsubTarget": topic},
        {"name": "restock", "schedule": "0 9 * * *", "pubsubTarget": topic},
        {"name": "firebase-schedule-tick-us-central1", "schedule": "0 9 * * *", "httpTarget": oidc},
        {"name": "report", "schedule": "0 9 * * *", "httpTarget": oidc},
    ]))  # fmt: skip
    manual = ("--clock", "manual", "--start", "2020-01-01T00:00:00Z")
    _, lines = _daemon_listens(
        "127.0.0.1:9", "--jobs", str(jobs), "--project", "my-project", *manual
    )
    [warning] = [line for line in lines if "nowhere to publish" in line]
    assert warning.startswith("warning: 1 Pub/Sub job(s) (restock) have nowhere to publish")
    [warning] = [line for line in lines if "OIDC tokens stamped" in line]
    assert warning.startswith("warning: 1 job(s) (report) send OIDC tokens stamped"), warning
