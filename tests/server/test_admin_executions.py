"""``GET /_emulator/executions``: the Cloud Run executions, paged and filtered, and the Cloud Run
Admin API on the daemon's port (werkzeug's test client, no socket)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.server.server import create_app

pytestmark = pytest.mark.timeout(120)
PARENT = "projects/my-project/locations/us-central1"


def definition(job_id: str, code: str) -> dict[str, object]:
    container = {"command": [sys.executable, "-c", code]}
    return {"name": job_id, "template": {"template": {"maxRetries": 0, "containers": [container]}}}


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    jobs = (definition("ok", "pass"), definition("bad", "raise SystemExit(2)"))
    with Emulator(ManualClock(datetime(2026, 9, 24, tzinfo=UTC)), cloud_run_jobs=jobs) as e:
        yield e


def run_each(emulator: Emulator, client: Client) -> None:
    for job_id in ("ok", "bad", "ok"):
        response = client.post(f"/v2/{PARENT}/jobs/{job_id}:run", json={})
        assert response.status_code == 200, response.text
    emulator.cloud_run.settle()


def test_pages_and_filters(emulator: Emulator) -> None:
    client = Client(create_app(emulator))
    run_each(emulator, client)
    first = client.get("/_emulator/executions?pageSize=2").json
    assert [e["job"].rsplit("/", 1)[-1] for e in first["executions"]] == ["ok", "bad"]
    rest = client.get(f"/_emulator/executions?pageSize=2&pageToken={first['nextPageToken']}").json
    assert [e["job"].rsplit("/", 1)[-1] for e in rest["executions"]] == ["ok"]
    assert "nextPageToken" not in rest
    ok = client.get("/_emulator/executions?job=ok").json["executions"]
    assert [e["state"] for e in ok] == ["SUCCEEDED", "SUCCEEDED"]
    failed = client.get("/_emulator/executions?state=FAILED").json["executions"]
    assert client.get("/_emulator/executions?state=failed").json["executions"] == failed
    everything = client.get("/_emulator/executions").json["executions"]
    assert client.get("/_emulator/executions?state=").json["executions"] == everything
    assert client.get("/_emulator/attempts?order=").json == client.get("/_emulator/attempts").json
    assert [(e["job"], e["taskAttempts"][0]["exitCode"]) for e in failed] == [
        (f"{PARENT}/jobs/bad", 2)
    ]
    one = client.get("/_emulator/executions/" + failed[0]["name"].rsplit("/", 1)[-1]).json
    assert one == failed[0]
    assert client.get("/_emulator/executions/" + failed[0]["name"]).json == failed[0]
    elsewhere = failed[0]["name"].replace("/jobs/bad/", "/jobs/ok/")
    assert client.get("/_emulator/executions/" + elsewhere).status_code == 404


@pytest.mark.parametrize(
    ("query", "status", "named"),
    [
        ("state=DONE", 400, "state"),
        ("job=nosuch", 404, "nosuch"),
        ("pageToken=abc", 400, "pageToken"),
        ("color=red", 400, "color"),
    ],
)
def test_a_bad_query_names_the_parameter(
    emulator: Emulator, query: str, status: int, named: str
) -> None:
    response = Client(create_app(emulator)).get("/_emulator/executions?" + query)
    assert response.status_code == status
    assert named in response.json["error"]["message"]


def test_a_scheduler_jobs_name_as_job_says_which_job_the_filter_takes(emulator: Emulator) -> None:
    emulator.create_job(
        name="nightly-export",
        schedule="0 2 * * *",
        http_target={"uri": f"https://run.googleapis.com/v2/{PARENT}/jobs/ok:run"},
    )
    response = Client(create_app(emulator)).get("/_emulator/executions?job=nightly-export")
    assert response.status_code == 404
    assert response.json["error"]["message"] == (
        'No Cloud Run job "nightly-export" is defined (defined: ok, bad). "nightly-export" is '
        "a Cloud Scheduler job; the job filter (job=, the executions command's --job) takes the "
        "Cloud Run job it runs."
    )


def test_a_misspelt_cloud_run_job_is_named_as_meant(emulator: Emulator) -> None:
    """Trial 220: `executions --job exprot` named the jobs defined, not the one meant."""
    response = Client(create_app(emulator)).get("/_emulator/executions?job=bda")
    assert response.json["error"]["message"] == (
        "No Cloud Run job \"bda\" is defined (defined: ok, bad; did you mean 'bad'?)."
    )


def test_the_admin_api_answers_on_the_daemons_port(emulator: Emulator) -> None:
    client = Client(create_app(emulator))
    jobs = client.get(f"/v2/{PARENT}/jobs").json["jobs"]
    assert [j["name"] for j in jobs] == [f"{PARENT}/jobs/ok", f"{PARENT}/jobs/bad"]
    missing = client.get(f"/v2/{PARENT}/jobs/nosuch")
    assert missing.status_code == 404 and "--cloud-run-jobs" in missing.json["error"]["message"]
    bad_body = client.post(f"/v2/{PARENT}/jobs/ok:run", json={"overrides": {"taskCount": "x"}})
    assert bad_body.status_code == 400
    assert bad_body.json["error"]["status"] == "INVALID_ARGUMENT"
    not_json = client.post(f"/v2/{PARENT}/jobs/ok:run", data=b"{", content_type="text/plain")
    assert not_json.status_code == 400


def test_the_admin_apis_execution_lists_are_paged_newest_first(emulator: Emulator) -> None:
    """Trial 192: ``pageSize`` and ``pageToken`` were ignored: every execution in one answer."""
    client = Client(create_app(emulator))
    run_each(emulator, client)  # ok, bad, ok

    def names(path: str) -> tuple[list[str], str | None]:
        answer = client.get(path).json
        return [e["name"].split("/")[-3] for e in answer["executions"]], answer.get("nextPageToken")

    first, token = names(f"/v2/{PARENT}/jobs/-/executions?pageSize=2")
    assert first == ["ok", "bad"] and token
    assert names(f"/v2/{PARENT}/jobs/-/executions?pageSize=2&pageToken={token}") == (["ok"], None)
    assert names(f"/v2/{PARENT}/jobs/-/executions") == (["ok", "bad", "ok"], None)
    one, token = names(f"/v2/{PARENT}/jobs/ok/executions?pageSize=1")
    assert one == ["ok"] and names(f"/v2/{PARENT}/jobs/ok/executions?pageToken={token}")[0] == [
        "ok"
    ]
    bad = client.get(f"/v2/{PARENT}/jobs/ok/executions?pageSize=many")
    assert bad.status_code == 400 and bad.json["error"]["message"].startswith("pageSize must")


def test_admin_api_methods_the_emulator_does_not_serve_are_501_and_change_nothing(
    emulator: Emulator,
) -> None:
    client = Client(create_app(emulator))
    run_each(emulator, client)
    execution = client.get(f"/v2/{PARENT}/jobs/ok/executions").json["executions"][0]["name"]
    for method, path in (
        ("DELETE", f"/v2/{execution}"),
        ("DELETE", f"/v2/{PARENT}/jobs/ok"),
        ("PATCH", f"/v2/{PARENT}/jobs/ok"),
        ("POST", f"/v2/{PARENT}/jobs"),
        ("GET", f"/v2/{execution}/tasks"),  # (trial 139: read as a write's answer)
    ):
        response = client.open(path, method=method, json={})
        assert (response.status_code, response.json["error"]["status"]) == (501, "UNIMPLEMENTED")
        message = response.json["error"]["message"]
        assert message.startswith(f"Not served: {method} {path}. A job runs with POST ")
        assert "operation gets; not this method of that API (nor tasks, create, " in message
        assert "tasks are in GET /_emulator/executions/E (taskAttempts)" in message
    assert client.get(f"/v2/{PARENT}/jobs/ok").status_code == 200
    assert client.get(f"/v2/{execution}").json["name"] == execution
    missed = client.get(f"/v2/{PARENT}/nothing")  # (trial 216: what was asked was cut off)
    assert missed.status_code == 404
    assert missed.json["error"]["message"].startswith(f"Not served: GET /v2/{PARENT}/nothing. ")


def test_the_executions_of_a_job_no_longer_defined_are_found_by_its_id(tmp_path: Path) -> None:
    """Trial 139: after a restart without a job in the Cloud Run jobs file, ``executions`` listed
    its executions but ``executions --job ID`` answered that no such job is defined."""
    clock = ManualClock(datetime(2026, 9, 24, tzinfo=UTC))
    jobs = (definition("ok", "pass"), definition("bad", "raise SystemExit(2)"))
    with Emulator(clock, data_dir=tmp_path, cloud_run_jobs=jobs) as emulator:
        run_each(emulator, Client(create_app(emulator)))
    with Emulator(clock, data_dir=tmp_path, cloud_run_jobs=jobs[:1]) as emulator:
        client = Client(create_app(emulator))
        bad = client.get("/_emulator/executions?job=bad")
        assert bad.status_code == 200, bad.text
        assert [e["taskAttempts"][0]["exitCode"] for e in bad.json["executions"]] == [2]
        assert client.get("/_emulator/executions?job=nosuch").status_code == 404


def test_the_timeline_marks_the_execution_each_run_started(emulator: Emulator) -> None:
    """Trial 220: a lane read all green while each of its runs' executions FAILED (a RunJob
    answers 200 whatever its execution does)."""
    for job_id in ("ok", "bad"):
        emulator.create_job(
            name=f"nightly-{job_id}",
            schedule="0 2 * * *",
            http_target={
                "uri": f"https://run.googleapis.com/v2/{PARENT}/jobs/{job_id}:run",
                "oauthToken": {"serviceAccountEmail": "run@my-project.iam.gserviceaccount.com"},
            },
        )
        emulator.run_job(f"nightly-{job_id}")
    emulator.idle()
    emulator.cloud_run.settle()
    client = Client(create_app(emulator))
    lanes = client.get("/_emulator/timeline").json["lanes"]
    started = {lane["id"]: [run.get("execution") for run in lane["runs"]] for lane in lanes}
    executions = {
        e["job"].rsplit("/", 1)[-1]: e["name"].rsplit("/", 1)[-1]
        for e in client.get("/_emulator/executions").json["executions"]
    }
    assert started == {
        "nightly-ok": [{"id": executions["ok"], "state": "SUCCEEDED"}],
        "nightly-bad": [{"id": executions["bad"], "state": "FAILED"}],
    }
