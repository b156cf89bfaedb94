"""A scheduler job calling the Cloud Run Admin API's jobs/J:run starts a local execution."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import signal
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.domain.cloud_run import parse_cloud_run_job
from scheduler_emulator.runtime import AttemptLog
from scheduler_emulator.runtime.cloud_run.admin_api import v2_execution, v2_job
from scheduler_emulator.runtime.cloud_run.executions import CloudRun, ExecutionStore
from scheduler_emulator.runtime.delivery.transports import DeliveryRequest, TransportResult
from scheduler_emulator.tools import views
from scheduler_emulator.wire import format_timestamp
from tests.support import wait_for

pytestmark = pytest.mark.timeout(120)

V2_URI = "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/export:run"
V1_URI = (
    "https://us-central1-run.googleapis.com/apis/run.googleapis.com/v1/namespaces/my-project/"
    "jobs/export:run"
)
OAUTH = {"oauthToken": {"serviceAccountEmail": "runner@my-project.iam.gserviceaccount.com"}}

# A task: records its environment and its start and end instants, then behaves as MODE says.
TASK = """
import json, os, signal, sys, threading, time
index, attempt = os.environ["CLOUD_RUN_TASK_INDEX"], os.environ["CLOUD_RUN_TASK_ATTEMPT"]
out = os.path.join(sys.argv[1], f"{index}-{attempt}.json")
start = time.time()
mode = os.environ.get("MODE", "ok")
if mode == "slow":  # a task that works for 0.3 s, so that tasks overlap
    threading.Event().wait(0.3)
if mode == "stubborn":  # SIGTERM ignored: only SIGKILL stops it
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    mode = "hang"
if mode == "hang":  # a task that never ends by itself: only a signal stops it
    print("hanging", flush=True)
    signal.pause()
end = time.time()
record = {"env": dict(os.environ), "start": start, "end": end, "argv": sys.argv[2:]}
json.dump(record, open(out, "w"))
if mode == "fail-first" and attempt == "0":
    sys.exit(3)
if mode == "fail":
    print("no luck", file=sys.stderr)
    sys.exit(4)
"""


class Tasks:
    """The records the tasks of a test wrote."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def all(self) -> dict[str, dict[str, Any]]:
        return {p.stem: json.loads(p.read_text()) for p in sorted(self.folder.glob("*.json"))}


def cloud_run_job(folder: Path, *, mode: str = "ok", **template: Any) -> dict[str, Any]:
    script = folder / "task.py"
    script.write_text(TASK)
    task = {k: template.pop(k) for k in ("maxRetries", "timeout") if k in template}
    return {
        "name": "projects/my-project/locations/us-central1/jobs/export",
        "template": {
            **template,
            "template": {
                **task,
                "containers": [
                    {
                        "image": "us-docker.pkg.dev/my-project/jobs/export",
                        "command": [sys.executable, str(script)],
                        "args": [str(folder)],
                        "env": [{"name": "MODE", "value": mode}, {"name": "BUCKET", "value": "b"}],
                    }
                ],
            },
        },
    }


def emulator_for(definition: dict[str, Any], **options: Any) -> Emulator:
    return Emulator(
        ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)),
        cloud_run_jobs=(definition,),
        **options,
    )


def nightly(uri: str = V2_URI, body: dict[str, Any] | None = None, **target: Any) -> dict[str, Any]:
    http: dict[str, Any] = {"uri": uri, "httpMethod": "POST", **target}
    if body is not None:
        http["body"] = base64.b64encode(json.dumps(body).encode()).decode()
    return {"name": "nightly", "schedule": "0 2 * * *", "httpTarget": http}


@pytest.fixture
def tasks(tmp_path: Path) -> Tasks:
    return Tasks(tmp_path)


class TestScheduledExecution:
    def test_three_tasks_two_at_once_with_the_container_contract(self, tasks: Tasks) -> None:
        job = cloud_run_job(tasks.folder, mode="slow", taskCount=3, parallelism=2, maxRetries=1)
        with emulator_for(job) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [attempt] = emulator.attempts("nightly")
            [execution] = emulator.cloud_run.store.list()
        records = tasks.all()
        assert sorted(records) == ["0-0", "1-0", "2-0"]
        envs = [r["env"] for r in records.values()]
        assert {e["CLOUD_RUN_TASK_INDEX"] for e in envs} == {"0", "1", "2"}
        assert {e["CLOUD_RUN_EXECUTION"] for e in envs} == {execution.execution_id}
        assert all(
            e["CLOUD_RUN_JOB"] == "export" and e["CLOUD_RUN_TASK_COUNT"] == "3" for e in envs
        )
        assert all(e["BUCKET"] == "b" for e in envs)
        scheduler_values = {"nightly", "projects/my-project/locations/us-central1/jobs/nightly"}
        for env in envs:
            assert not any("cloudscheduler" in k.lower() for k in env)
            assert not scheduler_values & set(env.values())
        spans = [(r["start"], r["end"]) for r in records.values()]
        most_at_once = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
        assert most_at_once == 2
        assert attempt.code == "OK"
        operation = json.loads(attempt.response_excerpt)
        assert operation["metadata"]["@type"] == "type.googleapis.com/google.cloud.run.v2.Execution"
        assert operation["metadata"]["name"] == execution.name
        assert execution.state == "SUCCEEDED" and execution.counts()["succeeded"] == 3
        assert execution.scheduler_job == "nightly"

    def test_the_operation_a_scheduled_run_answers_is_found_on_the_daemons_port(
        self, tasks: Tasks
    ) -> None:
        """Trial 139: the scheduler's Admin API and the port's kept operations apart, so the
        operation a scheduled run answered with was not found (404) on the port."""
        from werkzeug.test import Client

        from scheduler_emulator.server.server import create_app

        with emulator_for(cloud_run_job(tasks.folder)) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [attempt] = emulator.attempts("nightly")
            emulator.cloud_run.settle()
            operation = json.loads(attempt.response_excerpt)["name"]
            answer = Client(create_app(emulator)).get(f"/v2/{operation}")
        assert answer.status_code == 200, answer.text
        assert answer.json["done"] and answer.json["response"]["succeededCount"] == 1

    def test_the_operation_of_a_run_is_found_after_a_restart(self, tasks: Tasks) -> None:
        """Trial 143: a client polling an operation across a restart got 404."""
        from werkzeug.test import Client

        from scheduler_emulator.server.server import create_app

        data = tasks.folder / "data"
        with emulator_for(cloud_run_job(tasks.folder), data_dir=data) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [attempt] = emulator.attempts("nightly")
            emulator.cloud_run.settle()
        operation = json.loads(attempt.response_excerpt)["name"]
        with emulator_for(cloud_run_job(tasks.folder), data_dir=data) as emulator:
            answer = Client(create_app(emulator)).get(f"/v2/{operation}")
            missing = Client(create_app(emulator)).get(f"/v2/{operation[:-4]}0000")
        assert answer.status_code == 200, answer.text
        assert answer.json["name"] == operation and answer.json["done"]
        assert missing.status_code == 404

    def test_the_v1_uri_answers_the_v1_execution(self, tasks: Tasks) -> None:
        with emulator_for(cloud_run_job(tasks.folder)) as emulator:
            emulator.create_job(nightly(V1_URI, **OAUTH))
            emulator.advance(timedelta(minutes=2))
            [attempt] = emulator.attempts("nightly")
            [execution] = emulator.cloud_run.store.list()
        answer = json.loads(attempt.response_excerpt)
        assert attempt.code == "OK"
        assert answer["kind"] == "Execution"
        assert answer["metadata"]["name"] == execution.execution_id
        assert execution.state == "SUCCEEDED"

    def test_a_task_failing_once_succeeds_on_its_second_attempt(self, tasks: Tasks) -> None:
        with emulator_for(cloud_run_job(tasks.folder, mode="fail-first", maxRetries=1)) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [execution] = emulator.cloud_run.store.list()
        assert [r["env"]["CLOUD_RUN_TASK_ATTEMPT"] for r in tasks.all().values()] == ["0", "1"]
        assert [a.exit_code for a in execution.attempts] == [3, 0]
        assert execution.state == "SUCCEEDED"

    def test_a_task_always_failing_fails_the_execution_not_the_scheduler_attempt(
        self, tasks: Tasks
    ) -> None:
        with emulator_for(cloud_run_job(tasks.folder, mode="fail", maxRetries=2)) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [attempt] = emulator.attempts("nightly")
            [execution] = emulator.cloud_run.store.list()
        assert attempt.code == "OK"
        assert execution.state == "FAILED"
        assert [a.exit_code for a in execution.attempts] == [4, 4, 4]
        assert execution.attempts[-1].stderr == "no luck\n"
        [condition] = v2_execution(execution)["conditions"]  # (trial 151: no message, no reason)
        assert condition == {
            "type": "Completed",
            "state": "CONDITION_FAILED",
            "lastTransitionTime": format_timestamp(execution.completion_time),
            "message": f"Task {execution.execution_id}-task0 failed with message: The container "
            "exited with an error.",
            "executionReason": "NON_ZERO_EXIT_CODE",
        }

    def test_a_task_never_started_after_a_failure_is_counted_cancelled(self, tasks: Tasks) -> None:
        """A trial: with parallelism 1, task 1 never started after task 0 failed, and appeared
        nowhere (Cloud Run counts it in ``cancelledCount``)."""
        job = cloud_run_job(tasks.folder, mode="fail", maxRetries=0, taskCount=2, parallelism=1)
        with emulator_for(job) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [execution] = emulator.cloud_run.store.list()
        assert execution.state == "FAILED"
        assert [a.index for a in execution.attempts] == [0]
        record = execution.to_json()
        assert (record["failedCount"], record["cancelledCount"]) == (1, 1)
        assert views.execution_rows([record])[0][-1] == (
            "task 0: no luck; 1 task(s) never started (cancelled)"
        )

    @pytest.mark.parametrize("log_format", ["text", "json"])
    def test_the_text_log_has_a_line_for_each_execution_end(
        self, tasks: Tasks, log_format: str
    ) -> None:
        """Trial 78: the text execution log said the scheduler attempt succeeded and nothing of
        the execution it started failing. The JSON log keeps Cloud Scheduler's entries only."""
        log = io.StringIO()
        job = cloud_run_job(tasks.folder, mode="fail", maxRetries=0, taskCount=2, parallelism=1)
        with emulator_for(job, attempt_log=AttemptLog(log, log_format)) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [execution] = emulator.cloud_run.store.list()
        lines = log.getvalue().splitlines()
        if log_format == "json":
            assert [json.loads(line)["jsonPayload"]["jobName"][-7:] for line in lines] == [
                "nightly",
                "nightly",
            ]
            return
        attempt, ended = lines
        assert attempt.split()[:5] == ["2026-09-24T02:00:00Z", "nightly", "attempt", "1", "OK"]
        assert re.fullmatch(
            rf"2026-09-24T02:00:00Z  export   execution {execution.execution_id}  "
            r"FAILED \(0 / 2 tasks\)  +\d+ ms  scheduler job nightly  "
            r"reason: task 0: no luck; 1 task\(s\) never started \(cancelled\)",
            ended,
        ), ended

    def test_a_task_past_its_timeout_is_stopped(self, tasks: Tasks) -> None:
        job = cloud_run_job(tasks.folder, mode="hang", maxRetries=0, timeout="1s")
        with emulator_for(job) as emulator:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))
            [execution] = emulator.cloud_run.store.list()
        [attempt] = execution.attempts
        assert attempt.stopped == "timeout" and attempt.exit_code == -15
        assert execution.state == "FAILED"
        [condition] = v2_execution(execution)["conditions"]
        assert condition["message"].endswith(
            "failed with message: The configured timeout was reached."
        )

    def test_a_task_timeout_runs_on_real_time_while_a_test_clock_is_frozen(
        self, tasks: Tasks
    ) -> None:
        """A test that freezes time and moves it a day while a task works (the plugin's
        ``advance``) does not time the task out: its timeout is real seconds."""
        job = cloud_run_job(tasks.folder, mode="slow", maxRetries=0, timeout="60s")
        with emulator_for(job) as emulator, freeze_time("2026-09-24T02:00:00Z") as frozen:
            emulator.create_job(nightly(**OAUTH))
            emulator.advance(timedelta(minutes=2))  # the execution starts; its task runs 0.3 s
            frozen.tick(timedelta(days=1))
            emulator.cloud_run.settle()
            [execution] = emulator.cloud_run.store.list()
        [attempt] = execution.attempts
        assert (attempt.stopped, attempt.exit_code, execution.state) == ("", 0, "SUCCEEDED")

    def test_overrides_in_the_jobs_body_reach_the_tasks(self, tasks: Tasks) -> None:
        body = {
            "overrides": {
                "containerOverrides": [
                    {
                        "args": [str(tasks.folder), "extra"],
                        "env": [{"name": "BUCKET", "value": "o"}],
                    }
                ],
                "taskCount": 2,
            }
        }
        with emulator_for(cloud_run_job(tasks.folder)) as emulator:
            emulator.create_job(nightly(body=body, **OAUTH))
            emulator.advance(timedelta(minutes=2))
        records = tasks.all()
        assert sorted(records) == ["0-0", "1-0"]
        assert all(r["argv"] == ["extra"] and r["env"]["BUCKET"] == "o" for r in records.values())
        assert {r["env"]["CLOUD_RUN_TASK_COUNT"] for r in records.values()} == {"2"}


class Recording:
    """A transport that records what would go on the wire."""

    def __init__(self) -> None:
        self.sent: list[DeliveryRequest] = []

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        self.sent.append(request)
        return TransportResult(status=200)

    def close(self) -> None:
        pass


class TestRefused:
    @pytest.mark.parametrize(
        ("target", "reason"),
        [
            pytest.param(
                {"oidcToken": {"serviceAccountEmail": "a@my-project.iam.gserviceaccount.com"}},
                "ACCESS_TOKEN_TYPE_UNSUPPORTED",
                id="oidc",
            ),
            pytest.param({}, "CREDENTIALS_MISSING", id="no-token"),
        ],
    )
    def test_without_an_oauth_token_the_admin_api_answers_401(
        self, tasks: Tasks, target: dict[str, Any], reason: str
    ) -> None:
        wire = Recording()
        with emulator_for(cloud_run_job(tasks.folder), transport=wire) as emulator:
            emulator.create_job(nightly(**target))
            emulator.advance(timedelta(minutes=2))
            attempts = emulator.attempts("nightly")
            assert emulator.cloud_run.store.list() == []
        assert attempts[0].response_status == 401 and attempts[0].code == "UNAUTHENTICATED"
        error = json.loads(attempts[0].response_excerpt)["error"]
        assert error["status"] == "UNAUTHENTICATED"
        assert error["details"][0]["reason"] == reason
        assert wire.sent == [] and tasks.all() == {}

    def test_an_undefined_cloud_run_job_is_404_naming_the_flag(self, tasks: Tasks) -> None:
        with emulator_for(cloud_run_job(tasks.folder)) as emulator:
            emulator.create_job(nightly(V2_URI.replace("export", "import"), **OAUTH))
            emulator.advance(timedelta(minutes=2))
            attempt = emulator.attempts("nightly")[0]
        assert attempt.response_status == 404
        assert "--cloud-run-jobs" in json.loads(attempt.response_excerpt)["error"]["message"]
        # the jobs defined, before the reason is cut (a trial's lost them at 160 characters)
        assert attempt.reason.startswith(
            "NOT_FOUND: Resource 'import' of kind 'JOB' in region 'us-central1' in project "
            "'my-project' does not exist (defined: export)."
        )

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"taskCount": 0}, "overrides.taskCount"),
            ({"containerOverrides": [{"name": "worker"}]}, "containerOverrides[0].name"),
        ],
    )
    def test_a_bad_run_request_is_400(
        self, tasks: Tasks, overrides: dict[str, Any], field: str
    ) -> None:
        definition = cloud_run_job(tasks.folder)
        definition["template"]["template"]["containers"][0]["name"] = "export"
        with emulator_for(definition) as emulator:
            emulator.create_job(nightly(body={"overrides": overrides}, **OAUTH))
            emulator.advance(timedelta(minutes=2))
            attempt = emulator.attempts("nightly")[0]
            assert emulator.cloud_run.store.list() == []
        assert attempt.response_status == 400
        assert field in attempt.response_excerpt

    @pytest.mark.parametrize("uri", [V2_URI, V1_URI], ids=["v2", "v1"])
    def test_validate_only_checks_the_request_and_runs_nothing(
        self, tasks: Tasks, uri: str
    ) -> None:
        """A trial's ``validateOnly: true`` started a real execution."""
        bad = {"validateOnly": True, "overrides": {"taskCount": 0}}
        with emulator_for(cloud_run_job(tasks.folder)) as emulator:
            emulator.create_job(nightly(uri, body={"validateOnly": True}, **OAUTH))
            emulator.create_job({**nightly(uri, body=bad, **OAUTH), "name": "bad"})
            emulator.advance(timedelta(minutes=2))
            ok, refused = emulator.attempts("nightly")[0], emulator.attempts("bad")[0]
            assert emulator.cloud_run.store.list() == []
        assert ok.code == "OK" and tasks.all() == {}
        if uri == V2_URI:
            assert json.loads(ok.response_excerpt)["done"] is True
        assert refused.response_status == 400 and "overrides.taskCount" in refused.response_excerpt

    def test_another_google_api_fails_with_a_reason_and_nothing_is_sent(self, tasks: Tasks) -> None:
        wire = Recording()
        uri = "https://workflowexecutions.googleapis.com/v1/projects/p/locations/l/workflows/w/executions"
        with emulator_for(cloud_run_job(tasks.folder), transport=wire) as emulator:
            emulator.create_job(nightly(uri, **OAUTH))
            emulator.advance(timedelta(minutes=2))
            attempt = emulator.attempts("nightly")[0]
        assert attempt.code != "OK" and attempt.response_status is None
        assert "workflowexecutions.googleapis.com is not routed" in attempt.debug_info
        assert wire.sent == []

    def test_other_urls_still_go_to_the_emulators_transport(self, tasks: Tasks) -> None:
        wire = Recording()
        with emulator_for(cloud_run_job(tasks.folder), transport=wire) as emulator:
            emulator.create_job(nightly("http://127.0.0.1:9/x"))
            emulator.advance(timedelta(minutes=2))
        assert [r.url for r in wire.sent] == ["http://127.0.0.1:9/x"]


@pytest.mark.parametrize("pid", ["saved", "not saved"])
def test_an_execution_left_running_is_recorded_as_interrupted_when_reopened(
    tmp_path: Path, pid: str
) -> None:
    """As if the daemon were killed: its row says RUNNING and its task runs on. Reopened, the
    execution is INTERRUPTED, the task stopped and (trial 90) its output so far kept. Killed
    before it saved the task's process ID, the reopened one finds the process by the contract
    variables in its environment."""
    job = cloud_run_job(tmp_path, mode="hang", maxRetries=0)  # (no retry's files in the folder)
    with emulator_for(job, data_dir=tmp_path / "data") as e:
        execution = e.cloud_run.run(e.cloud_run.jobs()[0])
        out = e.cloud_run.store.outputs / f"{execution.execution_id}-0-0.out"
        wait_for(lambda: out.is_file() and out.read_text() == "hanging\n", 30, "the task's output")
        assert e.cloud_run.store.list()[0].attempts[0].pid == execution.attempts[0].pid
        if pid == "not saved":
            unsaved = [replace(a, pid=None) for a in execution.attempts]
            e.cloud_run.store.save(replace(execution, attempts=unsaved))
        reopened = CloudRun(e.clock, ExecutionStore(e.store.path, retain=None), [])
        [found] = reopened.store.interrupted_at_open
        assert found.name == execution.name and found.state == "INTERRUPTED"
        assert [(a.index, a.stopped, a.stdout) for a in found.attempts] == [
            (0, "interrupted", "hanging\n")
        ]
        wait_for(lambda: execution.attempts[0].exit_code == -signal.SIGTERM, 10, "SIGTERM")
        assert list(reopened.store.outputs.iterdir()) == []  # (the tails are in the record)
        reopened.store.close()


@pytest.mark.parametrize("max_retries", [0, 2])
def test_a_stop_mid_execution_records_it_interrupted_whatever_its_retries(
    tmp_path: Path, max_retries: int
) -> None:
    """Trial 119: stopped on its last try (``maxRetries: 0``), the task's SIGTERM read as its
    failure, so the execution was recorded FAILED, not INTERRUPTED."""
    job = cloud_run_job(tmp_path, mode="hang", maxRetries=max_retries)
    with emulator_for(job, data_dir=tmp_path / "data") as e:
        execution = e.cloud_run.run(e.cloud_run.jobs()[0])
        out = e.cloud_run.store.outputs / f"{execution.execution_id}-0-0.out"
        wait_for(lambda: out.is_file() and out.read_text() == "hanging\n", 30, "the task's output")
        store = ExecutionStore(e.store.path, retain=None)
        e.cloud_run.close()
        [stopped] = store.list()
        assert (stopped.state, [a.stopped for a in stopped.attempts]) == (
            "INTERRUPTED",
            ["interrupted"],
        )
        store.close()


def test_the_admin_api_shows_the_containers_name(tmp_path: Path) -> None:
    """Trial 119: a run's container override must name the job's container, but GetJob left the
    name out, so a client building the override from it had none."""
    definition = cloud_run_job(tmp_path)
    definition["template"]["template"]["containers"][0]["name"] = "batch"
    job = parse_cloud_run_job(definition, project="my-project", location="us-central1")
    [container] = v2_job(job, [])["template"]["template"]["containers"]
    assert container["name"] == "batch"
    del definition["template"]["template"]["containers"][0]["name"]
    unnamed = parse_cloud_run_job(definition, project="my-project", location="us-central1")
    assert "name" not in v2_job(unnamed, [])["template"]["template"]["containers"][0]


def test_a_task_whose_command_cannot_be_started_fails_and_the_execution_ends(
    tmp_path: Path,
) -> None:
    """Trial 127: a NUL in an argument raised ValueError, not OSError, in the task's thread:
    the execution stayed RUNNING for ever and held up the daemon's stop."""
    definition = cloud_run_job(tmp_path, maxRetries=0)
    definition["template"]["template"]["containers"][0]["args"] = ["a\x00b"]
    with emulator_for(definition) as e:
        execution = e.cloud_run.run(e.cloud_run.jobs()[0])
        wait_for(lambda: execution.state != "RUNNING", 30, "the execution's end")
        assert execution.state == "FAILED"
        assert [(a.stopped, "embedded null byte" in a.stderr) for a in execution.attempts] == [
            ("not started", True)
        ]


def test_a_forced_run_is_not_held_behind_another_runs_execution(tmp_path: Path) -> None:
    """Trial 200: on a manual clock, the thread sending RunJob's attempts waited for the
    execution the first one started, so a second RunJob's attempt waited minutes in flight;
    and a stop counted it as neither in flight nor queued. The clock's next move still waits
    for the execution."""
    with emulator_for(cloud_run_job(tmp_path, mode="hang", maxRetries=0)) as emulator:
        emulator.create_job(nightly(**OAUTH))
        emulator.create_job({**nightly(**OAUTH), "name": "again"})
        emulator.run_job("nightly", wait=False)
        running = lambda: emulator.cloud_run.store.list(state="RUNNING")  # noqa: E731
        wait_for(lambda: len(running()) == 1, 30, "the first execution to run")
        emulator.run_job("again", wait=False)
        wait_for(lambda: len(running()) == 2, 30, "the second run's execution, not held back")
        assert [a.code for a in emulator.attempts()] == ["OK", "OK"]
        mover = threading.Thread(target=emulator.advance, args=(30,), daemon=True)
        mover.start()
        mover.join(0.5)
        assert mover.is_alive()  # waits for both executions
        for execution in running():
            os.kill(execution.attempts[0].pid, signal.SIGKILL)
        mover.join(30)
        assert not mover.is_alive()


def test_a_task_cancelled_before_its_timeout_stays_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 216: a task that ignored the cancel's SIGTERM reached its timeout in the grace
    before SIGKILL, and the execution read ``0:timeout`` though the cancel came first."""
    from scheduler_emulator.runtime.cloud_run import executions

    monkeypatch.setattr(executions, "STOP_GRACE_SECONDS", 5.0)  # the timeout (3 s) falls in it
    job = cloud_run_job(tmp_path, mode="stubborn", maxRetries=0, timeout="3s")
    with emulator_for(job, data_dir=tmp_path / "data") as emulator:
        execution = emulator.cloud_run.run(emulator.cloud_run.jobs()[0])
        out = emulator.cloud_run.store.outputs / f"{execution.execution_id}-0-0.out"
        wait_for(lambda: out.is_file() and out.read_text() == "hanging\n", 30, "SIGTERM ignored")
        emulator.cloud_run.cancel(execution.name)
        emulator.cloud_run.settle()
        [attempt] = emulator.cloud_run.store.get(execution.name).attempts
    assert (attempt.stopped, attempt.exit_code) == ("cancelled", -signal.SIGKILL)


@pytest.mark.parametrize("max_retries", [3, 0])
def test_a_cancelled_execution_stops_its_tasks_and_starts_no_more(
    tmp_path: Path, max_retries: int
) -> None:
    """Trial 200: CancelExecution answered 501 and only a stop ended a running execution. Of
    two tasks one at a time, the running one gets SIGTERM and the other never starts (trial
    203: stopped on its last try, with no retry left, the execution read FAILED)."""
    from werkzeug.test import Client

    from scheduler_emulator.server.server import create_app

    job = cloud_run_job(tmp_path, mode="hang", maxRetries=max_retries, taskCount=2, parallelism=1)
    with emulator_for(job) as emulator:
        execution = emulator.cloud_run.run(emulator.cloud_run.jobs()[0])

        def started() -> int | None:  # (its first task attempt may not be recorded yet: CI)
            saved = emulator.cloud_run.store.get(execution.name)
            return saved.attempts[0].pid if saved and saved.attempts else None

        wait_for(started, 30, "a pid")
        api = Client(create_app(emulator))
        answer = api.post(f"/v2/{execution.name}:cancel", json={})
        assert answer.status_code == 200, answer.text
        assert answer.json["metadata"]["name"] == execution.name
        operation = answer.json["name"]
        emulator.cloud_run.settle()
        done = api.get(f"/v2/{operation}").json
        read = api.get(f"/v2/{execution.name}").json
        again = api.post(f"/v2/{execution.name}:cancel", json={})
        [attempt] = emulator.cloud_run.store.get(execution.name).attempts  # no retry, no task 1
        state = emulator.cloud_run.store.get(execution.name).state
    assert done["done"] is True and done["response"]["name"] == execution.name
    assert (read["cancelledCount"], read["failedCount"], read["succeededCount"]) == (2, 0, 0)
    [completed] = read["conditions"]
    assert (completed["executionReason"], completed["message"]) == (
        "CANCELLED",
        "The execution was cancelled.",
    )
    assert (attempt.stopped, attempt.exit_code, state) == (
        "cancelled",
        -signal.SIGTERM,
        "CANCELLED",
    )
    assert again.status_code == 400 and "has ended (CANCELLED)" in again.json["error"]["message"]
