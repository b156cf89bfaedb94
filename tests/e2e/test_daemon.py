"""The daemon as a real subprocess: jobs file, manual clock, real HTTP target, persistence (its
refusals to start: one as a subprocess, the others through the command line in-process)."""

from __future__ import annotations

import json
import signal
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
import yaml

from scheduler_emulator import Attempt
from tests.daemon import MANUAL, Daemon, running_daemon, serving
from tests.support import RecordingTarget, assert_delivered, run_command


def write_jobs(path: Path, base_url: str, **retry: int) -> Path:
    jobs = [
        {
            "name": "nightly",
            "schedule": "0 2 * * *",
            "timeZone": "Etc/UTC",
            "httpTarget": {
                "uri": f"{base_url}/_triggers/timer/nightly",
                "httpMethod": "POST",
                "oidcToken": {
                    "serviceAccountEmail": "scheduler-invoker@my-project.iam.gserviceaccount.com",
                    "audience": "https://orders-abc123-uc.a.run.app",
                },
            },
            "retryConfig": {"retryCount": 3, **retry},
        }
    ]
    path.write_text(yaml.safe_dump(jobs))
    return path


def on_disk(tmp_path: Path, *args: str) -> AbstractContextManager[Daemon]:
    """A daemon on a manual clock at 2026-09-24T01:59:00Z keeping its state in
    ``tmp_path/data`` (so that a second one started the same way finds it)."""
    return running_daemon(*args, "--data-dir", str(tmp_path / "data"), *MANUAL)


def past_two_o_clock(daemon: Daemon) -> list[Attempt]:
    """Advance ``daemon``'s clock two minutes (past the nightly job's 02:00 run and its
    retries); return every attempt it recorded."""
    daemon.post("/_emulator/clock:advance", {"seconds": 120})
    return daemon.attempts()


def refused_start(capsys: pytest.CaptureFixture[str], *args: str, process: bool = False) -> str:
    """Run ``scheduler-emulator start ARGS`` (in this process unless ``process``: then as a
    subprocess), assert that it exits with 2, and return what it wrote to stderr."""
    code, out, err = run_command(capsys, "start", *args, process=process)
    assert code == 2, (code, out, err)
    return err


class TestManualClockDaemon:
    def test_nightly_job_is_delivered_once_with_scheduler_headers(self, tmp_path: Path) -> None:
        target = RecordingTarget()
        with (
            serving(target) as base_url,
            running_daemon(
                "--jobs", str(write_jobs(tmp_path / "jobs.yaml", base_url)), "--in-memory", *MANUAL
            ) as daemon,
        ):
            assert "1 job loaded" in daemon.first_line
            assert daemon.get("/_emulator/clock") == {
                "now": "2026-09-24T01:59:00Z",
                "mode": "manual",
                "nextDue": "2026-09-24T02:00:00Z",  # the dashboard's "to next due" button
                "nextDueJobs": ["nightly"],  # what is due then (trial 172)
                "nextDueJobCount": 1,
            }
            answer = daemon.post("/_emulator/clock:advance", {"seconds": 120})
            assert answer.json() == {"now": "2026-09-24T02:01:00Z"}
            [request] = target.requests
            assert_delivered(request, "2026-09-24T02:00:00Z")

    def test_failing_target_gets_four_attempts_and_no_fifth(self, tmp_path: Path) -> None:
        target = RecordingTarget(status=500)
        with (
            serving(target) as base_url,
            running_daemon(
                "--jobs", str(write_jobs(tmp_path / "jobs.yaml", base_url)), "--in-memory", *MANUAL
            ) as daemon,
        ):
            daemon.post("/_emulator/clock:advance", {"seconds": 120})
            attempts = daemon.attempts("nightly")
            assert [a["startTime"] for a in attempts] == [
                "2026-09-24T02:00:00Z",
                "2026-09-24T02:00:05Z",
                "2026-09-24T02:00:15Z",
                "2026-09-24T02:00:35Z",
            ]
            assert {a["code"] for a in attempts} == {"INTERNAL"}
            assert {a["scheduleTime"] for a in attempts} == {"2026-09-24T02:00:00Z"}
            assert [a["attempt"] for a in attempts] == [1, 2, 3, 4]
            assert attempts[0]["job"] == "projects/my-project/locations/us-central1/jobs/nightly"
            assert attempts[0]["responseStatus"] == 500
            assert attempts[0]["request"]["headers"]["X-CloudScheduler-JobName"] == "nightly"
            daemon.post("/_emulator/clock:moveTo", {"time": "2026-09-24T03:00:00Z"})
            assert len(daemon.attempts()) == 4
            assert len(target.requests) == 4

    def test_attempt_log_lines_are_cloud_logging_entries(self, tmp_path: Path) -> None:
        log = tmp_path / "attempts.jsonl"
        jobs = write_jobs(tmp_path / "jobs.yaml", "http://127.0.0.1:9")
        with running_daemon(
            "--jobs", str(jobs), "--in-memory", "--log-file", str(log), *MANUAL
        ) as daemon:
            daemon.post("/_emulator/clock:advance", {"seconds": 120})
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        started = [e for e in entries if e["jsonPayload"]["@type"].endswith("AttemptStarted")]
        finished = [e for e in entries if e["jsonPayload"]["@type"].endswith("AttemptFinished")]
        assert len(started) == len(finished) == 4
        assert finished[0]["jsonPayload"]["status"] == "UNAVAILABLE"
        assert finished[0]["severity"] == "ERROR"
        assert "httpRequest" not in finished[0]
        assert started[0]["logName"] == (
            "projects/my-project/logs/cloudscheduler.googleapis.com%2Fexecutions"
        )
        assert started[0]["resource"] == {
            "type": "cloud_scheduler_job",
            "labels": {"job_id": "nightly", "location": "us-central1", "project_id": "my-project"},
        }

    def test_clock_endpoints_refuse_a_system_clock(self) -> None:
        with running_daemon("--in-memory") as daemon:
            answer = daemon.post("/_emulator/clock:advance", {"seconds": 1})
            assert answer.status_code == 400
            assert answer.json()["error"]["status"] == "FAILED_PRECONDITION"
            assert daemon.get("/_emulator/clock")["mode"] == "system"

    @pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
    def test_sigterm_and_sighup_stop_the_daemon_cleanly(self, signum: int) -> None:
        """SIGHUP: a closed terminal (trial 86: it killed the daemon with no stop report)."""
        with running_daemon("--in-memory") as daemon:
            assert daemon.stop(signum) == 0
            assert daemon.process.stderr is not None
            stderr = daemon.process.stderr.read()
        assert "stopping: 0 attempt(s) in flight or queued.\n" in stderr  # says none

    def test_an_ignored_sighup_stays_ignored(self) -> None:
        """Started under ``nohup`` (SIGHUP ignored, inherited), a closed terminal leaves it."""
        before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # inherited by the daemon
        try:
            with running_daemon("--in-memory") as daemon:
                signal.signal(signal.SIGHUP, before)
                daemon.process.send_signal(signal.SIGHUP)
                assert daemon.get("/_emulator/health")["status"] == "ok"  # still serving
                assert daemon.process.poll() is None
        finally:
            signal.signal(signal.SIGHUP, before)


class TestPersistence:
    def test_sigkill_keeps_jobs_state_and_attempt_history(self, tmp_path: Path) -> None:
        with serving(RecordingTarget(status=404)) as base_url:
            jobs = write_jobs(tmp_path / "jobs.yaml", base_url)
            with on_disk(tmp_path, "--jobs", str(jobs)) as first:
                before = past_two_o_clock(first)
                assert [a["code"] for a in before] == ["NOT_FOUND"] * 4
                first.process.send_signal(signal.SIGKILL)
                first.process.wait(timeout=30)
            with on_disk(tmp_path) as second:
                assert "1 job loaded" in second.first_line
                assert second.attempts() == before


class TestBadInput:
    def test_invalid_jobs_file_is_refused_naming_job_field_and_value(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        jobs = tmp_path / "jobs.yaml"
        jobs.write_text(
            yaml.safe_dump(
                [
                    {
                        "name": "nightly",
                        "schedule": "0 2 * * *",
                        "httpTarget": {"uri": "http://127.0.0.1:9/x"},
                        "retryConfig": {"retryCount": 9},
                    }
                ]
            )
        )
        said = refused_start(capsys, "--jobs", str(jobs), "--in-memory", process=True)
        assert "nightly" in said
        assert "retryConfig.retryCount" in said
        assert "9" in said

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            pytest.param(
                ["--start", "2026-01-01T00:00:00Z"],
                "--start needs --clock manual",
                id="start-without-manual",
            ),
        ],
    )
    def test_bad_flags_exit_2_with_a_message(
        self, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert message in refused_start(capsys, "--in-memory", "--port", "0", *args)


class TestReload:
    def test_changed_jobs_file_updates_the_job_and_keeps_its_history(self, tmp_path: Path) -> None:
        with serving(RecordingTarget(status=500)) as base_url:
            jobs = write_jobs(tmp_path / "jobs.yaml", base_url)
            with on_disk(tmp_path, "--jobs", str(jobs)) as first:
                assert len(past_two_o_clock(first)) == 4
                assert first.stop() == 0
            write_jobs(jobs, base_url, retryCount=1)  # retryCount 3 → 1
            with on_disk(tmp_path, "--jobs", str(jobs)) as second:
                # the same --start 01:59 again: it resumes at 02:01, where the first stopped
                assert "(resumed where it stopped, not at --start 2026-09-24T01:59:00Z" in (
                    second.first_line
                )
                assert len(second.attempts()) == 4
                second.post("/_emulator/clock:advance", {"seconds": 86400})  # the next night
                attempts = second.attempts()
                assert [a["attempt"] for a in attempts[4:]] == [1, 2]  # the new retry count
                assert attempts[4]["scheduleTime"] == "2026-09-25T02:00:00Z"  # not 02:00 again

    def test_a_job_in_two_jobs_files_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        one = write_jobs(tmp_path / "one.yaml", "http://127.0.0.1:9")
        two = write_jobs(tmp_path / "two.yaml", "http://127.0.0.1:9")
        said = refused_start(capsys, "--in-memory", "--jobs", str(one), "--jobs", str(two))
        assert f"{two}: job 'nightly' is defined in {one} too" in said


def test_a_port_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with running_daemon("--in-memory") as daemon:
        port = daemon.url.rsplit(":", 1)[1]
        said = refused_start(capsys, "--in-memory", "--port", port)
    assert said.startswith(f"error: cannot listen on 127.0.0.1:{port}:")
    assert "pick another --port" in said


@pytest.mark.timeout(60)
def test_a_restart_with_the_same_jobs_file_says_which_jobs_it_recreates_or_resets(
    tmp_path: Path,
) -> None:
    """A trial's jobs deleted and changed over the API came back, at the next start with the
    same --jobs file, as the file had them, without a word: the files win, and now say so."""
    jobs = tmp_path / "jobs.json"
    spec = [{"name": name, "schedule": "0 2 * * *", "httpTarget": {"uri": "http://t.test/x"}}
            for name in ("kept", "deleted", "changed")]  # fmt: skip
    jobs.write_text(json.dumps(spec))
    parent = "/v1/projects/my-project/locations/us-central1/jobs"
    with on_disk(tmp_path, "--jobs", str(jobs)) as daemon:
        assert daemon.session.delete(f"{daemon.url}{parent}/deleted").status_code == 200
        extra = {**spec[0], "name": f"{parent[4:]}/extra"}  # in no file (trial 54)
        assert daemon.session.post(f"{daemon.url}{parent}", json=extra).status_code == 200
        patched = daemon.session.patch(
            f"{daemon.url}{parent}/changed?updateMask=schedule", json={"schedule": "0 3 * * *"}
        )
        assert patched.status_code == 200, patched.text
        daemon.stop()
    with on_disk(tmp_path, "--jobs", str(jobs)) as again:
        listed = again.get(parent)["jobs"]
        schedules = {job["name"].rsplit("/", 1)[1]: job["schedule"] for job in listed}
        again.stop()
        assert again.process.stderr is not None
        stderr = again.process.stderr.read()
    assert schedules == {
        "kept": "0 2 * * *", "deleted": "0 2 * * *", "changed": "0 2 * * *", "extra": "0 2 * * *"
    }  # fmt: skip
    assert (
        "note: each job in the --jobs files replaces the data directory's of its name: 1 of their "
        "jobs not in it (new in the files, or deleted over the API: deleted) is created; "
        "1 configured otherwise there (changed in the files, or over the API: changed) takes the "
        "files' configuration; 1 of "
        "its jobs in no file (deleted from the files, or created over the API: extra) is kept: "
        f"`scheduler-emulator delete extra --port {again.url.rsplit(':', 1)[1]}` drops it. "
        "Start without --jobs to keep the data directory's jobs as they are."
    ) in stderr
    with on_disk(tmp_path, "--jobs", str(jobs), "--project", "my-shop") as moved:  # (trial 209)
        moved.stop()
        assert moved.process.stderr is not None
        stderr = moved.process.stderr.read()
    created, _, kept = stderr.partition(" are created; ")  # each job as PROJECT/LOCATION/ID
    assert created.endswith(
        "3 of their jobs not in it (new in the files, or deleted over the API: my-shop/us-central1"
        "/kept, my-shop/us-central1/deleted, my-shop/us-central1/changed)"
    ), stderr
    assert kept.startswith(
        "4 of its jobs in no file (deleted from the files, or created over the API: my-project/"
    ), stderr
    with on_disk(tmp_path) as without_files:  # no files to compare with: no note (trial 57)
        without_files.stop()
        assert without_files.process.stderr is not None
        assert "note: the --jobs files" not in without_files.process.stderr.read()
