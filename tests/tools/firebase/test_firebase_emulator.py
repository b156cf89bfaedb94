"""The firebase bridge against a real Firebase Functions emulator (firebase-tools from npm).

The pinned npm packages (tests/tools/firebase/firebase_project/npm-packages.txt) are installed once
into ``$SCHEDULER_EMULATOR_FIREBASE_NPM`` (``.ci/run`` does it), else into ``.firebase-npm/`` of the
checkout; the tests skip only when node or npm is absent. One Functions emulator runs for the whole
module, alone (``--only functions``), on free ports, for a ``demo-`` project holding a v1
``pubsub.schedule`` function and a v2 ``onSchedule`` one (tests/tools/firebase/firebase_project).
Each function appends one JSON line per run to its own log, ``<log dir>/<function>.jsonl``.

The two ``test_the_docs_…`` tests run docs/firebase.md's own blocks (those marked
``<!-- run by tests/tools/firebase/test_firebase_emulator.py -->``, which
tests/project/test_docs_snippets.py leaves to them), each with its own Functions emulator for
the doc's ``demo-shop`` project.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
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
from tests.support import Fenced, fenced_blocks, free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[3]
PROJECT_SOURCE = Path(__file__).resolve().parent / "firebase_project"
PACKAGES = (PROJECT_SOURCE / "npm-packages.txt").read_text().split()
PROJECT = "demo-scheduler"
V1 = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-v1sched-us-central1"
V2 = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-v2sched-us-central1"
ADDED = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-added-us-central1"
# europe-west1 functions: the v1 one's job in the App Engine location (us-central1 by default),
# the v2 one's in its region, as firebase deploy makes them.
V1_EU = f"projects/{PROJECT}/locations/us-central1/jobs/firebase-schedule-v1eu-europe-west1"
V2_EU = f"projects/{PROJECT}/locations/europe-west1/jobs/firebase-schedule-v2eu-europe-west1"
#: Environment of firebase-tools: no update check, no analytics, no metadata-server lookup.
QUIET = {
    "FIREBASE_CLI_DISABLE_UPDATE_CHECK": "true",
    "FIREBASE_CLI_EXPERIMENTS": "",
    "CI": "true",
    "METADATA_SERVER_DETECTION": "none",
    "NO_UPDATE_NOTIFIER": "1",
}


#: Where the npm packages and the virtualenvs of these tests are kept between runs.
PREFIX = Path(os.environ.get("SCHEDULER_EMULATOR_FIREBASE_NPM") or ROOT / ".firebase-npm")


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The pinned npm packages, installed once (skips only when node or npm is absent)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node or npm is absent: the Firebase Functions emulator cannot run here")
    prefix = PREFIX
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

    expected: frozenset[str] = frozenset({"v1sched", "v2sched", "v1eu", "v2eu"})

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


def copy_project(
    source: Path, directory: Path, link: str, link_to: Path, node_modules: Path
) -> tuple[Path, str, str, list[str], dict[str, str]]:
    """Copy the Firebase project ``source`` to ``directory``, with ``functions/<link>`` a link
    to ``link_to`` (its packages), an empty ``runs`` folder for the functions' logs and free
    ports for the functions, hub and logging emulators written into its firebase.json.

    :return: the logs folder, the functions and hub addresses (``host:port``), and the command
        and environment that start its Functions emulator.
    """
    shutil.copytree(source, directory)
    (directory / "functions" / link).symlink_to(link_to)
    logs = directory / "runs"
    logs.mkdir()
    ports = {name: free_port() for name in ("functions", "hub", "logging")}
    config = json.loads((directory / "firebase.json").read_text())
    for name, port in ports.items():
        config["emulators"][name]["port"] = port
    (directory / "firebase.json").write_text(json.dumps(config))
    env = {**os.environ, **QUIET, "FIXTURE_LOG_DIR": str(logs), "HOME": str(directory),
           "TMPDIR": str(directory)}  # fmt: skip
    command = [str(node_modules / ".bin" / "firebase"), "emulators:start", "--only", "functions",
               "--project", PROJECT]  # fmt: skip
    return logs, f"127.0.0.1:{ports['functions']}", f"127.0.0.1:{ports['hub']}", command, env


@pytest.fixture(scope="module")
def emulator_suite(
    node_modules: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FunctionsEmulator]:
    """The project copied to a temporary directory, a bridge daemon started first (it waits),
    then the Functions emulator; both stopped at the end of the module."""
    directory = tmp_path_factory.mktemp("firebase") / "project"
    logs, functions, hub, command, env = copy_project(
        PROJECT_SOURCE, directory, "node_modules", node_modules, node_modules
    )

    # The bridge daemon, started before the Functions emulator: it must wait and say so.
    cli = subprocess.Popen(
        [sys.executable, "-m", "scheduler_emulator", "firebase", "--functions", functions,
         "--project", PROJECT, "--in-memory", "--port", "0", "--clock", "manual"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    cli_lines: list[str] = []
    threading.Thread(target=_read_lines, args=(cli.stdout, cli_lines), daemon=True).start()
    output = directory / "emulator.log"
    suite = FunctionsEmulator(
        directory, logs, functions, hub, cli, output, cli, cli_lines, "", command, env
    )
    try:
        assert _said(cli_lines, "listening on", 30), cli_lines
        assert _said(cli_lines, "waiting for the Functions emulator", 10), cli_lines
        listening = next(line for line in cli_lines if "listening on" in line)  # (a JSON line)
        suite.cli_url = listening.split("listening on ", 1)[1].split()[0]
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


def test_a_v1_functions_job_is_in_the_app_engine_location_and_a_v2_ones_in_its_region(
    emulator_suite: FunctionsEmulator,
) -> None:
    """As firebase deploy makes them: the daemon (no --firebase-app-engine-location) puts the
    europe-west1 v1 function's job under locations/us-central1 and the v2 one's under
    locations/europe-west1; each is delivered to its function. A project whose App Engine app
    is in europe-west (the bridge's app_engine_location) gets the v1 job there."""
    base = emulator_suite.cli_url

    def job(name: str) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{base}/v1/{name}", timeout=10) as answer:
                return dict(json.loads(answer.read()))
        except urllib.error.HTTPError:
            return None

    assert wait_for(lambda: job(V1_EU) and job(V2_EU), 60), emulator_suite.cli_lines
    assert job(V1_EU.replace("/us-central1/", "/europe-west1/")) is None
    assert "pubsubTarget" in (job(V1_EU) or {}) and "httpTarget" in (job(V2_EU) or {})

    ran = {fn: len(emulator_suite.runs(fn)) for fn in ("v1eu", "v2eu")}
    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project=PROJECT)
    bridge = FirebaseBridge(
        emulator, functions=emulator_suite.functions, app_engine_location="europe-west"
    )
    try:
        created = bridge.sync().created
        moved = V1_EU.replace("/us-central1/", "/europe-west1/")
        assert moved in created and V2_EU in created and V1_EU not in created
        emulator.run_job(moved)
        emulator.run_job(V2_EU)
        assert [a.code for a in emulator.attempts(moved) + emulator.attempts(V2_EU)] == ["OK"] * 2
    finally:
        bridge.close()
        emulator.close()
    assert wait_for(lambda: len(emulator_suite.runs("v1eu")) == ran["v1eu"] + 1, 10)
    assert len(emulator_suite.runs("v2eu")) == ran["v2eu"] + 1


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
        assert sorted(result.created) == sorted([V1, V2, V1_EU, V2_EU])
        v1, v2 = emulator.get_job(V1), emulator.get_job(V2)
        assert (v1.schedule, v1.time_zone, v1.attempt_deadline) == (
            "every 30 minutes", "Europe/Berlin", None,
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
    expected_v1 = [monday + timedelta(minutes=30 * k) for k in range(1, 7 * 24 * 2 + 1)]
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

    def job_known() -> bool:  # the bridge makes its jobs once the functions have loaded
        try:
            urllib.request.urlopen(f"{base}/v1/{V2}", timeout=10).close()
        except urllib.error.HTTPError:
            return False
        return True

    assert wait_for(job_known, 60), f"{V2} never appeared"
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
        assert result.functions == 4  # the duplicates /backends now shows are one function each
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
        assert wait_for(lambda: emulator.has_job(V2), 30), bridge.messages
        index.write_text(
            original
            + '\nexports.added = onSchedule("*/10 * * * *", async () => record("added", {}));\n'
        )
        assert wait_for(lambda: "added" in emulator_suite.scheduled(), 120)
        reloaded = real_monotonic()
        assert wait_for(lambda: emulator.has_job(ADDED), 5), bridge.messages
        print(f"job created {real_monotonic() - reloaded:.2f} s after the reload was seen")
        assert emulator.get_job(ADDED).schedule == "*/10 * * * *"

        # firebase-tools keeps a removed scheduled function listed (and its trigger key) until
        # the Functions emulator restarts: the bridge deletes the job once it is gone there.
        index.write_text(original)
        emulator_suite.stop()
        assert wait_for(lambda: any("waiting" in m for m in bridge.messages), 10), bridge.messages
        emulator_suite.start()
        assert "added" not in emulator_suite.scheduled()
        assert wait_for(lambda: not emulator.has_job(ADDED), 5), bridge.messages
        assert emulator.has_job(V1) and emulator.has_job(V2)
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
    logs, functions, hub, command, env = copy_project(
        PYTHON_SOURCE, directory, "venv", venv, node_modules
    )
    placeholder: subprocess.Popen[Any] = subprocess.Popen([sys.executable, "-c", ""])
    placeholder.wait()
    suite = FunctionsEmulator(
        directory, logs, functions, hub, placeholder, directory / "emulator.log", placeholder,
        [], "", command, env, frozenset({"pysched"}),
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


DOC = ROOT / "docs" / "firebase.md"
#: The marker on a block of docs/firebase.md that this module runs
#: (tests/project/test_docs_snippets.py then leaves it alone).
RUN_HERE = "<!-- run by tests/tools/firebase/test_firebase_emulator.py -->"


def doc_blocks() -> list[Fenced]:
    """The fenced blocks of docs/firebase.md, in order."""
    return fenced_blocks(DOC)


def _recipe(blocks: list[Fenced]) -> dict[str, Fenced]:
    """The blocks of "From zero" and "In tests (Python)", by role."""
    return {
        "index.js": next(b for b in blocks if b.language == "js"),
        "firebase.json": next(b for b in blocks if b.language == "json" and "emulators" in b.text),
        "start": next(b for b in blocks if b.language == "bash" and "emulators:start" in b.text),
        "notice": next(b for b in blocks if b.language == "text" and "ignored" in b.text),
        "bridge": next(b for b in blocks if b.text.startswith("scheduler-emulator firebase\n")),
        "python": next(b for b in blocks if b.language == "python" and "FirebaseBridge" in b.text),
    }


def _python_recipe(blocks: list[Fenced]) -> dict[str, Fenced]:
    """The blocks of "Python functions", by role."""
    return {
        "venv": next(b for b in blocks if b.language == "bash" and "venv" in b.text),
        "main.py": next(b for b in blocks if b.language == "python" and "scheduler_fn" in b.text),
    }


def doc_python_venv(block: str) -> Path:
    """The ``functions`` folder where docs/firebase.md's "Python functions" ``block`` (which
    writes ``requirements.txt`` and makes the ``venv``: pip, from the package index) ran as
    written, in a reader's shell: made once per text of the block under :data:`PREFIX`, as the
    npm packages are (``.ci/run`` makes it before the suite: ``python -m
    tests.tools.firebase.test_firebase_emulator``)."""
    folder = PREFIX / "doc-python" / hashlib.sha256(block.encode()).hexdigest()[:16] / "functions"
    if not (folder / "made").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        began = real_monotonic()
        made = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block], cwd=folder, env=_doc_env(folder, 4400),
            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
        print(f"the doc's venv block ran in {real_monotonic() - began:.1f} s")
        (folder / "made").write_text(block)
    return folder


def _assert_marked_blocks_are_run(blocks: list[Fenced]) -> None:
    """The blocks marked :data:`RUN_HERE` are exactly the shell and Python blocks the two doc
    tests run (the ``js``/``json``/``text`` blocks need no marker: the snippets test runs none)."""
    run = [*_recipe(blocks).values(), *_python_recipe(blocks).values()]
    runnable = {b.line for b in run if b.language in ("bash", "python")}
    marked = [b for b in blocks if b.previous == RUN_HERE]
    assert {b.line for b in marked} == runnable, marked


def _expected(text: str) -> list[re.Pattern[str]]:
    """A shell block's expected output: its ``# `` lines after the first command, ``…`` any
    text."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    return [
        re.compile(".*".join(re.escape(part) for part in line[2:].split("…")))
        for line in lines[first:]
        if line.startswith("# ")
    ]


def _stop_group(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _doc_env(home: Path, hub_port: int) -> dict[str, str]:
    """A reader's shell: this interpreter's ``bin`` on ``PATH`` (``scheduler-emulator``), a
    fresh ``HOME`` and ``TMPDIR`` (where firebase-tools leaves a ``fire_emu_*.sock`` per function
    worker), firebase-tools kept quiet, ``$FIREBASE_EMULATOR_HUB`` at the hub."""
    return {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")},
        **QUIET,
        "HOME": str(home),
        "TMPDIR": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "FIREBASE_EMULATOR_HUB": f"127.0.0.1:{hub_port}",
        "PYTHONUNBUFFERED": "1",
    }


def _start_doc_emulator(
    start: Fenced,
    node_modules: Path,
    project: Path,
    env: dict[str, str],
    localize: Callable[[str], str],
    log: Path,
) -> subprocess.Popen[Any]:
    """The doc's ``npx --yes firebase-tools emulators:start …`` block, run in ``project`` with
    the installed firebase-tools in place of ``npx --yes firebase-tools``; output to ``log``."""
    [pinned] = [package for package in PACKAGES if package.startswith("firebase-tools@")]
    npx = f"npx --yes {pinned} "  # (the doc names the version the tests install)
    assert start.text.startswith(npx), start.text
    command = shlex.quote(str(node_modules / ".bin" / "firebase")) + " " + start.text[len(npx) :]
    with log.open("wb") as sink:
        return subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", localize(command)], cwd=project, env=env,
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip


def _lists(functions: str) -> set[str]:
    """The functions the Functions emulator at ``functions`` lists (none while it is down)."""
    try:
        answer = backends(functions, timeout=2)
    except Exception:  # noqa: BLE001 - not up yet
        return set()
    return {t["name"] for b in answer.get("backends", []) for t in b.get("functionTriggers", [])}


@pytest.mark.timeout(240)
def test_the_docs_recipe_runs_as_written(node_modules: Path, tmp_path: Path) -> None:
    """docs/firebase.md's "From zero" and "In tests" recipe, run from the doc's own blocks.

    The project files are written exactly as the doc shows them (``functions/index.js``,
    ``firebase.json``); the Functions emulator is started with the doc's command, the bridge
    with the doc's ``scheduler-emulator firebase`` command (each ``# `` line after it must
    appear in its output, ``…`` standing for any text), and the doc's Python block runs as a
    script and must print what its comment says. Every block marked :data:`RUN_HERE` must be
    one of these. What differs from a reader's machine, and only that:

    - the fixed ports ``5001`` (Functions emulator) and ``4400`` (hub) are rewritten to free
      ones in every block, as tests/project/test_docs_snippets.py does for ``8095`` and
      ``8000``; the bridge's daemon gets ``--port`` with a free port (its default is ``8095``);
    - ``npx --yes firebase-tools`` is replaced by the pinned firebase-tools installed once for
      this module (``node_modules`` fixture) — the only change to a command;
    - ``npm install firebase-functions firebase-admin`` (prose, not a block) is replaced by the
      ``package.json`` it writes and a link to the same installed packages;
    - ``$FIREBASE_EMULATOR_HUB`` names the hub's free port, for the bridge's default ``--hub``.
    """
    blocks = doc_blocks()
    _assert_marked_blocks_are_run(blocks)
    recipe = _recipe(blocks)
    functions_port, hub_port, daemon_port = free_port(), free_port(), free_port()

    def localize(text: str) -> str:
        return text.replace("5001", str(functions_port)).replace("4400", str(hub_port))

    project = tmp_path / "project"
    (project / "functions").mkdir(parents=True)
    index_js = recipe["index.js"]
    (project / "functions" / "index.js").write_text(index_js.text)
    config = recipe["firebase.json"]
    (project / "firebase.json").write_text(localize(config.text))
    versions = dict(p.rsplit("@", 1) for p in PACKAGES)
    installed = ("firebase-admin", "firebase-functions")  # what `npm install …` writes
    package = {"dependencies": {name: "^" + versions[name] for name in installed}}
    (project / "functions" / "package.json").write_text(json.dumps(package, indent=2))
    (project / "functions" / "node_modules").symlink_to(node_modules)

    env = _doc_env(tmp_path, hub_port)
    emulator_log = tmp_path / "emulator.log"
    began = real_monotonic()
    emulator = _start_doc_emulator(
        recipe["start"], node_modules, project, env, localize, emulator_log
    )
    bridge: subprocess.Popen[str] | None = None
    reader: threading.Thread | None = None
    try:
        functions = f"127.0.0.1:{functions_port}"
        assert wait_for(lambda: _lists(functions) >= {"report", "cleanup"}, 120), (
            emulator_log.read_text(errors="replace")
        )
        print(f"Functions emulator up in {real_monotonic() - began:.1f} s")
        # what the doc says the Functions emulator prints for each scheduled function
        notice = recipe["notice"]
        assert wait_for(lambda: notice.text.strip() in emulator_log.read_text(), 10), (
            emulator_log.read_text(errors="replace")
        )

        # the bridge, in "another terminal"
        block = recipe["bridge"]
        text = localize(block.text).replace(
            "scheduler-emulator firebase\n",
            f"scheduler-emulator firebase --port {daemon_port}\n",
            1,
        )
        bridge = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", text], cwd=tmp_path, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        lines: list[str] = []
        reader = threading.Thread(target=_read_lines, args=(bridge.stdout, lines), daemon=True)
        reader.start()
        expected = _expected(localize(block.text))

        def printed() -> bool:
            return all(any(p.fullmatch(line) for line in lines) for p in expected)

        assert wait_for(printed, 30), (
            f"docs/firebase.md:{block.line}: expected {[p.pattern for p in expected]} in:\n"
            + "\n".join(lines)
        )
        _stop_group(bridge)

        # the "In tests (Python)" block, against the same Functions emulator
        python = recipe["python"]
        script = tmp_path / "recipe.py"
        script.write_text(localize(python.text))
        began = real_monotonic()
        result = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=150,
        )  # fmt: skip
        print(f"the doc's Python block ran in {real_monotonic() - began:.1f} s")
        assert result.returncode == 0, result.stdout + result.stderr
        for pattern in _expected(python.text):
            assert any(pattern.fullmatch(line) for line in result.stdout.splitlines()), (
                f"docs/firebase.md:{python.line}: expected {pattern.pattern!r} in:\n"
                + result.stdout
            )
    finally:
        if bridge is not None:
            _stop_group(bridge)
            if reader is not None:  # the stopped daemon's output ends, and so does the reader
                reader.join(timeout=30)
            if bridge.stdout is not None:
                bridge.stdout.close()
        _stop_group(emulator)


@pytest.mark.timeout(420)
def test_the_docs_python_functions_recipe_runs_as_written(
    node_modules: Path, tmp_path: Path
) -> None:
    """docs/firebase.md's "Python functions": the doc's block that writes ``requirements.txt``
    and makes the ``venv`` runs as written (:func:`doc_python_venv`: once per text of the
    block), its ``main.py`` block is written as shown, and ``firebase.json`` is the
    doc's with the codebase the doc gives for Python. The Functions emulator is started with the
    doc's command (``npx --yes firebase-tools`` replaced, ports rewritten, as in
    :func:`test_the_docs_recipe_runs_as_written`); the bridge makes the v2 job the doc
    describes and a week of runs reaches the function."""
    blocks = doc_blocks()
    _assert_marked_blocks_are_run(blocks)
    recipe, python = _recipe(blocks), _python_recipe(blocks)
    functions_port, hub_port = free_port(), free_port()

    def localize(text: str) -> str:
        return text.replace("5001", str(functions_port)).replace("4400", str(hub_port))

    project = tmp_path / "project"
    (project / "functions").mkdir(parents=True)
    env = _doc_env(tmp_path, hub_port)
    made = doc_python_venv(python["venv"].text)
    (project / "functions" / "venv").symlink_to(made / "venv")
    shutil.copy(made / "requirements.txt", project / "functions")
    (project / "functions" / "main.py").write_text(python["main.py"].text)
    codebase = re.search(
        r'`(\{"source": "functions", "codebase": "python"[^`]*\})`', DOC.read_text()
    )
    assert codebase is not None
    config = json.loads(localize(recipe["firebase.json"].text))
    config["functions"] = [json.loads(codebase.group(1))]
    (project / "firebase.json").write_text(json.dumps(config, indent=2))

    log = tmp_path / "emulator.log"
    began = real_monotonic()
    process = _start_doc_emulator(recipe["start"], node_modules, project, env, localize, log)
    functions = f"127.0.0.1:{functions_port}"
    job = "projects/demo-shop/locations/us-central1/jobs/firebase-schedule-report-us-central1"
    try:
        assert wait_for(lambda: "report" in _lists(functions), 120), log.read_text(errors="replace")
        print(f"Functions emulator up in {real_monotonic() - began:.1f} s")
        emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-shop")
        bridge = FirebaseBridge(emulator, functions=functions)
        try:
            assert bridge.sync().created == [job]
            made = emulator.get_job(job)
            assert (made.schedule, made.time_zone) == ("0 9 * * 1-5", "America/New_York")
            assert made.http_target is not None
            emulator.advance(timedelta(days=7))
            assert [a.code for a in emulator.attempts(job)] == ["OK"] * 5
        finally:
            bridge.close()
            emulator.close()
        assert wait_for(lambda: "report for 2026-01-09" in log.read_text(), 10), log.read_text()
    finally:
        _stop_group(process)


if __name__ == "__main__":  # .ci/run: the doc's Python venv, before the suite
    doc_python_venv(_python_recipe(doc_blocks())["venv"].text)
