"""The daemon with ``--cloud-run-jobs``: a scheduled attempt starts an execution, the executions
endpoint and view show it, Google's ``google-cloud-run`` client (REST) reads and runs the jobs,
and a SIGKILL mid-execution loses nothing."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import requests

from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.server.daemon import restart_notes
from scheduler_emulator.tools.cloud_run_file import load_cloud_run_jobs
from tests.daemon import MANUAL, Daemon, running_daemon
from tests.support import run_cli, wait_for

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

# What `gcloud run jobs describe export --format=export` prints (v1 shape), with the command the
# emulator runs in place of the image's entrypoint.
EXPORT_V1 = """
apiVersion: run.googleapis.com/v1
kind: Job
metadata:
  name: export
  namespace: '123456789012'
  labels:
    cloud.googleapis.com/location: us-central1
spec:
  template:
    spec:
      taskCount: 3
      parallelism: 2
      template:
        spec:
          maxRetries: 1
          timeoutSeconds: '600'
          containers:
          - image: us-docker.pkg.dev/my-project/jobs/export:latest
            emulatorCommand: [{python}, -c, {code}]
            env:
            - name: BUCKET
              value: exports
"""
EXPORT_CODE = "import os; print(os.environ['CLOUD_RUN_TASK_INDEX'], os.environ['BUCKET'])"


def write_jobs(folder: Path, code: str = EXPORT_CODE) -> Path:
    path = folder / "cloud-run-jobs.yaml"
    path.write_text(EXPORT_V1.format(python=json.dumps(sys.executable), code=json.dumps(code)))
    return path


def create_nightly(daemon: Daemon, uri: str) -> None:
    body = {
        "name": "projects/my-project/locations/us-central1/jobs/nightly",
        "schedule": "0 2 * * *",
        "httpTarget": {
            "uri": uri,
            "httpMethod": "POST",
            "oauthToken": {"serviceAccountEmail": "runner@my-project.iam.gserviceaccount.com"},
        },
    }
    response = daemon.post("/v1/projects/my-project/locations/us-central1/jobs", body)
    response.raise_for_status()


def run_client(daemon: Daemon) -> Any:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import run_v2

    options = ClientOptions(api_endpoint=daemon.url)
    credentials = AnonymousCredentials()
    jobs = run_v2.JobsClient(credentials=credentials, transport="rest", client_options=options)
    executions = run_v2.ExecutionsClient(
        credentials=credentials, transport="rest", client_options=options
    )
    return jobs, executions


def test_a_scheduled_run_starts_an_execution_shown_by_the_endpoint_and_the_view(
    tmp_path: Path,
) -> None:
    jobs_file = write_jobs(tmp_path)
    with running_daemon(*MANUAL, "--in-memory", "--cloud-run-jobs", str(jobs_file)) as daemon:
        create_nightly(
            daemon,
            "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/"
            "export:run",
        )
        daemon.advance(120)  # answers once the execution has ended
        [attempt] = daemon.attempts("nightly")
        page = daemon.get("/_emulator/executions", params={"job": "export"})
        code, out, err = run_cli("executions", "--port", str(daemon.host_port[1]))
        port = str(daemon.host_port[1])
        by_state = {
            state: run_cli("executions", "--port", port, "--state", state)[1]
            for state in ("failed", "SUCCEEDED")
        }
        as_json = run_cli("executions", "--port", port, "--json")[1]
    assert "Cloud Run jobs export run locally" in daemon.first_line
    assert [json.loads(line) for line in as_json.splitlines()] == page["executions"]
    assert attempt.code == "OK"
    assert by_state["failed"] == "(no executions)\n" and by_state["SUCCEEDED"] == out
    [execution] = page["executions"]
    assert execution["state"] == "SUCCEEDED" and execution["succeededCount"] == 3
    outputs = sorted(a["stdout"] for a in execution["taskAttempts"])
    assert outputs == ["0 exports\n", "1 exports\n", "2 exports\n"]
    assert code == 0, err
    header, row = out.splitlines()
    assert header.split()[:4] == ["CREATED", "EXECUTION", "STATE", "COMPLETE"]
    assert row.split()[2:6] == ["SUCCEEDED", "3", "/", "3"]
    assert row.split()[-1] == "nightly"


@pytest.mark.parametrize(
    "uri",
    [
        "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/export:run",
        "https://us-central1-run.googleapis.com/apis/run.googleapis.com/v1/namespaces/123456/"
        "jobs/export:run",  # (trial 96: v1's answer, a Knative Execution, was not followed)
    ],
    ids=["v2", "v1"],
)
def test_run_wait_waits_for_the_execution_its_attempt_started(tmp_path: Path, uri: str) -> None:
    """A trial's ``run nightly --wait`` printed ``attempt 1 ended: OK (HTTP 200)`` and exited 0
    while the execution it started failed: a ``:run`` is answered 200 whatever it does."""
    # The last task fails: it starts only once task 0 or 1 has ended, and the tasks running when
    # it fails for good finish, so the count does not depend on which process is quicker.
    code = "import os, sys; sys.exit(os.environ['CLOUD_RUN_TASK_INDEX'] == '2' and 'locked')"
    jobs_file = write_jobs(tmp_path, code)
    with running_daemon(*MANUAL, "--in-memory", "--cloud-run-jobs", str(jobs_file)) as daemon:
        create_nightly(daemon, uri)
        exit_code, out, err = run_cli(
            "run", "nightly", "--wait", "--port", str(daemon.host_port[1])
        )
        [execution] = daemon.get("/_emulator/executions")["executions"]
        runs = run_cli("runs", "--wide", "--port", str(daemon.host_port[1]))[1]
        port = ("--port", str(daemon.host_port[1]))  # (trial 208: none was listed, nor refused)
        started = run_cli("executions", "--scheduler-job", "nightly", "--wide", *port)
        typo = run_cli("executions", "--scheduler-job", "nightlly", *port)
    name = execution["name"].rsplit("/", 1)[-1]
    assert [row.split()[1] for row in started[1].splitlines()[1:]] == [name], started
    assert typo[0] == 2 and typo[2].endswith(" Did you mean 'nightly'?\n"), typo
    assert exit_code == 1, err
    assert out.splitlines()[1:] == [
        "attempt 1 ended: OK (HTTP 200) in 0.000s",
        f"it started Cloud Run execution {name}; waiting for it to end",
        f"execution {name} ended: FAILED (2 / 3 tasks; task 2: locked)",
    ]
    # trial 90: the run reads succeeded (RunJob answered), and says how its execution went
    [run] = runs.splitlines()[1:]
    assert "  succeeded  " in run
    assert run.endswith(f"  execution {name} FAILED (2 / 3 tasks; task 2: locked)")


def test_googles_run_client_lists_the_jobs_runs_one_and_reads_its_execution(
    tmp_path: Path,
) -> None:
    pytest.importorskip("google.cloud.run_v2")
    jobs_file = write_jobs(tmp_path)
    with running_daemon(*MANUAL, "--in-memory", "--cloud-run-jobs", str(jobs_file)) as daemon:
        jobs, executions = run_client(daemon)
        parent = "projects/my-project/locations/us-central1"
        listed = list(jobs.list_jobs(parent=parent))
        assert [job.name for job in listed] == [f"{parent}/jobs/export"]
        assert listed[0].template.task_count == 3
        operation = jobs.run_job(name=f"{parent}/jobs/export")
        started = operation.metadata
        finished = operation.result(timeout=60)
        read = executions.get_execution(name=started.name)
        listed_executions = list(executions.list_executions(parent=f"{parent}/jobs/export"))
        # "-" for every job's executions (the client's docstring; a trial got a 404)
        every_jobs = list(executions.list_executions(parent=f"{parent}/jobs/-"))
        latest = jobs.get_job(name=f"{parent}/jobs/export").latest_created_execution
        # an execution that has ended is not cancelled: said so, naming its state
        cancel = requests.post(f"{daemon.url}/v2/{started.name}:cancel", json={}, timeout=30)
    assert cancel.status_code == 400
    assert "has ended (SUCCEEDED)" in cancel.json()["error"]["message"]
    assert finished.name == started.name == read.name
    assert read.succeeded_count == 3 and read.task_count == 3
    assert [e.name for e in listed_executions] == [e.name for e in every_jobs] == [read.name]
    assert latest.name == read.name and latest.completion_status.name == "EXECUTION_SUCCEEDED"


def test_googles_run_client_cancels_a_running_execution(tmp_path: Path) -> None:
    """Trial 200: CancelExecution answered 501; a running execution could only be stopped
    with the daemon."""
    pytest.importorskip("google.cloud.run_v2")
    jobs_file = write_jobs(tmp_path, "import signal; signal.pause()")
    with running_daemon(*MANUAL, "--in-memory", "--cloud-run-jobs", str(jobs_file)) as daemon:
        jobs, executions = run_client(daemon)
        started = jobs.run_job(name="projects/my-project/locations/us-central1/jobs/export")
        name = started.metadata.name
        wait_for(lambda: executions.get_execution(name=name).running_count == 2, 60, "tasks")
        cancelled = executions.cancel_execution(name=name).result(timeout=60)
        latest = jobs.get_job(name=name.split("/executions/")[0]).latest_created_execution
    assert (cancelled.name, cancelled.cancelled_count, cancelled.failed_count) == (name, 3, 0)
    assert cancelled.conditions[0].execution_reason.name == "CANCELLED"
    assert latest.completion_status.name == "EXECUTION_CANCELLED"


def test_the_cancel_command_cancels_a_running_execution_by_its_id(tmp_path: Path) -> None:
    """Trial 208: only ``curl`` or Google's client could cancel one."""
    jobs_file = write_jobs(tmp_path, "import signal; signal.pause()")
    with running_daemon(*MANUAL, "--in-memory", "--cloud-run-jobs", str(jobs_file)) as daemon:
        port = ("--port", str(daemon.host_port[1]))
        parent = "projects/my-project/locations/us-central1/jobs/export"
        daemon.post(f"/v2/{parent}:run", {}).raise_for_status()

        def running() -> str | None:
            [execution] = daemon.get("/_emulator/executions")["executions"]
            return str(execution["name"]) if execution["runningCount"] == 2 else None

        name = wait_for(running, 60, "two tasks running")
        code, out, err = run_cli("cancel", name.rsplit("/", 1)[-1], *port)
        ended = wait_for(
            lambda: (e := daemon.get(f"/_emulator/executions/{name.rsplit('/', 1)[-1]}"))["state"]
            != "RUNNING" and e, 60, "the execution to end",
        )  # fmt: skip
        again = run_cli("cancel", name, *port)  # its full name too; it has ended
        unknown = run_cli("cancel", "export-nope0", *port)
    assert code == 0, err
    assert out == (
        f"cancelled {name.rsplit('/', 1)[-1]}: no further task starts; 2 running task(s) get "
        "SIGTERM, then SIGKILL (`executions` shows it CANCELLED once they end)\n"
    )
    assert ended["state"] == "CANCELLED" and ended["cancelledCount"] == 3
    assert again[0] == 2 and "has ended (CANCELLED)" in again[2], again
    assert unknown[0] == 2 and 'no execution "export-nope0"' in unknown[2], unknown


HANG = (
    "import os, pathlib, signal; "
    "pathlib.Path(os.environ['PIDS'], str(os.getpid())).touch(); signal.pause()"
)


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie no parent reaped does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


@contextlib.contextmanager
def hanging_execution(
    tmp_path: Path, signum: int
) -> Iterator[tuple[str, dict[str, Any], Daemon, list[int]]]:
    """A daemon on a data dir whose execution's two tasks hang, sent ``signum`` once both
    run and are recorded; yield its stderr, the execution the next start (text log) lists,
    that daemon, and the tasks' PIDs. Tasks left running are killed afterwards."""
    pids = tmp_path / "pids"
    pids.mkdir()
    jobs_file = write_jobs(tmp_path, HANG)
    data = str(tmp_path / "data")
    os.environ["PIDS"] = str(pids)
    try:
        with running_daemon("--data-dir", data, "--cloud-run-jobs", str(jobs_file)) as daemon:
            jobs, _ = run_client(daemon)
            jobs.run_job(name="projects/my-project/locations/us-central1/jobs/export")
            wait_for(lambda: len(list(pids.iterdir())) == 2, 60, "two tasks running")

            def recorded() -> list[bool]:  # (a pid is saved once its process started)
                [execution] = daemon.get("/_emulator/executions")["executions"]
                return ["pid" in attempt for attempt in execution["taskAttempts"]]

            wait_for(lambda: recorded() == [True, True], 30, "both task attempts recorded")
            daemon.process.send_signal(signum)
            daemon.process.wait(30)
            assert daemon.process.stderr is not None
            stderr = daemon.process.stderr.read()
        restart = ("--data-dir", data, "--cloud-run-jobs", str(jobs_file), "--log-format", "text")
        with running_daemon(*restart) as again:
            [execution] = again.get("/_emulator/executions")["executions"]
            interrupted = again.get("/_emulator/executions", params={"state": "INTERRUPTED"})
            assert [e["name"] for e in interrupted["executions"]] == [execution["name"]]
            yield stderr, execution, again, [int(pid.name) for pid in pids.iterdir()]
    finally:
        del os.environ["PIDS"]
        for pid in pids.iterdir():  # a killed daemon's tasks outlive it
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid.name), signal.SIGKILL)


def test_a_daemon_killed_mid_execution_lists_it_as_interrupted_after_restart(
    tmp_path: Path,
) -> None:
    with hanging_execution(tmp_path, signal.SIGKILL) as (_, execution, again, pids):
        restarted = again.first_line
        assert execution["state"] == "INTERRUPTED"
        assert [(a["index"], a["stopped"]) for a in execution["taskAttempts"]] == [
            (0, "interrupted"),
            (1, "interrupted"),
        ]
        execution_id = execution["name"].rsplit("/", 1)[-1]
        note = (
            ", 1 Cloud Run execution(s) running when it ended abruptly recorded as INTERRUPTED "
            f"({execution_id}; their tasks, if still running, are stopped; "
            "one started over the Admin API runs again at a POST to its jobs/J:run)"
        )
        assert note in restarted  # (trial 78: the restart said not a word of it)
        # trial 90: the killed daemon's tasks ran on past their timeout, unseen in the log
        wait_for(lambda: not any(map(running, pids)), 15, "the tasks stopped by the restart")
        line = f"execution {execution_id}  INTERRUPTED (0 / 3 tasks)"
        wait_for(lambda: any(line in out for out in again.output), 10, "the log's line")


def test_a_stop_mid_execution_sends_its_tasks_sigterm_before_sigkill(tmp_path: Path) -> None:
    """A trial's stop killed the tasks outright (``interrupted (-9)``), though the timeout path
    and Cloud Run send SIGTERM first."""
    with hanging_execution(tmp_path, signal.SIGTERM) as (stderr, execution, again, _):
        assert "Cloud Run execution" not in again.first_line  # (the stop said it)
        assert (
            "; 1 Cloud Run execution(s) running are stopped (INTERRUPTED, unless one ends first)."
            in stderr
        )
        assert execution["state"] == "INTERRUPTED"
        assert [(a["stopped"], a["exitCode"]) for a in execution["taskAttempts"]] == [
            ("interrupted", -15),
            ("interrupted", -15),
        ]


def test_a_bad_cloud_run_jobs_file_exits_2_naming_job_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            [
                {
                    "name": "export",
                    "template": {
                        "taskCount": 0,
                        "template": {"containers": [{"command": ["true"]}]},
                    },
                }
            ]
        )
    )
    code, _, err = run_cli("start", "--in-memory", "--port", "0", "--cloud-run-jobs", str(bad))
    assert code == 2
    assert str(bad) in err and "jobs/export" in err
    assert "template.taskCount" in err and "got 0" in err


def test_a_program_that_is_not_there_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial's typo in ``emulatorCommand`` loaded silently; each run then failed four times."""
    path = tmp_path / "jobs.yaml"
    path.write_text(
        "- name: here\n  template: {template: {containers: [{command: [python3, -V]}]}}\n"
        "- name: typo\n  template: {template: {containers: [{command: [./exprot.sh]}]}}\n"
        "- name: unset\n  template: {template: {containers: [{command: [./batch.py]}]}}\n"
        "- name: bare\n  template: {template: {containers: [{command: [batch.py]}]}}\n"
    )
    (tmp_path / "batch.py").write_text("print('a batch')\n")  # (trial 139: no x bit)
    monkeypatch.chdir(tmp_path)
    [here, typo, _, _] = load_cloud_run_jobs([path], project="p", location="us-central1")
    assert typo["name"] == "typo"
    assert capsys.readouterr().err == (
        f"warning: {path}: Cloud Run job typo runs './exprot.sh', which is neither a program on "
        "PATH nor a file here: its tasks fail 'not started' until it is.\n"
        f"warning: {path}: Cloud Run job unset runs './batch.py', which is a file here that is "
        "not executable (chmod +x): its tasks fail 'not started' until it is.\n"
        f"warning: {path}: Cloud Run job bare runs 'batch.py', which is not on PATH (a file "
        "here is run as ./batch.py): its tasks fail 'not started' until it is.\n"
    )


def test_a_secret_variable_the_environment_lacks_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 208: a task failed at run time on a secret's variable the daemon had not."""
    path = tmp_path / "jobs.yaml"
    secret = "valueSource: {secretKeyRef: {secret: db, version: latest}}"
    env = f"[{{name: DB_PASS, {secret}}}, {{name: API_KEY, {secret}}}]"
    path.write_text(
        f"name: etl\ntemplate: {{template: {{containers: [{{command: [python3], env: {env}}}]}}}}\n"
    )
    monkeypatch.setenv("API_KEY", "k")
    monkeypatch.delenv("DB_PASS", raising=False)
    load_cloud_run_jobs([path], project="p", location="us-central1")
    assert capsys.readouterr().err == (
        f"warning: {path}: Cloud Run job etl takes DB_PASS from a secret, which the emulator "
        "does not read, and this environment has no such variable: its tasks get none (start "
        "it as DB_PASS=… scheduler-emulator start …).\n"
    )
    monkeypatch.setenv("DB_PASS", "s3cret")
    load_cloud_run_jobs([path], project="p", location="us-central1")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "[]\n"])
def test_an_empty_cloud_run_file_says_it_holds_no_job(tmp_path: Path, text: str) -> None:
    """A trial's empty file read ``a Cloud Run job: name must be … got nothing``."""
    path = tmp_path / "jobs.yaml"
    path.write_text(text)
    with pytest.raises(ConfigurationError) as caught:
        load_cloud_run_jobs([path], project="p", location="us-central1")
    assert str(caught.value) == f"{path}: the Cloud Run jobs file holds no job."


def test_every_problem_of_the_cloud_run_files_is_named_at_once(tmp_path: Path) -> None:
    """A trial fixed a file one start at a time: only its first problem was named."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(
        "- name: export\n  template: {taskCount: 0, template: {containers: [{command: [x]}]}}\n"
        "- name: ok\n  template: {template: {containers: [{command: [x]}]}}\n"
        "- name: Bad_Id\n  template: {template: {containers: [{command: [x]}]}}\n"
    )
    second.write_text("name: ok\ntemplate: {template: {containers: [{command: [x]}]}}\n")
    with pytest.raises(ConfigurationError) as caught:
        load_cloud_run_jobs([first, second], project="p", location="us-central1")
    lines = str(caught.value).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"{first}: ") and "template.taskCount" in lines[0]
    assert lines[1].startswith(f"{first}: ") and '"Bad_Id"' in lines[1]
    assert lines[2] == (
        f"{second}: Cloud Run job projects/p/locations/us-central1/jobs/ok is defined twice "
        f"(first in {first})."
    )


def test_a_definition_without_a_name_is_named_by_its_entry(tmp_path: Path) -> None:
    """Trial 96: "a Cloud Run job: name must be …" did not say which entry of the list."""
    path = tmp_path / "jobs.yaml"
    path.write_text(
        "- name: ok\n  template: {template: {containers: [{command: [x]}]}}\n"
        "- template: {template: {containers: [{command: [x]}]}}\n"
    )
    with pytest.raises(ConfigurationError) as caught:
        load_cloud_run_jobs([path], project="p", location="us-central1")
    assert str(caught.value) == (
        f"{path}: the Cloud Run job of entry 2: name must be projects/P/locations/L/jobs/J or J; "
        "got nothing."
    )


@pytest.mark.parametrize(
    ("definition", "fields"),
    [
        pytest.param(  # trial 78: a definition's second problem showed only at the next start
            "{taskCount: three, parallelism: -1, template: {timeout: 10min, containers: "
            "[{command: [x]}]}}",
            ["template.taskCount", "template.parallelism", "template.template.timeout"],
            id="scalars",
        ),
        pytest.param(  # trial 81: a container without its command hid the others
            "{taskCount: 0, template: {maxRetries: 20, containers: [{image: x}]}}",
            ["template.template.containers[0].emulatorCommand", "template.taskCount",
             "template.template.maxRetries"],
            id="no-command",
        ),
        pytest.param(  # trial 96: a command as one string was also said to be missing
            "{template: {maxRetries: 20, containers: [{command: python3 x.py}]}}",
            ["template.template.containers[0].command", "template.template.maxRetries"],
            id="command-not-a-list",
        ),
        pytest.param(  # trial 204: a misspelt field in snake_case hid the next
            "{task_count: 3, template: {max_retries: 2, containers: [{command: [x], "
            "env: [{name: D, valeu: x}]}]}}",
            ["template.task_count", "template.template.max_retries",
             "template.template.containers[0].env[0].valeu"],
            id="snake-case",
        ),
    ],
)  # fmt: skip
def test_every_problem_of_a_cloud_run_definition_is_named(
    tmp_path: Path, definition: str, fields: list[str]
) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(f"name: export\ntemplate: {definition}\n")
    with pytest.raises(ConfigurationError) as caught:
        load_cloud_run_jobs([path], project="p", location="us-central1")
    named = [line.split(": ")[2].split()[0] for line in str(caught.value).splitlines()]
    assert named == fields


@pytest.mark.parametrize(
    ("started_by", "said"),
    [
        (
            ["projects/p/locations/l/jobs/nightly"] * 2,
            "`scheduler-emulator run nightly` runs it again",
        ),
        (
            ["projects/p/locations/l/jobs/nightly", "projects/p/locations/l/jobs/hourly"],
            "`scheduler-emulator run JOB` runs one again (JOB: hourly, nightly)",
        ),
        (
            ["projects/p/locations/l/jobs/nightly", ""],
            "`scheduler-emulator run nightly` runs it again; one started over the Admin API runs "
            "again at a POST to its jobs/J:run",
        ),
    ],
    ids=["one scheduler job", "two", "one and the API"],
)
def test_the_restart_line_names_a_command_that_runs_an_interrupted_execution_again(
    started_by: list[str], said: str
) -> None:
    """Trial 96 copied ``scheduler-emulator run JOB long-nightly`` from the startup line: `run`
    takes one job, and ``JOB`` stood for an execution started over the Admin API."""
    executions = [SimpleNamespace(execution_id=f"e-{i}", scheduler_job=job)
                  for i, job in enumerate(started_by)]  # fmt: skip
    store = SimpleNamespace(interrupted_at_open=executions)
    emulator = SimpleNamespace(
        interrupted_at_start=0,
        skipped_while_down={},
        store=SimpleNamespace(dropped_at_open=(0, 0)),
        cloud_run=SimpleNamespace(store=store),
    )
    note = restart_notes(cast(Any, emulator))
    assert note.endswith(f"are stopped; {said})"), note
