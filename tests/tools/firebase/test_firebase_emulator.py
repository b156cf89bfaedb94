"""The firebase bridge against a real Firebase Functions emulator (firebase-tools from npm).

The pinned npm packages (tests/tools/firebase/firebase_project/npm-packages.txt) are installed once
into ``$SCHEDULER_EMULATOR_FIREBASE_NPM`` (``.ci/run`` does it), else into ``.firebase-npm/`` of the
checkout; the tests skip only when node or npm is absent. One Functions emulator runs for the whole
module, alone (``--only functions``), on free ports, for a ``demo-`` project holding a v1
``pubsub.schedule`` function and a v2 ``onSchedule`` one (tests/tools/firebase/firebase_project).
Each function appends one JSON line per run to its own log, ``<log dir>/<function>.jsonl``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.realtime import real_monotonic
from scheduler_emulator.tools.firebase import FirebaseBridge
from scheduler_emulator.tools.firebase.client import backends, not_found_text
from scheduler_emulator.tools.firebase.functions import valid_trigger_keys
from tests.support import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[3]
PROJECT_SOURCE = Path(__file__).resolve().parent / "firebase_project"
PACKAGES = (PROJECT_SOURCE / "npm-packages.txt").read_text().split()
PROJECT = "demo-scheduler"
V1 = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-v1sched-us-central1"
V2 = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-v2sched-us-central1"
ADDED = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-added-us-central1"
#: Environment of firebase-tools: no update check, no analytics, no metadata-server lookup.
QUIET = {
    "FIREBASE_CLI_DISABLE_UPDATE_CHECK": "true",
    "FIREBASE_CLI_EXPERIMENTS": "",
    "CI": "true",
    "METADATA_SERVER_DETECTION": "none",
    "NO_UPDATE_NOTIFIER": "1",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The pinned npm packages, installed once (skips only when node or npm is absent)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node or npm is absent: the Firebase Functions emulator cannot run here")
    prefix = Path(os.environ.get("SCHEDULER_EMULATOR_FIREBASE_NPM") or ROOT / ".firebase-npm")
    firebase = prefix / "node_modules" / ".bin" / "firebase"
    if not firebase.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                *PACKAGES,
            ],  # as .ci/run does (re2 is optional) # fmt: skip
            check=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
    return prefix / "node_modules"


@dataclass
class FunctionsEmulator:
    """The running Functions emulator of the module."""

    directory: Path
    logs: Path
    functions: str
    hub: str
    process: subprocess.Popen[Any]
    output: Path
    cli: subprocess.Popen[Any]
    cli_lines: list[str]
    cli_url: str

    command: list[str]
    env: dict[str, str]

    expected: frozenset[str] = frozenset({"v1sched", "v2sched"})

    def start(self) -> None:
        """Start the Functions emulator; return once it lists the scheduled functions."""
        with self.output.open("ab") as sink:
            self.process = subprocess.Popen(
                self.command, cwd=self.directory, env=self.env, stdout=sink,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        if not wait_for(lambda: self.scheduled() == self.expected, 180):
            pytest.fail("the Functions emulator did not load the functions:\n" + self.log())

    def stop(self) -> None:
        """Stop the Functions emulator (its whole process group)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)

    def log(self) -> str:
        return self.output.read_text(errors="replace")

    def runs(self, function: str) -> list[dict[str, Any]]:
        path = self.logs / f"{function}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line]

    def scheduled(self) -> set[str]:
        try:
            answer = backends(self.functions, timeout=2)
        except Exception:  # noqa: BLE001 - not up yet
            return set()
        return {
            t["name"]
            for b in answer.get("backends", [])
            for t in b.get("functionTriggers", [])
            if t.get("schedule")
        }


def _read_lines(stream: Any, lines: list[str]) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))


def _said(lines: list[str], text: str, bound: float) -> bool:
    return wait_for(lambda: any(text in line for line in lines), bound)


@pytest.fixture(scope="module")
def emulator_suite(
    node_modules: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FunctionsEmulator]:
    """The project copied to a temporary directory, a bridge daemon started first (it waits),
    then the Functions emulator; both stopped at the end of the module."""
    directory = tmp_path_factory.mktemp("firebase") / "project"
    shutil.copytree(PROJECT_SOURCE, directory)
    (directory / "functions" / "node_modules").symlink_to(node_modules)
    logs = directory / "runs"
    logs.mkdir()
    functions_port, hub_port, logging_port = free_port(), free_port(), free_port()
    config = json.loads((directory / "firebase.json").read_text())
    config["emulators"]["functions"]["port"] = functions_port
    config["emulators"]["hub"]["port"] = hub_port
    config["emulators"]["logging"]["port"] = logging_port
    (directory / "firebase.json").write_text(json.dumps(config))
    functions = f"127.0.0.1:{functions_port}"

    # The bridge daemon, started before the Functions emulator: it must wait and say so.
    cli = subprocess.Popen(
        [sys.executable, "-m", "scheduler_emulator", "firebase", "--functions", functions,
         "--project", PROJECT, "--in-memory", "--port", "0", "--clock", "manual"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    cli_lines: list[str] = []
    threading.Thread(target=_read_lines, args=(cli.stdout, cli_lines), daemon=True).start()
    output = directory / "emulator.log"
    env = {**os.environ, **QUIET, "FIXTURE_LOG_DIR": str(logs), "HOME": str(directory)}
    command = [str(node_modules / ".bin" / "firebase"), "emulators:start", "--only", "functions",
               "--project", PROJECT]  # fmt: skip
    suite = FunctionsEmulator(
        directory, logs, functions, f"127.0.0.1:{hub_port}", cli, output, cli, cli_lines, "",
        command, env,
    )  # fmt: skip
    try:
        assert _said(cli_lines, "listening on", 30), cli_lines
        assert _said(cli_lines, "waiting for the Functions emulator", 10), cli_lines
        suite.cli_url = next(line for line in cli_lines if "listening on" in line).split()[3]
        suite.start()
        yield suite
    finally:
        cli.send_signal(signal.SIGTERM)
        try:
            cli.wait(timeout=20)
        except subprocess.TimeoutExpired:
            cli.kill()
            cli.wait(timeout=20)
        if cli.stdout is not None:
            cli.stdout.close()
        if suite.process is not cli:
            suite.stop()


def test_the_bridge_started_first_waits_then_creates_both_jobs(
    emulator_suite: FunctionsEmulator,
) -> None:
    lines = emulator_suite.cli_lines
    assert _said(lines, "created job firebase-schedule-v1sched-us-central1", 30), lines
    assert _said(lines, "created job firebase-schedule-v2sched-us-central1", 30), lines
    waiting = next(i for i, line in enumerate(lines) if "waiting for the Functions" in line)
    created = next(i for i, line in enumerate(lines) if "created job" in line)
    assert waiting < created
    assert emulator_suite.functions in lines[waiting]


def test_one_virtual_week_fires_each_function_exactly_on_its_schedule(
    emulator_suite: FunctionsEmulator,
) -> None:
    for path in emulator_suite.logs.glob("*.jsonl"):
        path.unlink()
    (emulator_suite.logs / "v2sched.fail-once").touch()  # its first run throws once
    monday = datetime(2026, 1, 5, tzinfo=UTC)
    emulator = Emulator(ManualClock(monday), project=PROJECT)
    bridge = FirebaseBridge(emulator, functions=emulator_suite.functions, project=PROJECT)
    try:
        result = bridge.sync()
        assert sorted(result.created) == [V1, V2]
        v1, v2 = emulator.get_job(V1), emulator.get_job(V2)
        assert (v1.schedule, v1.time_zone, v1.attempt_deadline) == (
            "every 5 minutes", "Europe/Berlin", None,
        )  # fmt: skip
        assert v1.pubsub_target is not None
        assert v1.pubsub_target.topic_name == (
            f"projects/{PROJECT}/topics/firebase-schedule-v1sched-us-central1"
        )
        assert (v2.schedule, v2.time_zone) == ("0 9 * * 1-5", "America/New_York")
        assert v2.attempt_deadline == timedelta(seconds=180)  # 60 s clamped to 180
        assert v2.retry_config.retry_count == 2

        started = real_monotonic()
        emulator.advance(timedelta(days=7))
        week_seconds = real_monotonic() - started
    finally:
        bridge.close()
        emulator.close()
    print(f"one virtual week delivered in {week_seconds:.1f} s")

    v1_runs = emulator_suite.runs("v1sched")
    expected_v1 = [monday + timedelta(minutes=5 * k) for k in range(1, 7 * 24 * 12 + 1)]
    assert [datetime.fromisoformat(r["timestamp"]) for r in v1_runs] == expected_v1
    assert {r["eventType"] for r in v1_runs} == {"google.pubsub.topic.publish"}
    assert {r["resource"] for r in v1_runs} == {
        f"projects/{PROJECT}/topics/firebase-schedule-v1sched-us-central1"
    }

    v2_runs = emulator_suite.runs("v2sched")
    days = [f"2026-01-{d:02d}T09:00:00-05:00" for d in (5, 6, 7, 8, 9)]
    assert [r["scheduleTime"] for r in v2_runs] == [days[0], *days]  # the first run twice
    assert [r["failed"] for r in v2_runs] == [True] + [False] * 5
    assert {r["jobName"] for r in v2_runs} == {"firebase-schedule-v2sched-us-central1"}


def test_the_v2_request_carries_a_token_that_verifies_against_the_emulators_keys(
    emulator_suite: FunctionsEmulator,
) -> None:
    from google.auth.transport.requests import Request
    from google.oauth2 import id_token

    base = emulator_suite.cli_url
    job_id = "firebase-schedule-v2sched-us-central1"
    run = urllib.request.Request(
        f"{base}/v1/{V2}:run",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(run, timeout=30).close()

    def attempts() -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{base}/_emulator/attempts?job={job_id}", timeout=10) as r:
            return list(json.loads(r.read()).get("attempts", []))

    assert wait_for(lambda: any(a.get("code") for a in attempts()), 60), attempts()
    attempt = attempts()[-1]
    assert attempt["code"] == "OK", attempt
    headers = attempt["request"]["headers"]
    assert headers["X-CloudScheduler"] == "true"
    assert headers["User-Agent"] == "Google-Cloud-Scheduler"
    assert headers["X-CloudScheduler-JobName"] == job_id
    token = headers["Authorization"].removeprefix("Bearer ")
    audience = f"https://us-central1-{PROJECT}.cloudfunctions.net/v2sched"
    claims = id_token.verify_token(
        token, Request(), audience=audience, certs_url=f"{base}/_emulator/oidc/v1/certs",
        clock_skew_in_seconds=300,
    )  # fmt: skip
    assert claims["aud"] == audience
    assert claims["email"] == f"{PROJECT}-compute@developer.gserviceaccount.com"


def _hub_put(suite: FunctionsEmulator, path: str) -> None:
    request = urllib.request.Request(f"http://{suite.hub}{path}", data=b"", method="PUT")
    urllib.request.urlopen(request, timeout=30).close()


def test_disabled_triggers_are_recorded_and_a_new_generation_is_followed(
    emulator_suite: FunctionsEmulator,
) -> None:
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project=PROJECT)
    bridge = FirebaseBridge(emulator, hub=emulator_suite.hub)
    try:
        bridge.sync()
        _hub_put(emulator_suite, "/functions/disableBackgroundTriggers")
        emulator.run_job(V2)
        attempt = emulator.attempts(V2)[-1]
        assert attempt.response_status == 204
        assert "FIREBASE_TRIGGERS_DISABLED" in attempt.debug_info
        assert "background triggers are currently disabled" in attempt.debug_info

        _hub_put(emulator_suite, "/functions/enableBackgroundTriggers")  # generation + 1
        keys = valid_trigger_keys(not_found_text(emulator_suite.functions, PROJECT))
        newest = max(k for k in keys if k.startswith("us-central1-v2sched-"))
        result = bridge.sync()
        assert result.functions == 2  # the duplicates /backends now shows are one function each
        assert result.updated, result
        v2 = emulator.get_job(V2)
        assert v2.http_target is not None and v2.http_target.uri.endswith("/" + newest)
        emulator.run_job(V2)
        emulator.run_job(V1)
        assert emulator.attempts(V2)[-1].code == "OK"
        assert emulator.attempts(V1)[-1].code == "OK"
    finally:
        bridge.close()
        emulator.close()


def test_adding_and_deleting_a_function_while_both_run(emulator_suite: FunctionsEmulator) -> None:
    index = emulator_suite.directory / "functions" / "index.js"
    original = index.read_text()
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project=PROJECT)
    bridge = FirebaseBridge(emulator, functions=emulator_suite.functions, poll_interval=0.5)
    bridge.start()
    try:
        assert wait_for(lambda: emulator.engine.has_job(V2), 30), bridge.messages
        index.write_text(
            original
            + '\nexports.added = onSchedule("*/10 * * * *", async () => record("added", {}));\n'
        )
        assert wait_for(lambda: "added" in emulator_suite.scheduled(), 120)
        reloaded = real_monotonic()
        assert wait_for(lambda: emulator.engine.has_job(ADDED), 5), bridge.messages
        print(f"job created {real_monotonic() - reloaded:.2f} s after the reload was seen")
        assert emulator.get_job(ADDED).schedule == "*/10 * * * *"

        # firebase-tools keeps a removed scheduled function listed (and its trigger key) until
        # the Functions emulator restarts: the bridge deletes the job once it is gone there.
        index.write_text(original)
        emulator_suite.stop()
        assert wait_for(lambda: any("waiting" in m for m in bridge.messages), 10), bridge.messages
        emulator_suite.start()
        assert "added" not in emulator_suite.scheduled()
        assert wait_for(lambda: not emulator.engine.has_job(ADDED), 5), bridge.messages
        assert emulator.engine.has_job(V1) and emulator.engine.has_job(V2)
    finally:
        index.write_text(original)
        bridge.close()
        emulator.close()


PYTHON_SOURCE = Path(__file__).resolve().parent / "firebase_project_python"


@pytest.fixture(scope="module")
def python_suite(
    node_modules: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FunctionsEmulator]:
    """A second Functions emulator holding a Python codebase: firebase-functions from PyPI in
    a virtualenv kept beside the npm packages (made once)."""
    venv = node_modules.parent / "python-venv"
    requirements = PYTHON_SOURCE / "functions" / "requirements.txt"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "-r", str(requirements)],
            check=True, timeout=600, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    directory = tmp_path_factory.mktemp("firebase-python") / "project"
    shutil.copytree(PYTHON_SOURCE, directory)
    (directory / "functions" / "venv").symlink_to(venv)
    logs = directory / "runs"
    logs.mkdir()
    functions_port, hub_port, logging_port = free_port(), free_port(), free_port()
    config = json.loads((directory / "firebase.json").read_text())
    config["emulators"]["functions"]["port"] = functions_port
    config["emulators"]["hub"]["port"] = hub_port
    config["emulators"]["logging"]["port"] = logging_port
    (directory / "firebase.json").write_text(json.dumps(config))
    env = {**os.environ, **QUIET, "FIXTURE_LOG_DIR": str(logs), "HOME": str(directory)}
    command = [str(node_modules / ".bin" / "firebase"), "emulators:start", "--only", "functions",
               "--project", PROJECT]  # fmt: skip
    placeholder: subprocess.Popen[Any] = subprocess.Popen([sys.executable, "-c", ""])
    placeholder.wait()
    suite = FunctionsEmulator(
        directory, logs, f"127.0.0.1:{functions_port}", f"127.0.0.1:{hub_port}", placeholder,
        directory / "emulator.log", placeholder, [], "", command, env, frozenset({"pysched"}),
    )  # fmt: skip
    try:
        suite.start()
        yield suite
    finally:
        suite.stop()


def test_a_python_on_schedule_function_fires_the_same_way(python_suite: FunctionsEmulator) -> None:
    monday = datetime(2026, 1, 5, tzinfo=UTC)
    emulator = Emulator(ManualClock(monday), project=PROJECT)
    bridge = FirebaseBridge(emulator, functions=python_suite.functions)
    job = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-pysched-us-central1"
    try:
        assert bridge.sync().created == [job]
        assert emulator.get_job(job).time_zone == "America/New_York"
        assert emulator.get_job(job).retry_config.retry_count == 1
        emulator.advance(timedelta(days=7))
        assert [a.code for a in emulator.attempts(job)] == ["OK"] * 5
    finally:
        bridge.close()
        emulator.close()
    days = [f"2026-01-{d:02d}T09:00:00-05:00" for d in (5, 6, 7, 8, 9)]
    # Starting a Python worker (the first run) calls the function once more, without Cloud
    # Scheduler's headers (firebase-tools 15.34.2, firebase-functions 0.6.0): not a run.
    loading = [r for r in python_suite.runs("pysched") if r["jobName"] is None]
    assert len(loading) <= 1
    runs = [r for r in python_suite.runs("pysched") if r["jobName"] is not None]
    assert [r["scheduleTime"] for r in runs] == days
    assert {r["jobName"] for r in runs} == {"firebase-schedule-pysched-us-central1"}
