"""``scheduler-emulator runs`` and ``run``, and the reason every surface gives, against a daemon on
a manual clock: a job that fails twice then succeeds, one that always fails (both
``retryCount: 3``, waits of 60 s doubling), one whose answer a ``lost_ack`` fault drops."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
import requests

from tests.daemon import Daemon
from tests.dashboard_scene import PARENT, RUNS_START, runs_daemon
from tests.support import RecordingTarget, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LOST_ACK = "injected lost ack: the target answered 200, the answer was dropped"
MIDNIGHT = datetime.fromisoformat(RUNS_START) + timedelta(minutes=1)


def waits(count: int) -> list[timedelta]:
    """The retry config's waits, worked out here: 60 s, doubling."""
    return [timedelta(seconds=60 * 2**k) for k in range(count)]


@pytest.fixture(scope="module")
def scene() -> Iterator[tuple[Daemon, RecordingTarget]]:
    with runs_daemon("--log-format", "text") as (daemon, target):
        lost = {"action": "lost_ack", "job": "acked", "attempt": 1}
        daemon.post("/_emulator/faults", lost).raise_for_status()
        after_second_failure = MIDNIGHT + sum(waits(1), timedelta())
        daemon.post("/_emulator/clock:moveTo", {"time": after_second_failure.isoformat()})
        yield daemon, target


def cli(daemon: Daemon, *args: str) -> list[str]:
    code, out, err = run_cli(*args, "--port", daemon.url.rsplit(":", 1)[1])
    assert code == 0, err
    return out.splitlines()


def test_a_run_still_going_says_when_its_next_attempt_is_due(scene: tuple[Daemon, object]) -> None:
    daemon, _ = scene
    header, *rows = cli(daemon, "runs", "--in-progress")
    assert header.split()[:5] == ["SCHEDULED", "JOB", "RUN", "TRIES", "STATE"]
    flaky = next(row for row in rows if "  flaky  " in row)
    due = MIDNIGHT + sum(waits(2), timedelta())  # after the first and the second failure
    assert "2/4" in flaky and "retrying" in flaky and due.strftime("%Y-%m-%dT%H:%M:%SZ") in flaky
    [run] = daemon.get("/_emulator/runs", params={"job": "flaky"})["runs"]
    assert run["state"] == "retrying" and run["nextAttempt"] == 3 and run["maxAttempts"] == 4
    assert datetime.fromisoformat(run["nextAttemptTime"]) == due
    assert_state_filters_match_states(daemon)
    _, *retrying = cli(daemon, "runs", "--retrying")  # (trial 178: state=retrying was refused)
    assert {row.split()[1] for row in retrying if row[:1] != " "} == {"flaky", "doomed"}


def assert_state_filters_match_states(daemon: Daemon) -> None:
    """``state=succeeded`` and ``state=retrying`` list exactly the runs of that ``state``."""
    runs = daemon.get("/_emulator/runs")["runs"]
    for state in ("succeeded", "retrying"):
        chosen = daemon.get("/_emulator/runs", params={"state": state})["runs"]
        assert [run["id"] for run in chosen] == [r["id"] for r in runs if r["state"] == state]


def test_resume_names_a_forced_runs_pending_retry() -> None:
    """Trial 114: a forced run's retry goes on while its job is paused, and resume named only
    the next scheduled run."""
    with runs_daemon() as (daemon, _):
        code, _, err = run_cli("run", "doomed", "--wait", "--port", daemon.url.rsplit(":", 1)[1])
        assert code == 1, err  # its first attempt failed: a retry 60 s on
        [doomed_row] = daemon.get("/_emulator/jobs", params={"name": "doomed"})["jobs"]
        due = doomed_row["forcedRunRetryTime"]  # not the scheduled run's (trial 170)
        assert doomed_row["nextAttemptTime"] is None
        _, *listed = cli(daemon, "jobs", "--name", "doomed")  # (NEXT wraps to a second line)
        # NEXT: the next scheduled time goes on beside it, then the forced run's retry
        text = " ".join(" ".join(listed).split())
        assert text.endswith(f"23:59:00Z 2026-09-25T00:00:00Z; forced run's retry {due}"), text
        [paused] = cli(daemon, "pause", "doomed")  # a forced run's retry: not dropped, not said
        [line] = cli(daemon, "resume", "doomed")
        assert paused == (
            "paused doomed: it starts no scheduled run until it is resumed (a forced run's "
            "retries go on, and `run` still starts one)"
        )
        # a scheduled run's retry, and a time owed a late run: each said dropped (trial 165)
        after_first_failure = MIDNIGHT + timedelta(seconds=1)
        daemon.post("/_emulator/clock:moveTo", {"time": after_first_failure.isoformat()})
        [row] = daemon.get("/_emulator/jobs", params={"name": "flaky"})["jobs"]
        [paused] = cli(daemon, "pause", "flaky")
        doomed = daemon.get(f"/v1/{PARENT}/jobs/doomed")["httpTarget"]["uri"]
        minutely = {"name": f"{PARENT}/jobs/minutely", "schedule": "* * * * *",
                    "httpTarget": {"uri": doomed},
                    "retryConfig": {"retryCount": 3, "minBackoffDuration": "90s"}}  # fmt: skip
        daemon.post(f"/v1/{PARENT}/jobs", minutely).raise_for_status()
        owing = MIDNIGHT + timedelta(minutes=2, seconds=10)  # 00:01 retrying, 00:02 owed
        daemon.post("/_emulator/clock:moveTo", {"time": owing.isoformat()})
        [owed] = daemon.get("/_emulator/jobs", params={"name": "minutely"})["jobs"]
        [both] = cli(daemon, "pause", "minutely")
    assert due and line.endswith(f"; first, a forced run's retry, due {due}")
    assert row["nextAttemptTime"] and paused == (
        f"paused flaky: it starts no scheduled run until it is resumed; its run's retry due "
        f"{row['nextAttemptTime']} is dropped, the run giving up (a forced run's retries go on, "
        "and `run` still starts one)"
    )
    assert owed["delayedRunTime"] and both == (
        f"paused minutely: it starts no scheduled run until it is resumed; its run's retry due "
        f"{owed['nextAttemptTime']} is dropped, the run giving up; the late run owed to "
        f"{owed['delayedRunTime']} is dropped (`skipped` lists that time) (a forced run's "
        "retries go on, and `run` still starts one)"
    )


def test_a_run_out_of_retries_gave_up_on_its_retry_count(scene: tuple[Daemon, object]) -> None:
    daemon, _ = scene
    last = MIDNIGHT + sum(waits(3), timedelta())  # the fourth attempt
    daemon.post("/_emulator/clock:moveTo", {"time": last.isoformat()}).raise_for_status()
    header, *rows = cli(daemon, "runs", "--gave-up")
    assert len(rows) == 1 and "doomed" in rows[0] and "gave up (retry count)" in rows[0]
    assert "4/4" in rows[0]
    failed = cli(daemon, "runs", "--failed")[1:]
    assert {row.split()[1] for row in failed if row[:1] != " "} == {"flaky", "doomed", "acked"}
    [flaky] = daemon.get("/_emulator/runs", params={"job": "flaky"})["runs"]
    assert flaky["state"] == "succeeded" and flaky["failedAttempts"] == 2
    assert_state_filters_match_states(daemon)
    assert "  flaky  " in " ".join(cli(daemon, "runs", "--succeeded"))
    # a succeeded run's earlier failure reads as one (trial 164: it read as the run's failure)
    [row] = [row for row in cli(daemon, "runs", "--failed", "--wide") if "  flaky  " in row]
    assert "succeeded" in row and "attempt 2 failed: " in row, row
    assert all(len(line) <= 120 for line in [header, *rows, *failed])


def test_a_lost_ack_reads_the_same_in_attempts_runs_and_the_text_log(
    scene: tuple[Daemon, object],
) -> None:
    daemon, _ = scene
    rows = cli(daemon, "attempts", "--job", "acked", "--wide")
    assert LOST_ACK in rows[1] and "UNAVAILABLE" in rows[1]
    assert all(len(line) <= 120 for line in cli(daemon, "attempts", "--job", "acked"))
    narrow = " ".join(" ".join(cli(daemon, "attempts", "--job", "acked")).split())
    assert LOST_ACK in narrow  # wrapped under REASON, whole
    runs = " ".join(" ".join(cli(daemon, "runs", "--job", "acked")).split())
    assert LOST_ACK in runs
    log = [line for line in daemon.output if line.split()[1:4] == ["acked", "attempt", "1"]]
    assert log and log[0].rstrip().endswith(f"reason: {LOST_ACK}")
    [attempt, _] = daemon.get("/_emulator/attempts", params={"job": "acked"})["attempts"]
    assert attempt["reason"] == LOST_ACK and attempt["responseExcerpt"] == "ok"  # the body


def test_run_as_if_scheduled_at_an_instant_sends_that_schedule_time(
    scene: tuple[Daemon, RecordingTarget],
) -> None:
    daemon, target = scene
    before = len(target.requests)
    [line] = cli(daemon, "run", "berlin", "--schedule-time", "2026-03-29T01:30:00+01:00")
    # as the header reads, in the job's zone (trial 85: it said 00:30:00Z)
    assert line == "started a run of berlin as if scheduled at 2026-03-29T01:30:00+01:00"
    [received] = target.wait_for(before + 1)[before:]
    assert received.path == "/berlin"
    sent = received.headers["X-Cloudscheduler-Scheduletime"]
    assert sent == "2026-03-29T01:30:00+01:00"  # that instant, in the job's zone
    [line] = cli(daemon, "run", "berlin")  # RunJob: the job's next scheduled time
    assert line == "started a run of berlin, sending ScheduleTime 2026-09-26T02:00:00+02:00"
    [plain] = target.wait_for(before + 2)[before + 1 :]
    assert plain.headers["X-Cloudscheduler-Scheduletime"] == "2026-09-26T02:00:00+02:00"
    config = daemon.get("/_emulator/config")  # a job named in full is named so: another
    full = f"projects/{config['project']}/locations/{config['location']}/jobs/berlin"
    [line] = cli(daemon, "run", full)  # project's reads as one
    assert line.startswith(f"started a run of {full}, sending ScheduleTime ")
    target.wait_for(before + 3)
    [line] = cli(daemon, "pause", "berlin")  # trial 98: the CLI could run a job, not pause it
    assert line.startswith("paused berlin: it starts no scheduled run until it is resumed (")
    try:  # a paused job's forced run goes anyway: said, so that it is not taken for a mistake
        assert daemon.get(f"/v1/{full}")["state"] == "PAUSED"
        [line] = cli(daemon, "run", "berlin")
        assert line.endswith(" (the job is PAUSED: a forced run goes anyway)")
        target.wait_for(before + 4)
    finally:
        [line] = cli(daemon, "resume", full)
    assert line == f"resumed {full}; next run at 2026-09-26T02:00:00+02:00"  # the job's zone
    port = daemon.url.rsplit(":", 1)[1]
    topic = f"projects/{config['project']}/topics/ready"  # a message has no ScheduleTime
    parent = full.rsplit("/jobs/", 1)[0]
    job = {"name": f"{parent}/jobs/ready", "schedule": "0 6 * * *", "pubsubTarget": {
        "topicName": topic, "data": "eA=="}}  # fmt: skip
    daemon.post(f"/v1/{parent}/jobs", job).raise_for_status()
    try:
        assert cli(daemon, "run", "ready") == [f"started a run of ready, publishing to {topic}"]
    finally:  # trial 159: a job dropped from a jobs file could be deleted only over the API
        assert cli(daemon, "delete", "ready") == [
            "deleted ready: its attempts and runs stay in the history"
        ]
    assert daemon.session.get(f"{daemon.url}/v1/{parent}/jobs/ready").status_code == 404
    code, _, err = run_cli("delete", "ready", "--port", port)
    assert code == 2 and "Did you mean 'ready'?" not in err and "Jobs in projects/" in err
    assert err.endswith(" It has recorded attempts: deleted? (`attempts --job ready`).\n"), err
    code, _, err = run_cli("resume", "berlin", "--port", port)  # not paused: Google's 400, said
    assert code == 2 and "only a PAUSED job can be resumed" in err
    code, _, err = run_cli("pause", "berlim", "--port", port)
    assert code == 2 and err.endswith(" Did you mean 'berlin'?\n"), err


def test_run_as_of_refuses_a_bad_instant_and_an_unknown_job(scene: tuple[Daemon, object]) -> None:
    daemon, _ = scene
    port = daemon.url.rsplit(":", 1)[1]
    with pytest.raises(SystemExit) as exited:
        run_cli("run", "berlin", "--schedule-time", "yesterday", "--port", port)
    assert exited.value.code == 2  # argparse names --schedule-time and the value
    code, _, err = run_cli("run", "nope", "--schedule-time", "2026-01-01T00:00:00Z", "--port", port)
    assert code == 2 and "nope" in err
    code, _, err = run_cli("run", "berlim", "--port", port)  # trial 60: which jobs are there?
    assert code == 2 and err.startswith("error: job 'berlim': Job not found.")
    assert "Jobs in projects/" in err and "berlin" in err.split("Jobs in ")[1]
    assert err.endswith(" Did you mean 'berlin'?\n"), err  # trial 82
    other = "projects/team-proj/locations/us-central1/jobs/lisbon"  # trial 110: another project's
    job = {"name": other, "schedule": "0 6 * * *", "httpTarget": {"uri": "http://127.0.0.1:9/"}}
    daemon.post(f"/v1/{other.rsplit('/jobs/', 1)[0]}/jobs", job).raise_for_status()
    try:
        code, _, err = run_cli("pause", "lisbon", "--port", port)
    finally:
        requests.delete(f"{daemon.url}/v1/{other}", timeout=30).raise_for_status()
    assert code == 2 and err.endswith(f" Jobs of that ID elsewhere (name one in full): {other}.\n")
    answer = daemon.post("/_emulator/runs", {"job": "nope", "scheduleTime": "2026-01-01T00:00:00Z"})
    assert answer.status_code == 404
    answer = daemon.post("/_emulator/runs", {"job": "berlin", "scheduleTime": "soon"})
    assert answer.status_code == 400 and "scheduleTime" in answer.text
    answer = daemon.post("/_emulator/runs", {"job": 5})  # (trial 181: the shape was cut)
    shape = '{"job": "<job ID>", "scheduleTime": "<RFC 3339>"}; scheduleTime is missing.'
    assert answer.status_code == 400 and answer.json()["error"]["message"].endswith(shape)


def test_the_runs_filter_refuses_an_unknown_state(scene: tuple[Daemon, object]) -> None:
    daemon, _ = scene
    import requests

    answer = requests.get(daemon.url + "/_emulator/runs", params={"state": "broken"}, timeout=30)
    assert answer.status_code == 400 and "gave-up" in answer.text


def test_run_wait_prints_the_first_attempts_outcome_and_exits_1_when_it_failed(
    scene: tuple[Daemon, RecordingTarget],
) -> None:
    """A trial: a CI script could not wait for a forced run's attempt without polling the API
    itself and guessing which run was its own."""
    daemon, _ = scene
    port = daemon.url.rsplit(":", 1)[1]
    code, out, err = run_cli("run", "berlin", "--wait", "--port", port)
    started, ended = out.splitlines()
    assert code == 0, err
    assert started.startswith("started a run of berlin, sending ScheduleTime ")
    assert re.match(r"attempt 1 ended: OK \(HTTP 200\) in \d+\.\d{3}s", ended)
    # A second forced run sends the same ScheduleTime (the job's next): said, since a target
    # deduplicating by it answers 200 without doing the work (trial 88).
    code, out, err = run_cli("run", "berlin", "--wait", "--port", port)
    assert code == 0, err
    assert re.fullmatch(
        r"attempt 1 ended: OK \(HTTP 200\) in \d+\.\d{3}s; same ScheduleTime as run \d+ "
        r"\(forced\), which the target answered 200: a target deduplicating by it skips this run",
        out.splitlines()[1],
    ), out
    code, out, err = run_cli("run", "doomed", "--wait", "--port", port)
    [run] = [
        r for r in daemon.get("/_emulator/runs", params={"job": "doomed"})["runs"] if r["forced"]
    ]
    [attempt] = run["attempts"]
    assert code == 1, err
    outcome = f"attempt 1 ended: {attempt['code']} (HTTP {attempt['responseStatus']}) in "
    assert out.splitlines()[1].startswith(outcome)
    assert out.splitlines()[1].endswith(f"s: {attempt['reason']}") and attempt["reason"]
    due = f"its retry, attempt 2, is due at {run['nextAttemptTime']}"  # (trial 206)
    assert out.splitlines()[2:] == [due] and run["nextAttemptTime"]


def test_runs_since_says_when_the_bound_dropped_runs_it_asks_for() -> None:
    """Trial 172: ``runs --since`` listed half the day asked for without a word (``attempts
    --since`` said the bound had dropped the rest). Runs go whole with their attempts."""
    from tests.daemon import MANUAL, running_daemon

    with running_daemon("--in-memory", *MANUAL, "--retain-attempts", "10") as daemon:
        topic = {"topicName": "projects/my-project/topics/ticks", "data": "aGk="}  # nowhere
        job = {"name": f"{PARENT}/jobs/tick", "schedule": "* * * * *", "pubsubTarget": topic}
        daemon.post(f"/v1/{PARENT}/jobs", job).raise_for_status()
        daemon.advance(1001 * 60)  # retention runs at the 1,000th attempt
        port = daemon.url.rsplit(":", 1)[1]
        code, out, err = run_cli("runs", "--since", "2026-09-24T01:59:00Z", "--port", port)
    assert code == 0 and out.startswith("SCHEDULED"), err
    assert err.startswith("note: runs before 2026-09-24T18:"), err
    assert "since 2026-09-24T01:59:00Z starts there" in err
