"""``scheduler-emulator next`` and the command line's error handling."""

from __future__ import annotations

import io
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.tools.cli import (
    ADMIN_TOKEN_ENV,
    admin_token,
    build_parser,
    log_format_for,
    main,
)
from tests.daemon import running_daemon, serving
from tests.support import RecordingTarget, run_command

JOB = "projects/my-project/locations/us-central1/jobs/"
#: A target nothing listens on (port 9, discard): attempts fail fast with UNAVAILABLE.
TARGET = {"httpTarget": {"uri": "http://127.0.0.1:9/_triggers/timer/x"}, "retryConfig": {}}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


#: ``next`` flags: New York time, after noon UTC the day before fall-back day.
BEFORE_FALL_BACK = ("--time-zone", "America/New_York", "--after", "2026-10-31T12:00:00Z")


class TestNext:
    def test_fall_back_day_prints_both_occurrences_of_the_repeated_time(self) -> None:
        result = run_cli("next", "30 1 * * *", *BEFORE_FALL_BACK, "-n", "3")
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-02T01:30:00-05:00",
        ]

    def test_vixie_policy_fires_a_fixed_time_job_once_on_fall_back_day(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = main(["next", "30 1 * * *", *BEFORE_FALL_BACK, "-n", "3", "--dst-policy", "vixie"])
        assert code == 0
        assert capsys.readouterr().out.splitlines() == [
            "2026-11-01T01:30:00-04:00",
            "2026-11-02T01:30:00-05:00",
            "2026-11-03T01:30:00-05:00",
        ]

    def test_utc_times_end_in_z(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["next", "0 2 * * *", "--after", "2026-09-24T01:59:00Z", "-n", "2"]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "2026-09-24T02:00:00Z",
            "2026-09-25T02:00:00Z",
        ]

    @pytest.mark.parametrize(
        "args",
        [
            pytest.param(["*/5 * * * * *"], id="six-fields"),
            pytest.param(["0 2 * * *", "--time-zone", "EST"], id="legacy-zone"),
            pytest.param(["0 2 L * *"], id="last-day"),
            pytest.param(["0 2 * * *", "--time-zone", "Mars/Olympus"], id="unknown-zone"),
            pytest.param(["0 2 * * *", "--time-zone", " "], id="empty-zone"),
        ],
    )
    def test_invalid_schedule_or_zone_exits_2_with_the_message(
        self, args: list[str], request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
    ) -> None:
        process = request.node.callspec.id == "six-fields"  # the others in this process
        code, out, err = run_command(capsys, "next", *args, process=process)
        assert code == 2
        assert out == ""
        culprit = "--time-zone" if "--time-zone" in args else "SCHEDULE"
        assert err.startswith(f"error: {culprit}: ") and "Traceback" not in err
        if request.node.callspec.id == "empty-zone":  # not UTC, as a job's empty timeZone is
            assert "' ' is empty; give an IANA time zone" in err


def test_python_dash_m_prints_help() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert "start" in result.stdout and "next" in result.stdout
    # where jobs come from, and where the guides are (trial 74: no create subcommand, no docs)
    assert "created over the v1 API" in result.stdout and "docs/" in result.stdout


def test_a_schedule_that_never_fires_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["next", "0 0 30 2 *", "--after", "2026-01-01T00:00:00Z"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no further fire time within 10 years (printed 0 of 5)" in captured.err


class TestBadFlags:
    @pytest.mark.parametrize("command", ["start", "env-init"])
    @pytest.mark.parametrize("port", ["99999", "-1", "http"])
    def test_a_port_out_of_range_exits_2_naming_the_flag_and_the_value(
        self,
        command: str,
        port: str,
        request: pytest.FixtureRequest,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        process = request.node.callspec.id == "99999-start"  # the others in this process
        code, _, err = run_command(capsys, command, "--port", port, process=process)
        assert code == 2
        assert f"argument --port: '{port}' is not a port number (0 to 65535)" in err
        assert "Traceback" not in err

    @pytest.mark.parametrize(
        ("command", "flag", "value", "says"),
        [
            ("start", "--data-dir", "", "'' is empty; give a directory"),
            ("start", "--host", "", "'' is empty; give an address such as 127.0.0.1"),
            ("attempts", "--host", "[]", "'[]' is empty; give an address such as 127.0.0.1"),
            ("start", "--location", "", 'invalid location ID ""'),
            ("start", "--location", "us central", 'invalid location ID "us central"'),
            ("start", "--token-issuer", "", "'' is empty or has a space; give the 'iss'"),
            ("start", "--token-issuer", "ftp://x", "'ftp://x' is not an https:// URL nor a bare"),
            ("start", "--token-issuer", "javascript:alert(1)", "is not an https:// URL nor a"),
            ("start", "--admin-token", "a\nb", "up to 1000 printable ASCII characters"),
            ("start", "--admin-token", "x" * 1001, "up to 1000 printable ASCII characters"),
            ("start", "--start", "2026-02-30T00:00:00Z", "day is out of range for month"),
            ("start", "--with-pubsub", "8085x", "'8085x' is not a port number (0 to 65535)"),
            ("next", "--after", "2026-13-01T00:00:00Z", "month must be in 1..12"),
            ("replay", "--seed", "-1", f"from 0 to {2**63 - 1}; got '-1'"),
            ("replay", "--seed", str(2**63), f"from 0 to {2**63 - 1}; got '{2**63}'"),
        ],
    )
    def test_a_bad_value_exits_2_naming_the_flag_and_the_reason(
        self, command: str, flag: str, value: str, says: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An empty --data-dir would mean the current directory and an empty --host no
        address; a --location the API would refuse in every job name is refused at once; a
        timestamp says what is wrong with it."""
        code, _, err = run_command(capsys, command, flag, value)
        assert code == 2
        assert f"argument {flag}: " in err and says in err

    @pytest.mark.parametrize("below", ["", "sub"])
    def test_a_data_dir_that_is_a_file_exits_2_naming_the_flag(
        self, below: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Not the operating system's ``[Errno 17] File exists`` (a trial user's)."""
        (tmp_path / "notes.txt").write_text("a file")
        data_dir = tmp_path / "notes.txt" / below if below else tmp_path / "notes.txt"
        code, _, err = run_command(capsys, "start", "--port", "0", "--data-dir", str(data_dir))
        assert code == 2
        assert (
            err == f"error: --data-dir {data_dir} is a file or lies under one: pass a "
            "directory, or a path where one can be made.\n"
        )

    def test_a_fault_rule_that_never_acts_is_a_warning(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        plan = tmp_path / "faults.yaml"
        plan.write_text("rules:\n  - {action: lost_ack}\n  - {action: lost_ack, job: x}\n")
        with socket.socket() as taken:  # the daemon stops at its port, after the faults load
            taken.bind(("127.0.0.1", 0))
            port = str(taken.getsockname()[1])
            args = ("start", "--in-memory", "--port", port, "--faults", str(plan))
            code, _, err = run_command(capsys, *args)
        assert code == 2
        assert err.startswith(f"warning: {plan}: rules[1] (lost_ack) never acts: rules[0] is")

    def test_a_log_file_in_a_missing_directory_exits_2_naming_the_flag(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Not a bare ``[Errno 2] No such file or directory`` (a trial user's)."""
        log = tmp_path / "nodir" / "x.log"
        args = ("start", "--port", "0", "--in-memory", "--log-file", str(log))
        code, _, err = run_command(capsys, *args)
        assert (code, err) == (2, f"error: --log-file {log}: No such file or directory.\n")

    @pytest.mark.parametrize("host", ["nocolon", ":8085", ""])
    def test_a_pubsub_emulator_host_without_a_port_exits_2(
        self, host: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _, err = run_command(
            capsys, "start", "--in-memory", "--port", "0", "--pubsub-emulator-host", host
        )
        assert code == 2
        assert err == (
            f"error: --pubsub-emulator-host must be HOST:PORT, such as localhost:8085; got "
            f"{host!r}.\n"
        )

    def test_ctrl_c_exits_130_without_a_traceback(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Ctrl-C in a command without a handler of its own (``demo``) ends it quietly."""
        from scheduler_emulator.tools import demo

        def interrupted(**_: object) -> int:
            raise KeyboardInterrupt

        monkeypatch.setattr(demo, "run_demo", interrupted)
        code, _, err = run_command(capsys, "demo")
        assert (code, err) == (130, "scheduler-emulator: interrupted.\n")

    def test_a_host_that_is_not_this_machines_says_so(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of this machine
        code, _, err = run_command(
            capsys, "start", "--in-memory", "--host", "192.0.2.7", "--port", "0"
        )
        assert code == 2
        assert err.startswith("error: cannot listen on 192.0.2.7:0: ")
        assert "--host '192.0.2.7' is not an address of this machine" in err
        assert "another scheduler-emulator" not in err

    def test_a_bad_fault_file_is_reported_once(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        faults = tmp_path / "faults.yaml"
        faults.write_text("rules:\n  - {action: nope}\n")
        code, _, err = run_command(
            capsys, "start", "--in-memory", "--port", "0", "--faults", str(faults)
        )
        assert code == 2
        assert err == (
            f"error: {faults}: rules[0]: action must be one of duplicate, lost_ack, deadline, "
            'status, connection_error, delay; got "nope".\n'
        )
        faults.write_text("rules:\n  - {action: duplicat}\n")  # (trial 78)
        _, _, err = run_command(capsys, "start", "--in-memory", "--faults", str(faults))
        assert err.endswith('got "duplicat"; did you mean "duplicate"?\n'), err

    def test_dst_policy_help_names_the_default_before_the_choices(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        help_text = " ".join(run_command(capsys, "next", "--help")[1].split())
        assert "daylight-saving rule (default: absolute): 'absolute' fires" in help_text

    @pytest.mark.parametrize(
        ("flag", "value", "says"),
        [
            ("--days", "0", "--days must be from 1 to 3650 (ten years); got 0."),
            (
                "--days",
                "99999999999",
                "--days must be from 1 to 3650 (ten years); got 99999999999.",
            ),
            ("--speed", "nan", "--speed must be from 0 to 3600 seconds; got nan."),
            ("--speed", "-1", "--speed must be from 0 to 3600 seconds; got -1.0."),
        ],
    )
    def test_a_demo_that_could_not_end_or_makes_no_sense_exits_2(
        self, flag: str, value: str, says: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A trial of bad flags: ``--speed nan`` ran, and ``--days 99999999999`` never ended."""
        code, _, err = run_command(capsys, "demo", flag, value)
        assert (code, err) == (2, f"error: {says}\n")

    def test_demo_help_describes_the_demo(self, capsys: pytest.CaptureFixture[str]) -> None:
        help_text = " ".join(run_command(capsys, "demo", "--help")[1].split())
        assert "Start the example Orders service" in help_text

    def test_start_help_says_where_a_manual_clock_starts(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        help_text = " ".join(run_command(capsys, "start", "--help")[1].split())
        assert (
            "(default: where it stopped on the data dir, else now rounded down to the whole minute)"
            in help_text
        )


class TestEnvInit:
    def test_it_asks_the_running_daemon_its_project(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)  # the daemon would use it
        with running_daemon("--in-memory", "--project", "orders-dev") as daemon:
            host, port = daemon.host_port
            result = run_cli("env-init", "--host", host, "--port", str(port))
        assert result.returncode == 0, result.stderr
        assert "export CLOUDSDK_CORE_PROJECT=orders-dev\n" in result.stdout
        assert f"export CLOUD_SCHEDULER_EMULATOR_HOST={host}:{port}\n" in result.stdout
        assert "export PUBSUB_EMULATOR_HOST" not in result.stdout  # it publishes to none

    @pytest.mark.parametrize(
        ("exported", "asked"),
        [("127.0.0.1:9", "http://127.0.0.1:9"), ("[::1]:9", "http://[::1]:9")],
    )  # fmt: skip
    def test_the_views_go_where_the_exported_variable_says(
        self,
        exported: str,
        asked: str,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A trial: after ``eval "$(scheduler-emulator env-init --port N)"`` the views still
        asked port 8095."""
        monkeypatch.setenv("CLOUD_SCHEDULER_EMULATOR_HOST", exported)
        code, _, err = run_command(capsys, "attempts")
        assert code == 2 and f"no scheduler-emulator answers at {asked};" in err

    def test_a_variable_that_is_not_host_port_is_refused_naming_it(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A trial: ``CLOUD_SCHEDULER_EMULATOR_HOST=nonsense`` was ignored; the views asked
        127.0.0.1:8095 and said no daemon answered there."""
        monkeypatch.setenv("CLOUD_SCHEDULER_EMULATOR_HOST", "not-an-address")
        code, _, err = run_command(capsys, "attempts", "--port", "9")  # the host: the variable's
        assert code == 2 and err == (
            "error: $CLOUD_SCHEDULER_EMULATOR_HOST must be HOST:PORT, such as 127.0.0.1:8095; "
            "got 'not-an-address'.\n"
        )
        code, _, err = run_command(capsys, "attempts", "--host", "127.0.0.1", "--port", "9")
        assert code == 2 and "no scheduler-emulator answers at http://127.0.0.1:9;" in err
        assert "a stopped one again on its --data-dir, to read what it recorded" in err  # (141)
        # the variable is named where the flags are (a trial found it only in the README)
        assert err.endswith(" (or set CLOUD_SCHEDULER_EMULATOR_HOST).\n")
        monkeypatch.setenv("COLUMNS", "200")  # (each help line whole)
        _, help_text, _ = run_command(capsys, "attempts", "--help")
        assert help_text.count("$CLOUD_SCHEDULER_EMULATOR_HOST's when set") == 2

    def test_an_ipv6_daemons_startup_line_and_exports_bracket_its_address(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        try:
            with socket.socket(socket.AF_INET6) as probe:
                probe.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback here")
        with running_daemon("--in-memory", "--host", "::1") as daemon:
            # stdout is a pipe: the execution log is JSON lines, and so is the startup line
            first = json.loads(daemon.first_line)["textPayload"]
            assert first.startswith(f"scheduler-emulator listening on {daemon.url} ")
            host, port = daemon.host_port
            assert (host, daemon.url) == ("::1", f"http://[::1]:{port}")
            assert daemon.env["CLOUD_SCHEDULER_EMULATOR_HOST"] == f"[::1]:{port}"  # unquoted
            _, out, _ = run_command(capsys, "env-init", "--host", host, "--port", str(port))
            # The host as the startup line's URL writes it, in brackets, is the same host.
            code, bracketed, err = run_command(
                capsys, "env-init", "--host", "[::1]", "--port", str(port)
            )
        assert f"export CLOUD_SCHEDULER_EMULATOR_HOST='[::1]:{port}'\n" in out
        assert (code, bracketed) == (0, out), err

    def test_it_sends_the_admin_token_and_says_when_the_daemon_refuses_it(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Trial 110: a daemon with an admin token read as none at all (my-project printed)."""
        args = ("--in-memory", "--project", "team-proj", "--admin-token", "s3cret\n")
        with running_daemon(*args) as daemon:
            where = ("--host", daemon.host_port[0], "--port", str(daemon.host_port[1]))
            # (trial 166: read from a secret file, its newline made a token nothing matched)
            monkeypatch.setenv("SCHEDULER_EMULATOR_ADMIN_TOKEN", "s3cret\n")
            code, out, err = run_command(capsys, "env-init", *where)
            assert (code, err) == (0, "")
            assert "export CLOUDSDK_CORE_PROJECT=team-proj\n" in out
            code, _, err = run_command(capsys, "env-init", *where, "--admin-token", "wrong")
        assert code == 2 and err.startswith("error: ") and "(401 from http://" in err

    def test_run_without_the_token_says_the_run_started_and_exits_0(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Trial 177: RunJob (the v1 API, unguarded) started the run, then reading it back
        (``/_emulator/runs``) was refused, and ``run`` exited 2: a retry would run it twice."""
        with running_daemon("--in-memory", "--admin-token", "s3cret") as daemon:
            parent = "projects/my-project/locations/us-central1"
            body = {
                "name": f"{parent}/jobs/nightly",
                "schedule": "0 2 * * *",
                "httpTarget": {"uri": daemon.url + "/_emulator/health", "httpMethod": "GET"},
            }
            daemon.session.post(f"{daemon.url}/v1/{parent}/jobs", json=body).raise_for_status()
            where = ("--port", str(daemon.host_port[1]))
            code, out, err = run_command(capsys, "run", f"{parent}/jobs/nightly", *where)
            assert (code, out) == (0, f"started a run of {parent}/jobs/nightly\n"), err
            assert err.startswith("note: what it sent is not shown: ") and "(401 from" in err
            code, out, err = run_command(capsys, "run", f"{parent}/jobs/nightly", *where, "--wait")
            assert code == 2 and out.startswith("started a run of")
            assert err.startswith("error: the run started; waiting was refused: ")
            token = {"Authorization": "Bearer s3cret"}
            runs = daemon.session.get(f"{daemon.url}/_emulator/runs", headers=token).json()
        assert len(runs["runs"]) == 2  # each command started one run

    def test_it_points_pubsub_clients_at_the_daemons_pubsub_emulator(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # the daemon publishes to this host (nothing needs to listen there for env-init)
        with running_daemon("--in-memory", "--pubsub-emulator-host", "127.0.0.1:8085") as daemon:
            assert daemon._admin.get("/_emulator/config")["pubsubEmulatorHost"] == (
                "127.0.0.1:8085"
            )
            host, port = daemon.host_port
            _, out, _ = run_command(capsys, "env-init", "--host", host, "--port", str(port))
        assert "export PUBSUB_EMULATOR_HOST=127.0.0.1:8085\n" in out

    def test_without_a_daemon_it_prints_the_default_project_and_says_so(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
            assert main(["env-init", "--port", str(port)]) == 0
        captured = capsys.readouterr()
        assert "export CLOUDSDK_CORE_PROJECT=my-project\n" in captured.out
        assert f"note: no scheduler-emulator answers at 127.0.0.1:{port}" in captured.err

    def test_port_0_is_refused(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["env-init", "--port", "0"]) == 2
        assert capsys.readouterr().err.startswith("error: --port 0 is not a daemon's port")


@pytest.mark.parametrize("project", ["demo", "A", "my-project-", "x" * 31])
def test_start_refuses_a_project_id_google_refuses(
    project: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["start", "--project", project, "--in-memory", "--port", "0"])
    assert caught.value.code == 2
    assert "argument --project: the value has an invalid project ID" in capsys.readouterr().err


class TestStartupLine:
    def test_it_says_which_jobs_came_from_the_file_and_which_from_the_data_directory(
        self, tmp_path: Path
    ) -> None:
        data = tmp_path / "data"
        jobs = tmp_path / "jobs.yaml"
        jobs.write_text(json.dumps([{"name": "nightly", "schedule": "0 2 * * *", **TARGET}]))
        with running_daemon("--data-dir", str(data)) as daemon:
            daemon.post(
                "/v1/projects/my-project/locations/us-central1/jobs",
                {"name": JOB + "weekly", "schedule": "0 3 * * 1", **TARGET},
            )
        with running_daemon("--data-dir", str(data), "--jobs", str(jobs)) as daemon:
            assert f"(1 job loaded from {jobs}, 1 from the data directory, " in daemon.first_line

    def test_an_empty_jobs_file_is_a_warning(self, tmp_path: Path) -> None:
        jobs = tmp_path / "jobs.yaml"
        jobs.write_text("[]\n")
        with running_daemon("--in-memory", "--jobs", str(jobs)) as daemon:
            assert f"(0 jobs loaded from {jobs}, system clock, in memory" in daemon.first_line
            daemon.stop()
            assert daemon.process.stderr is not None
            assert f"warning: {jobs} holds no jobs" in daemon.process.stderr.read()

    RUN = "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/"

    def test_a_missing_pubsub_emulator_is_warned_about_on_stderr(self, tmp_path: Path) -> None:
        """Trial 125: this warning went to stdout, every other start warning to stderr (a CI
        script keeping stderr lost it)."""
        jobs = tmp_path / "jobs.yaml"
        topic = {"topicName": "projects/my-project/topics/restock", "data": "aGk="}
        jobs.write_text(json.dumps([{"name": "r", "schedule": "0 6 * * *", "pubsubTarget": topic}]))
        flags = ("--in-memory", "--jobs", str(jobs), "--pubsub-emulator-host", "127.0.0.1:9")
        with running_daemon(*flags) as daemon:
            daemon.stop()
            assert daemon.process.stderr is not None
            err = daemon.process.stderr.read()
        assert "warning: " in err and "127.0.0.1:9" in err
        assert not any("warning" in line for line in daemon.output)

    def test_jobs_that_cannot_be_delivered_are_a_warning(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A trial's restart without a Pub/Sub emulator said nothing until the jobs fired; nor
        did a later trial's App Engine job whose service no --app-engine-url mapped."""
        monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
        jobs = tmp_path / "jobs.yaml"
        topic = {"topicName": "projects/my-project/topics/restock", "data": "aGk="}
        jobs.write_text(json.dumps([
            {"name": "restock", "schedule": "0 6 * * *", "pubsubTarget": topic},
            {"name": "sweep", "schedule": "0 6 * * *",
             "appEngineHttpTarget": {"appEngineRouting": {"service": "worker"}}},
            {"name": "mapped", "schedule": "0 6 * * *",
             "appEngineHttpTarget": {"appEngineRouting": {"service": "api"}}},
            {"name": "export", "schedule": "0 6 * * *",  # (trial 192: its token's time said too)
             "httpTarget": {"uri": self.RUN + "exprot:run",
                            "oidcToken": {"serviceAccountEmail": "a@b.c"}}},
            {"name": "report", "schedule": "0 6 * * *", "httpTarget": {
                "uri": "http://127.0.0.1:9/r", "oidcToken": {"serviceAccountEmail": "a@b.c"}}},
        ]))  # fmt: skip
        mapping = ("--app-engine-url", "api=http://127.0.0.1:9",
                   "--app-engine-url", "wroker=http://127.0.0.1:9")  # fmt: skip
        start = (datetime.now(UTC) - timedelta(days=3, minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        clock = ("--clock", "manual", "--start", start)  # (trial 73: tokens expired, no word)
        with running_daemon("--in-memory", "--jobs", str(jobs), *mapping, *clock) as daemon:
            daemon.stop()
            assert daemon.process.stderr is not None
            err = daemon.process.stderr.read()
            assert "warning: 1 Pub/Sub job(s) (restock) have nowhere to publish" in err
            assert (  # which service, and the mapping meant for it (trial 215: "wroker")
                "warning: 1 App Engine job(s) (sweep) have no local URL for their service "
                "(worker): their attempts fail FAILED_PRECONDITION until the daemon is started "
                "with --app-engine-url SERVICE=URL, or --app-engine-url URL for every service. "
                "--app-engine-url wroker=… names no job's service: did you mean worker?"
            ) in err
            # (a trial's misspelt Cloud Run job showed only as a 404 when it fired)
            assert (
                "warning: 1 job(s) (export) run a Cloud Run job no --cloud-run-jobs file defines: "
                "their attempts fail NOT_FOUND until one does (defined: none)." in err
            )
            assert (  # (trial 108: no word until the first run's 401)
                "warning: 1 job(s) (export) call the Cloud Run Admin API without an oauthToken: "
                "their attempts fail 401 UNAUTHENTICATED, as in production" in err
            )
            assert (
                "warning: 1 job(s) (report) send OIDC tokens stamped with the manual clock's "
                "time, 3 days from real time: a service that checks their iat and exp on its own "
                "clock refuses them; --token-time real stamps them with real time" in err
            )

    @pytest.mark.parametrize("absent", ["google.pubsub_v1", "google"])
    def test_the_pubsub_warning_names_the_extra_when_it_is_missing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, absent: str
    ) -> None:
        """Trial 54: after the README's first install the [pubsub] extra is missing too, and
        only the attempts' reason said so (trial 57: with no google package at all, the check
        itself was a traceback)."""
        monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
        (tmp_path / "sitecustomize.py").write_text(
            f"import sys\nsys.modules[{absent!r}] = None  # as if not installed\n"
        )
        monkeypatch.setenv(
            "PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
        )
        jobs = tmp_path / "jobs.yaml"
        topic = {"topicName": "projects/my-project/topics/restock", "data": "aGk="}
        jobs.write_text(
            json.dumps([{"name": "restock", "schedule": "0 6 * * *", "pubsubTarget": topic}])
        )
        with running_daemon("--in-memory", "--jobs", str(jobs)) as daemon:
            daemon.stop()
            assert daemon.process.stderr is not None
            err = daemon.process.stderr.read()
        assert "--with-pubsub (either needs pip install 'cloud-scheduler-emulator[pubsub]'; " in err


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("next '* * * * *' -n 100000", id="next"),
        pytest.param("init {tmp}/svc", id="init"),
    ],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path, command: str) -> None:
    cli = f"{shlex.quote(sys.executable)} -m scheduler_emulator {command.format(tmp=tmp_path)}"
    result = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {cli} | head -c 1 >/dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stderr == ""
    assert result.returncode in (0, 141)  # 141: stopped as by SIGPIPE, like any unix tool


def test_next_says_an_english_like_schedule_sends_no_header(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["next", "every day 02:00", "-n", "1", "--after", "2026-01-01T00:00:00Z"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "2026-01-01T02:00:00Z\n"
    assert "sends its job no X-CloudScheduler-ScheduleTime header" in captured.err


def test_next_given_a_job_id_says_where_a_daemons_jobs_next_times_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A trial typed ``next ny-0130`` for a daemon's job on a manual clock."""
    assert main(["next", "ny-0130"]) == 2
    error = capsys.readouterr().err
    assert "SCHEDULE: Schedule 'ny-0130' has 1 field" in error
    assert "`scheduler-emulator jobs --name ny-0130 --json`, nextFireTimes" in error
    for slip in ("0 2 * *", "@daily", "*/5"):  # a schedule's own slip, no job ID: no such hint
        assert main(["next", slip]) == 2  # (trial 85: `jobs --name @daily` was suggested)
        assert "--name" not in capsys.readouterr().err


@pytest.mark.parametrize("words", [["0", "2", "README.md", "docs"], ["every", "5", "minutes"]])
def test_next_given_an_unquoted_schedule_says_to_quote_it(
    capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    """Trial 226: ``next 0 2 * * *`` named the folder's files, the shell having expanded *."""
    with pytest.raises(SystemExit) as exited:
        main(["next", *words])
    assert exited.value.code == 2
    assert "; quote the schedule, as in next '0 2 * * *' (the shell splits" in (
        capsys.readouterr().err
    )


class TestLogFormat:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    @pytest.mark.parametrize(
        ("chosen", "log_file", "terminal", "expected"),
        [
            pytest.param(None, None, True, "text", id="terminal"),
            pytest.param(None, None, False, "json", id="pipe"),
            pytest.param(None, "log.jsonl", True, "json", id="log-file"),
            pytest.param("json", None, True, "json", id="asked-json"),
            pytest.param("text", "log.txt", False, "text", id="asked-text"),
        ],
    )
    def test_text_on_a_terminal_json_otherwise(
        self, chosen: str | None, log_file: str | None, terminal: bool, expected: str
    ) -> None:
        out = self.Terminal() if terminal else io.StringIO()
        assert log_format_for(chosen, log_file, out) == expected

    def test_the_daemon_writes_one_text_line_per_attempt(self, tmp_path: Path) -> None:
        log = tmp_path / "attempts.log"
        jobs = tmp_path / "jobs.yaml"
        jobs.write_text(json.dumps([{"name": "nightly", "schedule": "0 2 * * *", **TARGET}]))
        with running_daemon(
            "--in-memory", "--jobs", str(jobs), "--log-file", str(log), "--log-format", "text",
            "--clock", "manual", "--start", "2026-09-24T01:59:00Z",
        ) as daemon:  # fmt: skip
            daemon.post("/_emulator/clock:advance", {"seconds": 120})
        [line] = log.read_text().splitlines()
        assert line.startswith("2026-09-24T02:00:00Z  nightly  attempt 1  UNAVAILABLE  ")
        assert "  scheduled 2026-09-24T02:00:00Z  reason: URL_UNREACHABLE" in line


@pytest.mark.parametrize(
    ("grpc", "says"),
    [
        (True, "# REST and gRPC both on 127.0.0.1:8095."),
        (False, "# REST only on 127.0.0.1:8095: that daemon has no gRPC"),
        (None, "# REST and gRPC (with the [grpc] extra) on 127.0.0.1:8095."),
    ],
)
def test_env_init_says_whether_the_daemon_serves_grpc(grpc: bool | None, says: str) -> None:
    from scheduler_emulator.tools.client_recipes import client_notes

    notes = client_notes("127.0.0.1", 8095, grpc=grpc)
    assert notes[0].startswith(says)
    # A daemon without gRPC gets REST recipes only (a trial: gRPC-only snippets were noise)
    grpc_only = [line for line in notes if "sslCreds" in line or "grpc.NewClient" in line]
    assert bool(grpc_only) is (grpc is not False)
    assert any('client(transport="rest")' in line for line in notes)


@pytest.mark.parametrize(("uses_curl", "jobs", "noted"), [(False, 2000, True), (False, 99, False),
                                                         (True, 2000, False)])  # fmt: skip
def test_the_startup_line_says_how_to_send_faster_without_libcurl(
    uses_curl: bool, jobs: int, noted: bool
) -> None:
    """Trial 202: 2,000 jobs went out at 600 a second, and nothing said libcurl goes faster."""
    from scheduler_emulator.runtime import HttpTransport
    from scheduler_emulator.tools.client_recipes import sender_note

    transport = HttpTransport()
    transport.uses_curl = uses_curl
    note = sender_note(transport, jobs)
    assert (note == "") is not noted
    assert not noted or note.endswith("pip install 'cloud-scheduler-emulator[curl]')")


class TestAdminToken:
    @pytest.mark.parametrize("value", ["", "   "], ids=["empty", "blank"])
    def test_an_empty_token_from_the_environment_exits_2_naming_the_variable(
        self,
        value: str,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        monkeypatch.setenv(ADMIN_TOKEN_ENV, value)  # the subprocess inherits it
        code, _, err = run_command(
            capsys, "start", "--in-memory", "--port", "0", process=value == ""
        )
        assert code == 2, err
        assert "Traceback" not in err
        assert err.startswith(f"error: {ADMIN_TOKEN_ENV} is set but empty")
        assert "unprotected" in err

    def test_the_views_refuse_an_empty_token_as_start_does(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Trial 211: ``clock --admin-token ''`` (or the variable set to ``' '``) printed the
        clock of a daemon it could not have been meant for, exit 0."""
        code, _, err = run_command(capsys, "clock", "--port", "9", "--admin-token", "")
        assert code == 2 and "--admin-token: an empty token would leave /_emulator/" in err, err
        monkeypatch.setenv(ADMIN_TOKEN_ENV, " ")
        code, _, err = run_command(capsys, "clock", "--port", "9")
        assert (code, err.splitlines()[0]) == (2, f"error: {ADMIN_TOKEN_ENV} is set but empty "
            f"(' '), which would leave /_emulator/ unprotected; give it a non-empty token, or "
            f"unset it (unset {ADMIN_TOKEN_ENV}).")  # fmt: skip

    def test_the_flag_wins_over_the_variable_and_an_unset_variable_means_no_token(self) -> None:
        assert admin_token("flag", {ADMIN_TOKEN_ENV: ""}) == "flag"
        assert admin_token(None, {ADMIN_TOKEN_ENV: "secret"}) == "secret"
        assert admin_token(None, {}) is None
        # a secret file's newline (trial 166: a token nothing could match, started without a word)
        assert admin_token(None, {ADMIN_TOKEN_ENV: "secret\n"}) == "secret"
        # one no header can carry (trial 177: 100 kB locked /_emulator/ with 431 for everyone)
        with pytest.raises(ConfigurationError, match=f"{ADMIN_TOKEN_ENV}: the token is sent"):
            admin_token(None, {ADMIN_TOKEN_ENV: "x" * 100_000})


def test_a_view_at_a_host_name_that_does_not_resolve_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial's ``--host nosuch.invalid`` read as "no scheduler-emulator answers"."""

    def unknown(*args: object, **kwargs: object) -> None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    code, out, err = run_command(capsys, "jobs", "--host", "nosuch.invalid", "--port", "9")
    assert (code, out) == (2, "")
    assert err == (
        "error: cannot resolve the host name of http://nosuch.invalid:9; pass the --host and "
        "--port of the daemon's startup line.\n"
    )


def test_a_view_pointed_at_another_server_says_it_is_not_the_emulator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A wrong ``--port`` where another service answers (404, no error envelope; or 200 with
    text, which the views read as an empty listing) says so in one line, as a port where
    nothing answers does (trial users' finds)."""
    for status, body in ((404, b"<h1>Not Found</h1>"), (200, b"ok")):
        with serving(RecordingTarget(status=status, body=body)) as url:
            for view in ("jobs", "attempts", "runs", "skipped"):
                code, out, err = run_command(capsys, view, "--port", url.rsplit(":", 1)[1])
                assert (code, out) == (2, ""), (view, status)
                assert err.count("\n") == 1 and "not a scheduler-emulator's answer" in err, err
                assert "pass the --host and --port of its startup line" in err
                assert err.startswith(f"error: {url}/_emulator/"), err  # the URL first
                assert f" answered {status} " in err, err


def test_a_slow_clock_move_is_waited_for_and_a_slow_answer_is_not_called_no_daemon(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 86: ``clock --advance`` gave up after 30 s saying no daemon answers, while the
    daemon went on to finish the move (rerun, it would have moved the clock twice)."""
    from werkzeug.wrappers import Request, Response

    from scheduler_emulator.tools import views

    slow = threading.Event()  # never set: each slow answer waits its bound out

    @Request.application
    def daemon(request: Request) -> Response:
        if request.path != "/_emulator/clock":  # a move, or a listing: slower than the bound
            slow.wait(0.5)
        now = {"mode": "manual", "now": "2026-01-01T00:00:30Z", "nextDue": None}
        return Response(json.dumps(now), content_type="application/json")

    monkeypatch.setattr(views.DaemonClient.__init__, "__defaults__", (None, 0.2))
    with serving(daemon) as url:  # type: ignore[arg-type]
        port = url.rsplit(":", 1)[1]
        assert main(["clock", "--port", port, "--advance", "30s"]) == 0
        assert capsys.readouterr().out == "manual clock at 2026-01-01T00:00:30Z; nothing due\n"
        assert main(["jobs", "--port", port]) == 2
    assert capsys.readouterr().err == (
        f"error: the scheduler-emulator at {url} did not answer GET /_emulator/jobs within "
        "0.2 s; it may still be carrying it out (see its log).\n"
    )


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_directory_that_cannot_be_made_is_named_with_its_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Trial 176: ``start --data-dir /proc/xx`` and ``init /proc/x`` printed a bare
    ``[Errno 2] No such file or directory``."""
    assert main(["start", "--data-dir", "/proc/xx", "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        "error: --data-dir /proc/xx: cannot make it (No such file or directory).\n"
    )
    assert main(["init", "/proc/x"]) == 2
    assert capsys.readouterr().err == (
        "error: DIRECTORY /proc/x: cannot make it (No such file or directory).\n"
    )


def test_choice_flags_take_any_case() -> None:
    """Trial 213: ``--clock Manual`` was refused while ``jobs --state enabled`` was taken."""
    args = build_parser().parse_args(
        ["start", "--clock", "Manual", "--dst-policy", "VIXIE", "--token-time", "Real"]
    )
    assert (args.clock, args.dst_policy, args.token_time) == ("manual", "vixie", "real")


def test_replay_given_faults_as_a_flag_says_where_a_scenarios_go(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Trial 222: ``replay s.yaml --faults f.yaml`` said only "unrecognized arguments"."""
    with pytest.raises(SystemExit) as exited:
        main(["replay", "s.yaml", "--faults", "f.yaml"])
    assert exited.value.code == 2
    assert "; a scenario's fault rules go under its faults: key" in capsys.readouterr().err
