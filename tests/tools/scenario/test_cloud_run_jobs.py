"""A scenario's ``cloud_run_jobs``: the Cloud Run jobs its ``jobs/J:run`` URIs run locally."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.tools.scenario import load_scenario, run_scenario

pytestmark = pytest.mark.timeout(120)

SCENARIO = """
start: "2026-09-24T01:00:00Z"
cloud_run_jobs: cloud-run-jobs.json
jobs:
  - name: nightly
    schedule: "0 2 * * *"
    httpTarget:
      uri: https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/export:run
      httpMethod: POST
      oauthToken: {serviceAccountEmail: runner@my-project.iam.gserviceaccount.com}
steps:
  - advance: 2h
expect:
  nightly: {codes: {OK: 1}}
"""


#: A Cloud Run job whose one task fails at once, saying why on stderr.
FAILING = {
    "name": "export",
    "template": {"template": {"maxRetries": 0, "containers": [{"command": [
        sys.executable, "-c", "import sys; print('database locked', file=sys.stderr); sys.exit(3)"
    ]}]}},
}  # fmt: skip


def write(folder: Path, job: dict[str, object]) -> Path:
    (folder / "cloud-run-jobs.json").write_text(json.dumps([job]))
    path = folder / "scenario.yaml"
    path.write_text(textwrap.dedent(SCENARIO))
    return path


def test_a_scenario_runs_the_cloud_run_jobs_it_names(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('yes')"
    job = {
        "name": "export",
        "template": {"template": {"containers": [{"command": [sys.executable, "-c", code]}]}},
    }
    run = run_scenario(load_scenario(write(tmp_path, job)))
    assert run.ok, run.results
    assert marker.read_text() == "yes"  # the step waited for the execution


def test_a_bad_cloud_run_job_is_named_with_the_scenarios_problems(tmp_path: Path) -> None:
    job = {
        "name": "export",
        "template": {"taskCount": -2, "template": {"containers": [{"command": ["x"]}]}},
    }
    with pytest.raises(ConfigurationError, match=r"template\.taskCount must be .*got -2"):
        load_scenario(write(tmp_path, job))


def test_a_cloud_run_jobs_file_that_is_missing_or_empty_is_named_under_its_key(
    tmp_path: Path,
) -> None:
    """Trial 216: ``missing.yaml: cannot read …`` named no key of the scenario, and an empty
    ``cloud_run_jobs: []`` was told to add the key."""
    path = write(tmp_path, {"name": "export", "template": {"template": {"containers": [
        {"command": ["x"]}]}}})  # fmt: skip
    path.write_text(path.read_text().replace("cloud-run-jobs.json", "missing.json"))
    with pytest.raises(ConfigurationError) as refused:
        load_scenario(path)
    assert f"{path}: cloud_run_jobs: " in str(refused.value) and "missing.json" in str(
        refused.value
    )
    path.write_text(path.read_text().replace("missing.json", "[]"))
    with pytest.raises(ConfigurationError) as refused:
        load_scenario(path)
    assert str(refused.value).endswith(
        'job nightly runs Cloud Run job "export", which cloud_run_jobs does not define '
        "(defined: none)."
    )


def test_a_failed_execution_is_in_the_replay_and_its_report(tmp_path: Path) -> None:
    """A trial: a night whose Cloud Run task failed read as two 200 OK rows and "All
    expectations hold", in the terminal and in the HTML report: the scheduler's :run call
    succeeds whatever the execution does."""
    import io

    from scheduler_emulator.tools.replay import print_report
    from scheduler_emulator.tools.report import report_html

    run = run_scenario(load_scenario(write(tmp_path, FAILING)))
    assert run.ok  # the expectation is on the scheduler job's attempt, answered 200
    [execution] = run.executions
    assert execution["state"] == "FAILED"
    # (trial 216: "6 runs: 6 succeeded" read alone while the executions failed)
    assert run.run_states == "1 run: 1 succeeded; 1 Cloud Run execution: 1 FAILED"
    out = io.StringIO()
    print_report(run, out)
    text = out.getvalue()
    # (the header said only "each job's URI over HTTP", though :run is answered locally)
    assert text.splitlines()[0].endswith("; jobs/J:run URIs start its Cloud Run jobs, run locally.")
    table = text.split("Cloud Run executions:\n", 1)[1].splitlines()
    assert table[0].split()[:3] == ["CREATED", "EXECUTION", "STATE"]
    assert "FAILED" in table[1] and table[1].endswith("task 0: database locked")
    page = report_html(run)
    assert '<tr data-testid="execution-row" class="failed">' in page
    assert "task 0: database locked" in page


def test_expectations_count_the_executions_each_job_started_by_state(tmp_path: Path) -> None:
    """A trial: a replay could expect nothing of the executions, only of the scheduler job's
    attempts, which a :run answers 200 whatever its execution does."""
    job = {
        "name": "export",
        "template": {"template": {"maxRetries": 0,
                                  "containers": [{"command": [sys.executable, "-c", "exit(3)"]}]}},
    }  # fmt: skip
    path = write(tmp_path, job)
    nightly = SCENARIO.split("jobs:\n", 1)[1].split("steps:")[0]
    other = nightly.replace("nightly", "other").replace("0 2", "30 2")
    checks = '{executions.SUCCEEDED: 1, executions.FAILED: "== runs", executions: 1}'
    path.write_text(  # (dotted keys, as the results print them, beside the count)
        path.read_text().replace("{codes: {OK: 1}}", "{executions: 1, codes: {OK: 1}}")
        .replace("steps:", other + "steps:") + f"  other: {checks}\n"
    )  # fmt: skip
    run = run_scenario(load_scenario(path))
    # (the executions' names too are the same on every replay: a trial's output was not)
    assert [e["name"] for e in run.executions] == [
        e["name"] for e in run_scenario(load_scenario(path)).executions
    ]
    assert [(r.expectation.text, r.ok, r.observed) for r in run.results] == [
        ("nightly: executions == 1", True, 1),
        ("nightly: codes.OK == 1", True, 1),
        ("other: executions.SUCCEEDED == 1", False, 0),
        ("other: executions.FAILED == runs", True, 1),
        ("other: executions == 1", True, 1),
    ]


def test_a_target_takes_the_http_jobs_and_leaves_the_cloud_run_ones_local(tmp_path: Path) -> None:
    """A trial: ``--target`` moved the ``run.googleapis.com`` URIs onto the target too, so no
    execution ran (or it refused the scenario, counting them as a second origin)."""
    from tests.daemon import serving
    from tests.support import RecordingTarget

    job = {"name": "export", "template": {"template": {"containers": [{"command": ["true"]}]}}}
    path = write(tmp_path, job)
    ping = "  - {name: ping, schedule: '0 2 * * *', httpTarget: {uri: 'http://svc.test/ping'}}\n"
    path.write_text(path.read_text().replace("steps:", ping + "steps:"))
    target = RecordingTarget()
    with serving(target) as url:
        run = run_scenario(load_scenario(path), target_url=url)
    assert [r.path for r in target.requests] == ["/ping"]
    assert [e["state"] for e in run.executions] == ["SUCCEEDED"]
    assert run.delivery.startswith(f"http://svc.test -> {url} over HTTP")
    only_cloud_run = write(tmp_path, job)
    with pytest.raises(ConfigurationError, match=r"target: the jobs' URIs are all Cloud Run"):
        run_scenario(load_scenario(only_cloud_run), target_url=url)


def test_a_run_uri_naming_no_defined_cloud_run_job_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    """A trial's ``jobs/exprot:run`` ran to the end, every attempt a 404."""
    job = {"name": "export", "template": {"template": {"containers": [{"command": ["true"]}]}}}
    path = write(tmp_path, job)
    path.write_text(path.read_text().replace("jobs/export:run", "jobs/exprot:run"))
    with pytest.raises(ConfigurationError) as refused:
        load_scenario(path)
    assert str(refused.value) == (
        f'{path}: jobs[0].httpTarget.uri: job nightly runs Cloud Run job "exprot", which '
        "cloud_run_jobs does not define (defined: export)."
    )


def test_a_tasks_relative_command_starts_beside_the_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial replayed ``work/scenario.yaml`` from the folder above: ``export_task.py`` was
    looked for there, where ``cloud_run_jobs``, ``faults`` and ``target.app`` are read beside
    the scenario."""
    (tmp_path / "export_task.py").write_text("open('ran', 'w').write('yes')\n")
    container = {"command": [sys.executable, "export_task.py"]}
    job = {"name": "export", "template": {"template": {"containers": [container]}}}
    path = write(tmp_path, job)
    monkeypatch.chdir(tmp_path.parent)
    run = run_scenario(load_scenario(path))
    assert [e["state"] for e in run.executions] == ["SUCCEEDED"]
    assert (tmp_path / "ran").read_text() == "yes"
