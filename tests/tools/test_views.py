"""``scheduler-emulator jobs`` and ``attempts`` against a running daemon (the Orders example
on a manual clock, with a job whose name differs from its timer route)."""

from __future__ import annotations

import argparse
import io
import json
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from scheduler_emulator import Attempt
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.tools import views
from scheduler_emulator.tools.timeline import render_table
from scheduler_emulator.tools.views import (
    ATTEMPT_HEADERS,
    EXECUTION_HEADERS,
    TABLE_WIDTH,
    _follow,
    attempt_rows,
    execution_rows,
    job_rows,
    run_rows,
    skipped_rows,
    took,
)
from tests.daemon import Daemon, serving
from tests.dashboard_scene import orders_daemon
from tests.support import RecordingTarget, run_command, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with orders_daemon() as running:
        requests.post(
            running.url + "/_emulator/clock:advance", json={"seconds": 86400}, timeout=60
        ).raise_for_status()
        yield running


def port(daemon: Daemon) -> str:
    return daemon.url.rsplit(":", 1)[1]


def test_jobs_prints_an_aligned_table(daemon: Daemon, capsys: pytest.CaptureFixture[str]) -> None:
    done = cli("jobs", "--port", port(daemon))  # the views' one run as a real process
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["JOB", "STATE", "SCHEDULE", "TIME", "ZONE", "LAST", "NEXT"]
    nightly = next(row for row in rows if row.startswith("nightly "))
    assert "2026-03-02T02:00:00Z" in nightly
    assert header.index("STATE") == nightly.index("ENABLED")
    assert max(len(line) for line in rows) <= 120
    _, wide, _ = run_command(capsys, "jobs", "--port", port(daemon), "--wide")
    assert "READS AS" in wide and "at 02:00, every day" in wide


def test_jobs_filters_by_name_and_state(daemon: Daemon, capsys: pytest.CaptureFixture[str]) -> None:
    """A trial's 5,000 jobs had no filter in the view, though the endpoint has two."""
    _, out, _ = run_command(capsys, "jobs", "--port", port(daemon), "--name", "NIGHT")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["nightly"]
    _, out, _ = run_command(capsys, "jobs", "--port", port(daemon), "--state", "paused")
    assert out == "(no jobs)\n"


def test_jobs_failed_lists_the_jobs_whose_last_attempt_failed(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 172: among 5,000 jobs the failing ones could only be found by reading them all."""
    _, out, _ = run_command(capsys, "jobs", "--port", port(daemon), "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    failing = {r["id"] for r in rows if r["lastAttempt"] and r["lastAttempt"]["code"] != "OK"}
    assert "hourly-ping" in failing and len(failing) < len(rows)
    _, out, _ = run_command(capsys, "jobs", "--port", port(daemon), "--failed", "--wide")
    header, *lines = out.splitlines()
    assert {line.split()[0] for line in lines} == failing and header.endswith("REASON")
    ping = next(line for line in lines if line.startswith("hourly-ping "))  # (trial 178: why)
    last = next(r for r in rows if r["id"] == "hourly-ping")["lastAttempt"]
    assert ping.endswith(f"HTTP 500: {last['reason']}") and last["responseStatus"] == 500
    assert "timer route 'cleanup' is not the job's name" in ping
    answer = requests.get(daemon.url + "/_emulator/jobs", {"failed": "maybe"}, timeout=10)
    assert answer.status_code == 400 and "failed must be one of false, true" in answer.text


def test_attempts_say_why_a_job_failed(daemon: Daemon, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_command(
        capsys, "attempts", "--port", port(daemon), "--job", "hourly-ping", "--last", "3", "--wide"
    )
    assert code == 0, err
    header, *rows = out.splitlines()
    assert "SCHEDULED" in header and "REASON" in header and len(rows) == 3
    assert all(
        "empty body — emulator's hint: timer route 'cleanup' is not the job's name 'hourly-ping'"
        in r
        for r in rows
    )
    assert rows[-1].startswith("2026-03-02T00:00:00.000000Z  hourly-ping")


@pytest.mark.parametrize("view", ["attempts", "runs"])
def test_the_newest_n_say_when_there_are_more(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], view: str
) -> None:
    """A trial read the newest 20 attempts as all of them."""
    args = (view, "--port", port(daemon), "--job", "hourly-ping")
    _, _, cut = run_command(capsys, *args, "--last", "3")
    _, _, whole = run_command(capsys, *args, "--last", "1000")
    assert cut == (
        f"note: the newest 3 {view}, of more; a larger --last N or --since RFC3339 lists more.\n"
    )
    assert whole == ""


def test_attempts_since_an_instant(daemon: Daemon, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_command(capsys, "attempts", "--port", port(daemon), "--job", "report",
                            "--since", "2026-03-01T22:00:00Z", "--wide")  # fmt: skip
    rows = out.splitlines()[1:]
    assert [r.split()[4] for r in rows] == ["500", "200"]  # the 23:00 run: failed, retried
    assert "The server could not complete this request" in rows[0]  # the answer's text


@pytest.mark.parametrize("view", ["attempts", "runs"])
def test_since_a_duration_counts_back_from_the_daemons_clock(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], view: str
) -> None:
    """Trial 122 asked for a relative --since. The manual clock reads 2026-03-02T00:00Z, so
    2h ago is 22:00 the day before, whatever the machine's clock says."""
    now = requests.get(daemon.url + "/_emulator/clock", timeout=30).json()["now"]
    assert now.startswith("2026-03-02T00:00:00")
    args = (view, "--port", port(daemon), "--job", "report", "--wide")
    _, relative, _ = run_command(capsys, *args, "--since", "2h")
    _, absolute, _ = run_command(capsys, *args, "--since", "2026-03-01T22:00:00Z")
    _, wider, _ = run_command(capsys, *args, "--since", "1d")
    assert relative == absolute and len(relative.splitlines()) >= 2
    assert len(wider.splitlines()) > len(relative.splitlines())
    code, _, err = run_command(capsys, view, "--port", port(daemon), "--since", "yesterday")
    assert code == 2 and 'not a time or a duration: "yesterday"' in err
    code, _, err = run_command(capsys, view, "--port", port(daemon), "--since", "36526d")
    assert code == 2 and '--since reaches back at most 36525d (100 years); got "36526d"' in err


def test_attempts_failed_lists_only_failures(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    """The newest N failed attempts (the report run's 500, not its retry's 200), as the
    endpoint's failed=true filter gives them; a bad value of it is a 400 naming it."""
    args = ("attempts", "--port", port(daemon), "--job", "report", "--wide")
    _, out, _ = run_command(capsys, *args, "--since", "2026-03-01T22:00:00Z", "--failed")
    assert [r.split()[4] for r in out.splitlines()[1:]] == ["500"]
    _, out, _ = run_command(capsys, *args, "--last", "2", "--failed", "--json")
    failed = [json.loads(line) for line in out.splitlines()]
    assert len(failed) == 2 and all(a["code"] == "INTERNAL" for a in failed)
    bad = requests.get(daemon.url + "/_emulator/attempts", params={"failed": "yes"}, timeout=30)
    assert bad.status_code == 400 and "failed must be one of false, true" in bad.text


def test_bad_input_exits_2_naming_it(daemon: Daemon, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_command(capsys, "attempts", "--port", port(daemon), "--since", "yesterday")
    assert code == 2 and "--since" in err
    code, _, err = run_command(capsys, "executions", "--port", port(daemon), "--state", "bogus")
    assert code == 2 and "--state: must be one of RUNNING, SUCCEEDED" in err and "'bogus'" in err
    since = ("--since", "2026-09-24T00:00:00Z")
    for view in ("attempts", "runs"):
        code, _, err = run_command(capsys, view, "--port", port(daemon), "--last", "1", *since)
        assert code == 2 and "--since: not allowed with argument --last" in err  # not ignored
    for view in ("attempts", "runs", "skipped", "executions"):  # out of range: as a non-number
        for last in ("0", "-1", "abc", "9" * 19):
            code, _, err = run_command(capsys, view, "--port", port(daemon), "--last", last)
            wanted = (
                f"--last: must be a whole number of at least 1 (18 digits at most); got {last!r}"
            )
            assert code == 2 and wanted in err
            # the error and a pointer to --help, not argparse's usage block above them
            assert (
                err.splitlines()[1] == f"(`scheduler-emulator {view} --help` lists what it takes.)"
            )
            assert "usage:" not in err and err.count("\n") == 2
    code, _, err = run_command(capsys, "skipped", "--port", port(daemon), "--follow")
    assert (code, err.splitlines()) == (2, [  # the command's help, not the top level's
        "scheduler-emulator skipped: error: unrecognized arguments: --follow",
        "(`scheduler-emulator skipped --help` lists what it takes.)",
    ])  # fmt: skip
    code, _, err = run_command(capsys, "jobs", "--port", port(daemon), "--nmae", "x")
    assert code == 2 and "arguments: --nmae x; did you mean --name?" in err  # (trial 72)
    for state in (("--state", "failed"), ("--state=GAVE_UP",)):  # REST's ?state= (trial 219)
        code, _, err = run_command(capsys, "runs", "--port", port(daemon), *state)
        flag = "--failed" if "failed" in state else "--gave-up"
        assert code == 2 and f"arguments: {' '.join(state)}; did you mean {flag}?" in err
    done = cli("jobs", "--port", "9")  # as a real process
    assert done.returncode == 2 and "no scheduler-emulator answers" in done.stderr


def test_attempts_run_lists_one_runs_attempts(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 122: ``runs`` shows a RUN id, which only the API's ``run=`` took; trial 123: its
    ``--last`` was then ignored."""
    _, listed, _ = run_command(capsys, "runs", "--port", port(daemon), "--json", "--last", "20")
    runs = [json.loads(line) for line in listed.splitlines()]
    run = next(run for run in runs if len(run["attempts"]) > 1)  # the report's retried runs
    code, out, _ = run_command(capsys, "attempts", "--port", port(daemon), "--run",
                               str(run["id"]), "--json")  # fmt: skip
    assert code == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == [
        attempt["id"] for attempt in run["attempts"]
    ]
    _, out, err = run_command(capsys, "attempts", "--port", port(daemon), "--run",
                              str(run["id"]), "--json", "--last", "1")  # fmt: skip
    assert [json.loads(line)["id"] for line in out.splitlines()] == [run["attempts"][-1]["id"]]
    assert "note: the newest 1 attempt, of more" in err
    code, _, err = run_command(capsys, "attempts", "--port", port(daemon), "--run", "1", "-f")
    assert code == 2 and "drop --run or --follow" in err
    args = ("attempts", "--port", port(daemon), "--run")  # an unknown run is said so, exit 2
    code, _, err = run_command(capsys, *args, "999999", "--failed")
    assert code == 2 and "no run 999999: --run takes a RUN that `runs` lists" in err
    code, out, _ = run_command(capsys, *args, str(run["id"]), "--since", "2100-01-01T00:00:00Z")
    assert (code, out) == (0, "(no attempts)\n")  # a known run with none since: no error


def _interruptible() -> None:
    """In the child before it runs: Ctrl-C's SIGINT handled as a terminal does, even when this
    test runs where SIGINT is ignored (a shell's background job), which the child would inherit
    and so never see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_follow_prints_attempts_as_they_finish(daemon: Daemon) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "scheduler_emulator", "attempts", "--port", port(daemon),
         "--job", "nightly", "--follow"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        preexec_fn=_interruptible,
    ) as process:  # fmt: skip
        lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout
        threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
        try:
            assert lines.get(timeout=30).startswith("TIME ")
            assert "2026-03-01T02:00:00.000Z  nightly" in lines.get(timeout=30)
            requests.post(
                daemon.url + "/_emulator/clock:advance", json={"seconds": 86400}, timeout=60
            ).raise_for_status()
            assert "2026-03-02T02:00:00.000Z  nightly" in lines.get(timeout=30)
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()  # else leaving the with block waits for it for ever
                raise
    assert process.returncode == 0


def test_the_text_log_works_into_a_pipe_and_the_startup_line_says_so() -> None:
    from tests.daemon import running_daemon

    with running_daemon(
        "--in-memory", "--clock", "manual", "--start", "2026-09-24T01:59:00Z",
        "--log-format", "text",
    ) as piped:  # fmt: skip
        job = {"name": "projects/my-project/locations/us-central1/jobs/nightly",
               "schedule": "0 2 * * *",
               "httpTarget": {"uri": "http://127.0.0.1:9/_triggers/timer/nightly"}}  # fmt: skip
        piped.post("/v1/projects/my-project/locations/us-central1/jobs", job).raise_for_status()
        piped.post("/_emulator/clock:advance", {"seconds": 120}).raise_for_status()
        wait_for(lambda: any("nightly  attempt 1" in line for line in piped.output), 30)
    text = "".join(piped.output)
    assert "execution log: one text line per attempt on stdout; --log-format json" in text
    assert (
        "2026-09-24T02:00:00Z  nightly  attempt 1  UNAVAILABLE  0 ms  scheduled "
        "2026-09-24T02:00:00Z  reason: URL_UNREACHABLE-UNREACHABLE_CONNECTION_ERROR" in text
    )


def test_the_json_log_says_how_to_get_text() -> None:
    from tests.daemon import running_daemon

    with running_daemon("--in-memory") as piped:
        wait_for(lambda: len(piped.output) >= 2, 30)
    assert (
        "execution log: JSON lines (Cloud Logging entries) on stdout; --log-format text"
        in (piped.output[1])
    )


def test_the_jobs_table_shows_a_last_attempt_still_in_flight_as_such() -> None:
    row = {
        "id": "hangs",
        "state": "ENABLED",
        "schedule": "0 0 1 1 *",
        "timeZone": "Etc/UTC",
        "scheduleText": "at 00:00, on the 1st, in January",
        "lastAttempt": {"time": "2026-12-01T19:43:30Z", "code": None, "message": ""},
        "nextFireTimes": ["2027-01-01T00:00:00Z"],
        "target": "POST http://127.0.0.1:18702/run",
    }
    [cells] = job_rows([row])
    assert cells[4] == "(in flight) 2026-12-01T19:43:30Z"


def test_took_is_the_attempts_duration_or_a_dash_in_flight() -> None:
    start = datetime(2026, 3, 1, 2, tzinfo=UTC)
    attempt = Attempt(1, "projects/my-project/locations/l/jobs/j", 1, 1, None, start, {})
    assert took(attempt) == "-"
    attempt.end_time = start + timedelta(milliseconds=12)
    assert took(attempt) == "0.012s"
    attempt.end_time = start + timedelta(seconds=15, microseconds=4_600)
    assert took(attempt) == "15.005s"


def test_a_long_compact_json_reason_wraps_between_its_fields() -> None:
    reason = (
        '{"error":{"code":503,"message":"the ledger is locked","status":"UNAVAILABLE",'
        '"details":[{"retryAfter":"30s","url":"https://ledger.example/locks?id=1234567"}]}}'
    )
    lines = render_table(["JOB", "REASON"], [["nightly", reason]], width=40)
    pieces = [line.strip() for line in lines[1:]]
    pieces[0] = pieces[0].removeprefix("nightly").strip()
    assert "".join(pieces) == reason and len(pieces) > 3
    assert all(piece[-1] in ',:;&?={}[]"' or piece == pieces[-1] for piece in pieces), pieces
    assert '"https://ledger.example/locks?' in pieces  # a URL is not cut after its scheme


def test_a_word_that_fits_a_line_is_not_cut() -> None:
    """A trial copied a hinted command broken at ``--`` / ``cloud-run-jobs``."""
    reason = (
        "start one, then set PUBSUB_EMULATOR_HOST=127.0.0.1:8085 or pass --pubsub-emulator-host"
    )
    lines = render_table(["JOB", "REASON"], [["tick", reason]], width=42)
    assert [line[6:] for line in lines[1:]] == [
        "start one, then set",
        "PUBSUB_EMULATOR_HOST=127.0.0.1:8085",
        "or pass --pubsub-emulator-host",
    ]


def test_a_next_cell_before_the_reason_wraps_at_its_spaces() -> None:
    """Trial 186: ``jobs --failed`` (NEXT, then REASON) made a 170-column table in a pipe."""
    nxt = "2026-09-24T11:25:00Z; forced run's retry 2026-09-24T11:20:35Z"
    lines = render_table(
        ["JOB", "NEXT", "REASON"], [["tick", nxt, "HTTP 500: boom " * 4]], width=60
    )
    assert max(map(len, lines)) <= 60, lines
    column = [line[6:].split("  ")[0] for line in lines[1:]]
    assert " ".join(column) == nxt and "2026-09-24T11:20:35Z" in column  # times kept whole


def test_exit_codes_wrap_at_their_spaces_before_a_scheduler_jobs_id() -> None:
    """Trial 204: ``executions`` in a pipe cut ``broken-trigger`` for its EXIT CODES."""
    row = ["2026-12-07T18:40:12Z", "nightly-batch-mwn08", "CANCELLED", "0 / 3",
           "0:cancelled 1:cancelled", "broken-trigger", "task 0: cancelled; 1 task(s) never "
           "started (cancelled)"]  # fmt: skip
    lines = render_table(EXECUTION_HEADERS, [row], width=120)
    assert max(map(len, lines)) <= 120 and "  broken-trigger  " in lines[1], lines
    assert "  1:cancelled  " in lines[2]


def test_a_long_code_wraps_between_its_words() -> None:
    reason = "URL_UNREACHABLE-UNREACHABLE_CONNECTION_ERROR. Connection refused."
    lines = render_table(["JOB", "REASON"], [["tick", reason]], width=37)
    assert [line[6:] for line in lines[1:]] == [
        "URL_UNREACHABLE-UNREACHABLE_",
        "CONNECTION_ERROR. Connection",
        "refused.",
    ]


def test_a_forced_run_is_scheduled_forced_with_the_header_it_sent() -> None:
    start = datetime(2026, 3, 1, 1, 23, tzinfo=UTC)
    header, nominal = "2026-03-01T03:00:00Z", datetime(2026, 3, 1, 3, tzinfo=UTC)
    forced = Attempt(1, "projects/my-project/locations/l/jobs/j", 1, 1, header, start, {},
                     code="OK", forced=True, nominal=nominal)  # fmt: skip
    scheduled = replace(forced, forced=False)
    assert [row[6] for row in attempt_rows([forced, scheduled])] == [
        "forced, sent 2026-03-01T03:00:00Z",
        "2026-03-01T03:00:00Z",
    ]
    run = {"job": "j", "id": 1, "scheduleTime": header, "nominalTime": header, "forced": True}
    assert run_rows([run])[0][0] == "forced, sent 2026-03-01T03:00:00Z"


def test_last_and_next_times_show_milliseconds_and_wide_microseconds() -> None:
    """A trial's system-clock ``jobs`` LAST and NEXT and ``runs`` NEXT ATTEMPT showed
    microseconds where ``attempts`` TIME shows milliseconds (and squeezed REASON)."""
    job = {"id": "j", "state": "ENABLED", "schedule": "* * * * *", "timeZone": "Etc/UTC",
           "scheduleText": "every minute", "target": "POST http://t/",
           "lastAttempt": {"code": "UNAVAILABLE", "time": "2026-12-04T01:53:00.000413Z"},
           "nextAttemptTime": "2026-12-04T01:53:40.030873Z", "nextFireTimes": []}  # fmt: skip
    assert job_rows([job])[0][4:6] == [
        "UNAVAILABLE 2026-12-04T01:53:00.000Z", "retry 2026-12-04T01:53:40.030Z"
    ]  # fmt: skip
    assert job_rows([job], wide=True)[0][5:7] == [
        "UNAVAILABLE 2026-12-04T01:53:00.000413Z", "retry 2026-12-04T01:53:40.030873Z"
    ]  # fmt: skip
    first = {"job": "j", "runId": 1, "attempt": 1, "startTime": "2026-12-04T01:55:00.000502Z",
             "reason": "HTTP 500"}  # fmt: skip
    run = {"job": "j", "id": 1, "nominalTime": "2026-12-04T01:53:00Z", "attempts": [first],
           "nextAttemptTime": "2026-12-04T01:55:40.043201Z"}  # fmt: skip
    assert run_rows([run])[0][5] == "2026-12-04T01:55:40.043Z"
    # --wide: when the first attempt started (a run the emulator delayed shows how late)
    wide = dict(zip(views.WIDE_RUN_HEADERS, run_rows([run], wide=True)[0], strict=True))
    assert wide["FIRST ATTEMPT"] == "2026-12-04T01:55:00.000502Z"
    assert wide["NEXT ATTEMPT"] == "2026-12-04T01:55:40.043201Z"
    whole = {**job, "lastAttempt": {"code": "OK", "time": "2026-09-25T02:00:05Z"}}
    assert job_rows([whole])[0][4] == "OK 2026-09-25T02:00:05Z"  # a manual clock's, as it is


def test_a_runs_reason_is_its_own_attempts_not_a_concurrent_copys() -> None:
    """Trial 224: a concurrent copy's 409, ending after the original, hid the lost answer the
    run was retried for."""
    at = "2026-12-04T02:00:00Z"
    lost = {
        "job": "j",
        "runId": 1,
        "attempt": 1,
        "startTime": at,
        "debugInfo": "URL_UNREACHABLE-UNREACHABLE_LOST_ACK.",
        "reason": "injected lost ack: the answer was dropped",
    }
    copy = {
        **lost,
        "debugInfo": "Injected duplicate delivery. …",
        "reason": "injected duplicate delivery: Conflict: This scheduled run is in progress",
    }
    retry = {**lost, "attempt": 2, "debugInfo": "", "reason": ""}
    run = {"job": "j", "id": 1, "nominalTime": at, "state": "succeeded",
           "attempts": [lost, copy, retry]}  # fmt: skip
    assert run_rows([run])[0][-1].endswith(
        "attempt 1 failed: injected lost ack: the answer was dropped"
    )


def test_a_run_that_started_a_minute_late_or_more_says_so_in_its_reason() -> None:
    """A trial could not tell a run the emulator delayed (a restart runs what it owed late)
    from an on-time one without ``--wide``."""

    def run(start: str, forced: bool = False, reason: str = "") -> dict[str, Any]:
        first = {"job": "j", "runId": 1, "attempt": 1, "startTime": start, "reason": reason}
        copy = {**first, "duplicate": True, "reason": ""}
        return {"job": "j", "id": 1, "nominalTime": "2026-12-04T02:00:00Z", "forced": forced,
                "attempts": [first, copy]}  # fmt: skip

    reasons = [
        row[-1]
        for row in run_rows(
            [
                run("2026-12-04T02:07:00.4Z", reason="HTTP 500"),
                run("2026-12-04T02:00:59.9Z"),  # within the minute
                run("2026-12-04T02:07:00Z", forced=True),  # a forced run has no lateness
            ]
        )
    ]
    assert reasons == [
        "started 7.0 min late; 1 duplicate delivery (2xx again); HTTP 500",
        "1 duplicate delivery (2xx again)",
        "1 duplicate delivery (2xx again)",
    ]


def test_next_reads_as_the_scheduletime_header_will_in_the_jobs_zone() -> None:
    """A trial: ``jobs`` showed a Europe/Berlin job's NEXT in UTC where ``runs`` and
    ``attempts`` show its SCHEDULED as the header it sent (``+01:00``)."""
    job = {"id": "j", "state": "ENABLED", "schedule": "0 9 * * *", "timeZone": "Europe/Berlin",
           "scheduleText": "", "target": "", "lastAttempt": None, "nextAttemptTime": None,
           "nextFireTimes": ["2026-12-08T08:00:00Z"]}  # fmt: skip
    assert job_rows([job])[0][5] == "2026-12-08T09:00:00+01:00"
    assert job_rows([{**job, "timeZone": "Etc/UTC"}])[0][5] == "2026-12-08T08:00:00Z"
    # every time zone the API takes: a trial's "utc" (any case is UTC) was a traceback
    assert job_rows([{**job, "timeZone": "utc"}])[0][5] == "2026-12-08T08:00:00Z"
    # a schedule that never fires reads so, not as a paused job's "-" (trial 207)
    never = {**job, "schedule": "0 0 31 2 *", "nextFireTimes": []}
    assert job_rows([never])[0][5] == "never"
    assert job_rows([{**never, "state": "PAUSED"}])[0][5] == "-"


def test_the_attempts_table_shows_how_long_each_took(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run_command(
        capsys, "attempts", "--port", port(daemon), "--job", "nightly", "--last", "1"
    )
    header, row = out.splitlines()
    assert header.split()[4:7] == ["CODE", "TOOK", "SCHEDULED"]
    assert row[header.index("CODE") :].split()[:2] == ["OK", "0.000s"]  # a manual clock's attempt


def hourly_attempt(
    number: int, *, status: int | None = 200, code: str | None = "OK", debug_info: str = ""
) -> Attempt:
    """Attempt ``number`` of job ``report``, begun ``number`` hours after 2026-03-01T02:00Z and
    ended a second later (in flight with ``code`` ``None``)."""
    begun = datetime(2026, 3, 1, 2, 0, tzinfo=UTC) + timedelta(hours=number)
    return Attempt(
        number, "projects/p/locations/l/jobs/report", number, 1, iso_z(begun), begun,
        {"method": "POST", "url": "http://127.0.0.1:9/x", "headers": {}},
        end_time=None if code is None else begun + timedelta(seconds=1),
        response_status=status, code=code, debug_info=debug_info, nominal=begun,
    )  # fmt: skip


def looking(looks: list[float], allowed: int) -> Callable[[float], None]:
    """A ``sleep`` for ``_follow`` that notes each wait in ``looks`` and, after ``allowed``
    looks at the daemon, stops it as Ctrl-C would."""

    def sleep(seconds: float) -> None:
        looks.append(seconds)
        if len(looks) > allowed:
            raise KeyboardInterrupt

    return sleep


def test_follow_prints_every_line_of_a_wrapped_reason() -> None:
    """A REASON that wraps onto continuation lines is printed whole under ``--follow``, its row
    with its time and job (a trial user saw only the reason's last line)."""
    reason = "URL_UNREACHABLE-UNREACHABLE_5xx. " + "The target said no, at length. " * 6

    def failed(number: int) -> Attempt:
        return hourly_attempt(number, status=500, code="INTERNAL", debug_info=reason)

    class Client:
        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            return {"attempts": [failed(2).to_json(), failed(3).to_json()]}

    looks: list[float] = []
    out = io.StringIO()
    assert _follow(Client(), {}, [failed(1)], out, looking(looks, 1)) == 0  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    rows = [line for line in lines[1:] if not line.startswith(" ")]
    assert [row.split()[0] for row in rows] == [
        "2026-03-01T03:00:00.000Z", "2026-03-01T04:00:00.000Z", "2026-03-01T05:00:00.000Z"
    ]  # fmt: skip
    whole = [failed(1), failed(2), failed(3)]
    assert len(lines) > 4  # the reasons wrapped: every line is there, as a table prints them
    assert lines == render_table(ATTEMPT_HEADERS, attempt_rows(whole), width=TABLE_WIDTH)


def test_follow_names_a_retry_after_a_lost_ack_shown_earlier_a_duplicate() -> None:
    """A trial's ``--follow`` printed a lost acknowledgement's retry with no REASON, where the
    same rows without ``--follow`` said duplicate (the two came in different looks)."""
    lost = hourly_attempt(
        1, code="UNAVAILABLE", debug_info="URL_UNREACHABLE-UNREACHABLE_LOST_ACK. Injected: the "
        "target answered 200 but the response was lost.",
    )  # fmt: skip
    retry = replace(hourly_attempt(2), run_id=1, attempt=2, schedule_time=lost.schedule_time)

    class Client:
        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            return {"attempts": [retry.to_json()]}

    out = io.StringIO()
    assert _follow(Client(), {}, [lost], out, looking([], 1)) == 0  # type: ignore[arg-type]
    printed = " ".join(out.getvalue().split())  # (the REASON wraps under its column)
    assert "OK 1.000s 2026-03-01T03:00:00Z duplicate: the target already answered 200 to " in (
        printed
    )


def test_a_duplicates_note_names_the_answer_the_window_left_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 224: a row's duplicate note came and went with --last N (the earlier answer of
    its run in the window or not)."""
    lost = hourly_attempt(
        1, code="UNAVAILABLE", debug_info="URL_UNREACHABLE-UNREACHABLE_LOST_ACK. Injected: the "
        "target answered 200 but the response was lost.",
    )  # fmt: skip
    retry = replace(hourly_attempt(2), run_id=1, attempt=2, schedule_time=lost.schedule_time)
    asked: list[dict[str, object]] = []

    def call(self: Any, method: str, path: str, params: Any = None, **kwargs: Any) -> Any:
        asked.append(params)
        whole = params.get("run") is not None  # the run's, else the newest first
        return {"attempts": [a.to_json() for a in ([lost, retry] if whole else [retry, lost])]}

    monkeypatch.setattr(views.DaemonClient, "call", call)
    for last in ("1", "2"):
        code, out, _ = run_command(capsys, "attempts", "--last", last)
        assert code == 0
        retry_row = " ".join(out.split()).split("2026-03-01T04:00:00.000Z")[1]
        assert "duplicate: the target already answered 200 to attempt 1 of this run" in retry_row
    assert {"job": lost.job, "run": 1, "pageSize": views.PAGE_SIZE} in asked


def test_follow_prints_an_attempt_as_it_ends_and_holds_back_no_other() -> None:
    """An attempt in flight (a slow target) neither holds back one after it that ends sooner
    nor goes unprinted when it ends (a trial user's --follow stalled behind one)."""

    def attempt(number: int, ended: bool) -> Attempt:
        return hourly_attempt(number) if ended else hourly_attempt(number, status=None, code=None)

    class Client:
        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            if params["pageSize"] == 1:  # the attempt in flight, looked up again by its id
                assert params["pageToken"] == "0"
                return {"attempts": [attempt(1, ended=len(looks) > 1).to_json()]}
            new = [attempt(2, ended=True).to_json()] if params["pageToken"] == "1" else []
            return {"attempts": new}

    looks: list[float] = []
    out = io.StringIO()
    follower = looking(looks, 2)
    assert _follow(Client(), {}, [attempt(1, ended=False)], out, follower) == 0  # type: ignore[arg-type]
    header, *lines = out.getvalue().splitlines()
    assert header.startswith("TIME ")
    rows = [line for line in lines if not line.startswith("TIME ")]  # (again when TOOK widened)
    assert [row.split()[0] for row in rows] == [
        "2026-03-01T04:00:00.000Z", "2026-03-01T03:00:00.000Z"
    ]  # fmt: skip


def test_follow_waits_for_a_daemon_that_restarts_and_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Trial 86: an all-day ``attempts --follow`` ended with an error at a daemon's restart."""
    calls: list[str] = []

    class Client:
        base = "http://127.0.0.1:9"

        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            calls.append(str(params.get("pageToken") or params.get("order")))
            if len(calls) in (1, 2):  # the follow's look, then the first look for its return
                raise ConfigurationError(f"the scheduler-emulator at {self.base} stopped "
                                         "answering (stopped?).")  # fmt: skip
            if params.get("order") == "newest":  # back, on its data directory
                return {"attempts": [hourly_attempt(1).to_json()]}
            return {"attempts": [hourly_attempt(2).to_json()] if calls[-1] == "1" else []}

    out = io.StringIO()
    assert _follow(Client(), {}, [hourly_attempt(1)], out, looking([], 4)) == 0  # type: ignore[arg-type]
    assert calls[:4] == ["1", "newest", "newest", "1"]  # the same cursor after the return
    rows = [line.split()[0] for line in out.getvalue().splitlines()[1:]]
    assert rows == ["2026-03-01T03:00:00.000Z", "2026-03-01T04:00:00.000Z"]
    assert capsys.readouterr().err == (
        "note: the scheduler-emulator at http://127.0.0.1:9 stopped answering (stopped?). "
        "--follow waits for it to answer again (Ctrl-C to stop).\n"
        "note: http://127.0.0.1:9 answers again.\n"
    )


def test_follow_prints_the_header_again_when_a_column_widens() -> None:
    """Rows that widen a column (the first after an empty start, a longer code) come under the
    header again, aligned to it: a trial user saw a header that lined up with no row."""

    class Client:
        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            late = hourly_attempt(2, status=None, code="DEADLINE_EXCEEDED")
            new = {"0": [hourly_attempt(1)], "1": [late]}.get(str(params.get("pageToken")), [])
            return {"attempts": [a.to_json() for a in new]}

    out = io.StringIO()
    assert _follow(Client(), {}, [], out, looking([], 2)) == 0  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("TIME ")]
    assert headers == [0, 1, 3] and len(lines) == 5
    for at in headers[1:]:
        header, row = lines[at], lines[at + 1]
        assert row[header.index("CODE") :].split()[0] in ("OK", "DEADLINE_EXCEEDED")
        assert row[header.index("SCHEDULED") :].startswith("2026-03-01T0")


def test_follow_failed_prints_only_the_attempts_that_fail() -> None:
    """With ``--failed`` an attempt in flight is still watched, and printed only if it fails."""

    def attempt(number: int, code: str | None) -> Attempt:
        status = {None: None, "OK": 200, "INTERNAL": 500}[code]
        return hourly_attempt(number, status=status, code=code)

    class Client:
        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            assert "failed" not in params  # following, the filter is the view's
            if params["pageSize"] == 1:  # the attempt in flight, looked up again: it failed
                return {"attempts": [attempt(1, "INTERNAL").to_json()]}
            new = [attempt(2, "OK"), attempt(3, "INTERNAL")] if params["pageToken"] == "1" else []
            return {"attempts": [a.to_json() for a in new]}

    out = io.StringIO()
    shown = [attempt(0, "OK"), attempt(1, None)]
    follower = looking([], 1)
    assert _follow(Client(), {}, shown, out, follower, failed=True) == 0  # type: ignore[arg-type]
    rows = [line for line in out.getvalue().splitlines() if not line.startswith("TIME ")]
    assert [row.split()[4] for row in rows] == ["INTERNAL", "INTERNAL"]  # attempts 1 and 3


def test_follow_failed_last_n_starts_with_the_newest_n_failures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trial 122: ``attempts --failed --last 2 --follow`` took the newest 2 attempts of any
    outcome, then dropped the OK ones: it printed the header and no row."""
    history = [hourly_attempt(1, status=500, code="INTERNAL"), hourly_attempt(2),
               hourly_attempt(3), hourly_attempt(4, status=None, code=None)]  # fmt: skip

    class Client:
        def __init__(self, *args: object) -> None:
            """As the view makes one."""

        def pages(self, path: str, key: str, params: dict[str, object]) -> Iterator[Any]:
            failing = params.get("failed") == "true"
            return (a.to_json() for a in history[::-1] if not failing or a.code not in (None, "OK"))

        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            return {"attempts": [a.to_json() for a in history[::-1]]}

    monkeypatch.setattr(views, "DaemonClient", Client)
    args = argparse.Namespace(host="h", port=1, admin_token=None, job=None, failed=True,
                              follow=True, since=None, last=2, wide=False, json=True)  # fmt: skip
    out = io.StringIO()
    assert views.cmd_attempts(args, out, looking([], 0)) == 0
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == [1]


def test_follow_keeps_only_the_widest_rows_and_stays_aligned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A follow of days re-renders a few rows per look, not every row printed so far (which grew
    without bound), and a row printed late still lines up with the header."""
    laid_out: list[int] = []

    def render(headers: Sequence[str], rows: Sequence[list[str]], **kwargs: Any) -> list[str]:
        laid_out.append(len(rows))
        return render_table(headers, rows, **kwargs)

    monkeypatch.setattr(views, "render_table", render)
    wide = hourly_attempt(1, status=500, code="INTERNAL", debug_info="URL_ERROR. Too long. " * 3)

    class Client:
        def get(self, path: str, params: dict[str, object]) -> dict[str, object]:
            number = int(str(params["pageToken"])) + 1
            return {"attempts": [hourly_attempt(number).to_json()]}

    looks: list[float] = []
    out = io.StringIO()
    assert _follow(Client(), {}, [wide], out, looking(looks, 200)) == 0  # type: ignore[arg-type]
    assert len(laid_out) == 201 and max(laid_out) <= len(ATTEMPT_HEADERS) + 1
    header, *rows = out.getvalue().splitlines()
    column = header.index("CODE")
    assert [row[column:].split()[0] for row in rows[-3:]] == ["OK", "OK", "OK"]


def test_a_long_job_id_wraps_under_its_column_so_the_table_fits() -> None:
    """A job ID of 40 characters with a failure's reason still fits the 120 columns: the
    REASON wraps first, then the JOB column, after the ID's hyphens and never inside a word
    (a trial user's tables were 133-146 wide)."""
    begun = datetime(2026, 12, 3, 18, 4, 0, 600, tzinfo=UTC)
    job = "projects/p/locations/l/jobs/flaky-ledger-export-europe-west1-nightly"
    failed = Attempt(
        1, job, 1, 1, iso_z(begun), begun,
        {"method": "POST", "url": "http://127.0.0.1:9/x", "headers": {}},
        end_time=begun + timedelta(seconds=1), response_status=500, code="INTERNAL",
        debug_info="URL_ERROR-ERROR_OTHER. The target answered 500: the ledger is locked.",
        nominal=begun,
    )  # fmt: skip
    lines = render_table(ATTEMPT_HEADERS, attempt_rows([failed]), width=TABLE_WIDTH)
    assert max(map(len, lines)) <= TABLE_WIDTH
    header, first, *more = lines
    column = header.index("JOB")
    pieces = [line[column:].split()[0] for line in [first, *more] if line[column:].strip()]
    assert "".join(pieces).startswith("flaky-ledger-export-europe-west1-nightly")
    assert len(pieces) > 1 and all(piece.endswith("-") for piece in pieces[:-1])  # no word cut
    assert first.startswith("2026-12-03T18:04:00")  # the row's first line keeps its time


def test_a_long_schedule_wraps_before_a_job_id_so_the_ids_stay_whole() -> None:
    """A trial's 120-column ``jobs`` split ``kolkata-``/``weekday`` and ``grep`` missed it,
    while an English-like schedule could wrap at its spaces."""
    job = {"id": "kolkata-weekday", "state": "ENABLED", "timeZone": "America/Los_Angeles",
           "schedule": "every monday,wednesday 08:30",
           "lastAttempt": {"code": "INTERNAL", "time": "2026-11-03T12:00:00.000413Z"},
           "nextFireTimes": ["2026-11-04T16:30:00Z"]}  # fmt: skip
    rows = job_rows([job, {**job, "id": "paused-halfhourly", "state": "PAUSED"}])
    lines = render_table(views.JOBS_HEADERS, rows, width=TABLE_WIDTH)
    assert max(map(len, lines)) <= TABLE_WIDTH
    assert sum("kolkata-weekday" in line for line in lines) == 1
    assert sum("paused-halfhourly" in line for line in lines) == 1
    assert any(line.strip().startswith("08:30") for line in lines)  # the schedule wrapped


def test_a_cron_schedule_is_never_split_across_lines() -> None:
    """Trial 52: at 120 columns ``0 6 1 1 *`` showed as ``0 6 1 1`` with ``*`` on the next line,
    and ``every 24 hours`` as ``every 24`` / ``hours``: other schedules, read wrongly."""
    job = {"id": "http-grpc", "state": "ENABLED", "timeZone": "America/Argentina/Buenos_Aires",
           "lastAttempt": {"code": "DEADLINE_EXCEEDED", "time": "2026-11-03T12:00:00.000413Z"},
           "nextFireTimes": ["2026-11-04T16:30:00Z"]}  # fmt: skip
    schedules = ["0 6 1 1 *", "every 24 hours", "30 8 * * MON-FRI"]
    rows = job_rows(
        [{**job, "id": f"{job['id']}{n}", "schedule": s} for n, s in enumerate(schedules)]
    )
    lines = render_table(views.JOBS_HEADERS, rows, width=TABLE_WIDTH)
    assert all(sum(schedule in line for line in lines) == 1 for schedule in schedules)
    assert max(map(len, lines)) <= TABLE_WIDTH + 2  # (rather than a schedule read wrongly)


def test_a_job_column_is_never_narrower_than_a_word_of_its_ids() -> None:
    """``reconciliation-`` stays whole even where the table then runs past its width."""
    lines = render_table(
        ["TIME", "JOB", "REASON"],
        [["2026-12-03T18:04:00.000600Z", "nightly-inventory-reconciliation-eu-west-01", "x" * 30]],
        width=60,
    )
    column = lines[0].index("JOB")
    assert [line[column:].split()[0] for line in lines[1:] if line[column:].strip()][:3] == [
        "nightly-", "inventory-", "reconciliation-"
    ]  # fmt: skip


def iso_z(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_last_follows_the_pages_to_the_newest_n(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--last N`` longer than one page of the daemon's listing reads as many pages as it
    takes (here pages of 2 rows), newest N, oldest first."""
    _, whole, _ = run_command(capsys, "attempts", "--port", port(daemon), "--last", "5")
    monkeypatch.setattr(views, "PAGE_SIZE", 2)
    for view in ("attempts", "runs"):
        code, out, err = run_command(capsys, view, "--port", port(daemon), "--last", "5")
        assert code == 0, err
        rows = [line for line in out.splitlines()[1:] if not line.startswith(" ")]  # not wraps
        assert len(rows) == 5
    _, paged, _ = run_command(capsys, "attempts", "--port", port(daemon), "--last", "5")
    assert paged == whole


def listing(monkeypatch: pytest.MonkeyPatch, key: str, records: list[dict[str, Any]]) -> None:
    """The views' daemon client replaced by one whose ``/_emulator/<key>`` lists ``records``."""

    class Listing:
        def __init__(self, *args: object) -> None:
            pass

        def pages(self, path: str, name: str, params: object) -> Iterator[dict[str, Any]]:
            assert (path, name) == (f"/_emulator/{key}", key)
            yield from records

    monkeypatch.setattr(views, "DaemonClient", Listing)


def test_executions_prints_the_newest_n_oldest_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``executions --last N``: the newest N of the listing (oldest first, as the endpoint
    pages them), 20 by default, as the other views (a trial looked for it)."""
    listed = [
        {"name": f"projects/p/locations/l/jobs/export/executions/export-{n:05d}",
         "createTime": f"2026-12-04T00:{n:02d}:00Z", "state": "SUCCEEDED", "taskCount": 1,
         "succeededCount": 1, "failedCount": 0, "retriedCount": 0, "taskAttempts": []}
        for n in range(30)
    ]  # fmt: skip

    listing(monkeypatch, "executions", listed)
    for argv, shown in (((), listed[-20:]), (("--last", "3"), listed[-3:])):
        code, out, err = run_command(capsys, "executions", *argv)
        assert code == 0, err
        names = [line.split()[1] for line in out.splitlines()[1:]]
        assert names == [record["name"].rsplit("/", 1)[1] for record in shown]
        assert f"note: the newest {len(shown)} of 30 executions; a larger --last N" in err
    _, _, err = run_command(capsys, "executions", "--last", "30")  # (trial 180: unsaid)
    assert err == ""
    code, out, err = run_command(capsys, "executions", "--last", "2", "--json")
    assert [json.loads(line) for line in out.splitlines()] == listed[-2:]
    # every one created since an instant; those one scheduler job started, which an execution
    # names by its ID, as the X-CloudScheduler-JobName header it got (trials 204, 208)
    for n, record in enumerate(listed):
        record["schedulerJob"] = ("hourly", "nightly")[n % 2]
    for argv, numbers in (
        (("--since", "2026-12-04T00:07:00Z"), list(range(7, 30))),
        (("--scheduler-job", "projects/my-project/locations/l/jobs/nightly", "--last", "2"),
         [27, 29]),
        (("--scheduler-job", "hourly", "--since", "2026-12-04T00:25:00Z"), [26, 28]),
    ):  # fmt: skip
        code, out, err = run_command(capsys, "executions", *argv, "--wide")
        assert code == 0 and err in ("", "note: the newest 2 of 15 executions; a larger --last N "
                                         "lists more.\n"), err  # fmt: skip
        names = [line.split()[1] for line in out.splitlines()[1:]]
        assert names == [f"export-{n:05d}" for n in numbers]
    code, _, err = run_command(capsys, "executions", "--since", "1h", "--last", "3")
    assert code == 2 and "not allowed with argument --since" in err  # the newest N, or since


def test_an_attempt_repeated_in_a_row_is_shown_once_with_its_count() -> None:
    """Trial 96: a task whose command could not start, retried, made EXIT CODES ``0:not
    started,not started,not started`` and a 174-column row in a pipe."""
    attempts = [{"index": 0, "attempt": a, "stopped": "not started"} for a in range(3)]
    attempts += [{"index": 1, "attempt": a, "exitCode": c} for a, c in enumerate([3, 3, 0])]
    record = {"name": "e", "createTime": "t", "state": "FAILED", "taskCount": 2,
              "succeededCount": 1, "failedCount": 1, "taskAttempts": attempts}  # fmt: skip
    assert execution_rows([record])[0][4] == "0:not started×3 1:3×2,0"


def test_an_execution_that_failed_says_why() -> None:
    """A trial found the task's stderr only with ``--json``: REASON gives its last line."""
    ok = {"index": 0, "attempt": 0, "exitCode": 0, "stderr": ""}
    failed = [{"exitCode": 1, "stderr": "loading\nstrict mode refuses, exit 1\n"},
              {"stopped": "timeout", "stderr": "still working"},
              {"stopped": "not started", "stderr": "cannot start 'nope': No such file"},
              {"exitCode": -9, "stderr": ""}]  # fmt: skip
    record = {"name": "e", "createTime": "t", "state": "FAILED", "taskCount": 2,
              "succeededCount": 1, "failedCount": 1, "retriedCount": 0}  # fmt: skip
    reasons = [
        execution_rows([record | {"taskAttempts": [ok, {"index": 1, "attempt": 0, **f}]}])[0][-1]
        for f in failed
    ]
    assert reasons == ["task 1: strict mode refuses, exit 1", "task 1: timeout",
                       "task 1: cannot start 'nope': No such file", "task 1: exit -9"]  # fmt: skip
    succeeded = record | {"state": "SUCCEEDED", "taskAttempts": [ok]}
    assert execution_rows([succeeded])[0][-1] == ""
    # Tasks that fail at once: the first task's failure, whichever ended first (a trial's
    # replays named one or the other, run to run); a task's last failed attempt.
    both = [{"index": i, "attempt": a, "exitCode": 2, "stderr": f"task {i} try {a}"}
            for i in (0, 1) for a in (0, 1)]  # fmt: skip
    for order in (both, both[::-1], [both[2], both[0], both[3], both[1]]):
        row = execution_rows([record | {"taskAttempts": order}])[0]
        assert (row[4], row[-1]) == ("0:2×2 1:2×2", "task 0: task 0 try 1")


def test_a_skipped_time_without_a_schedule_time_shows_its_instant() -> None:
    """A trial's English-like job's skipped times all read ``-`` (it sends no ScheduleTime),
    where ``attempts`` shows the instant."""
    english = {"job": "p/jobs/la", "scheduleTime": None, "nominalTime": "2026-12-01T05:30:00Z",
               "recordedAt": "2026-12-01T09:00:00.000123Z", "reason": "EMULATOR_DOWN"}  # fmt: skip
    cron = english | {"scheduleTime": "2026-12-01T06:30:00+01:00"}
    assert [row[0] for row in skipped_rows([english, cron])] == [
        "2026-12-01T05:30:00Z", "2026-12-01T06:30:00+01:00"
    ]  # fmt: skip


def test_the_executions_header_keeps_to_one_line_at_120_columns() -> None:
    """Two trials saw SCHEDULER JOB split over two lines: a JOB column is never narrower than
    its header."""
    record = {"name": "x/executions/nightly-report-7xk2p", "createTime": "2026-12-05T04:00:00Z",
              "state": "FAILED", "taskCount": 1, "succeededCount": 0, "failedCount": 1,
              "retriedCount": 0, "schedulerJob": "nightly-report-trigger",
              "taskAttempts": [{"index": 0, "exitCode": 3, "stderr": "bad row 17"}]}  # fmt: skip
    header, *rows = render_table(EXECUTION_HEADERS, execution_rows([record]), width=TABLE_WIDTH)
    assert re.split(r"\s\s+", header)[-2:] == ["SCHEDULER JOB", "REASON"]
    assert rows[0][header.index("SCHEDULER JOB") :].startswith("nightly-")


def test_an_executions_created_time_is_cut_to_the_millisecond_unless_wide() -> None:
    """Trial 84: CREATED showed microseconds where every other table cuts to milliseconds."""
    record = {
        "name": "x/executions/export-7xk2p",
        "createTime": "2026-12-06T06:08:02.585766Z",
        "state": "SUCCEEDED",
        "taskCount": 1,
        "succeededCount": 1,
    }
    assert execution_rows([record])[0][0] == "2026-12-06T06:08:02.585Z"
    assert execution_rows([record], wide=True)[0][0] == "2026-12-06T06:08:02.585766Z"


#: A failed execution whose last line of stderr runs to 200 characters.
SAID = "ValueError: " + " ".join(["no rows to export for bucket exports-2026"] * 5)
FAILED_EXPORT = {"name": "projects/p/locations/l/jobs/export/executions/export-1",
                 "createTime": "2026-12-04T00:00:00Z", "state": "FAILED", "taskCount": 1,
                 "succeededCount": 0, "failedCount": 1, "retriedCount": 0,
                 "taskAttempts": [{"index": 0, "exitCode": 1, "stderr": SAID}]}  # fmt: skip


def test_a_long_execution_reason_wraps_unless_wide(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial's row of 240 characters: REASON wraps under itself, ``--wide`` keeps one line."""
    listing(monkeypatch, "executions", [FAILED_EXPORT])
    lines = run_command(capsys, "executions")[1].splitlines()
    wide = run_command(capsys, "executions", "--wide")[1].splitlines()
    assert len(wide) == 2 and wide[1].endswith(SAID)
    assert len(lines) > 2 and max(map(len, lines)) < len(wide[1]) / 2


def test_a_table_fits_the_terminals_width_and_120_columns_in_a_pipe(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial's 100-column terminal got rows of 120: the REASON now wraps to the terminal's
    width ($COLUMNS here), and to 120 columns when the output is not a terminal."""
    listing(monkeypatch, "executions", [FAILED_EXPORT])
    monkeypatch.setenv("NO_COLOR", "1")
    piped = run_command(capsys, "executions")[1].splitlines()
    monkeypatch.setattr(views, "is_terminal", lambda stream: True)
    shown = {}
    for columns in (100, 200):
        monkeypatch.setenv("COLUMNS", str(columns))
        shown[columns] = run_command(capsys, "executions")[1].splitlines()
    assert 100 < max(map(len, piped)) <= 120
    assert 90 < max(map(len, shown[100])) <= 100
    assert 120 < max(map(len, shown[200])) <= 200 and len(shown[200]) < len(piped)


def test_skipped_prints_the_newest_n_scheduled_times_oldest_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``skipped`` reads every page and prints the newest ``--last`` scheduled times (20 by
    default), oldest first, as a restart records them: job by job."""
    recorded = [
        {
            "job": f"projects/p/locations/l/jobs/{job}",
            "nominalTime": f"2026-12-03T00:{minute:02d}:00Z",
            "scheduleTime": f"2026-12-03T00:{minute:02d}:00Z",
            "recordedAt": "2026-12-03T01:00:00.123456Z",
            "reason": "EMULATOR_DOWN",
        }
        for job in ("ping", "nightly")
        for minute in range(15)
    ]
    by_time = sorted(recorded, key=lambda record: record["nominalTime"])  # stable: ping first

    listing(monkeypatch, "skipped", recorded)
    for argv, shown in (((), by_time[-20:]), (("--last", "3"), by_time[-3:])):
        code, out, err = run_command(capsys, "skipped", *argv)
        assert code == 0
        note = f"the newest {len(shown)} skipped scheduled times, of 30; a larger --last N"
        assert err == f"note: {note} lists more.\n"  # (trial 94 read the 20 as all of them)
        header, *lines = out.splitlines()
        assert re.split(r"\s\s+", header)[:3] == ["SCHEDULED", "JOB", "RECORDED AT"]
        assert max(map(len, out.splitlines())) <= views.TABLE_WIDTH  # the REASON wraps
        rows = [line.split() for line in lines if not line.startswith(" ")]  # not wraps
        assert [row[:3] for row in rows] == [
            [record["scheduleTime"], record["job"].rsplit("/", 1)[1], "2026-12-03T01:00:00.123Z"]
            for record in shown
        ]
    code, out, err = run_command(capsys, "skipped", "--json", "--last", "3")
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == by_time[-3:]  # as listed
    assert run_command(capsys, "skipped", "--last", "30")[2] == ""  # all of them: no note
    code, out, err = run_command(capsys, "skipped", "--wide", "--last", "1")
    assert code == 0, err
    [header, row] = out.splitlines()  # one line per row: the REASON unwrapped
    assert re.split(r"\s\s+", header)[:4] == ["SCHEDULED", "SCHEDULED (UTC)", "JOB", "RECORDED AT"]
    assert row.split()[1:4] == [by_time[-1]["nominalTime"], "nightly", by_time[-1]["recordedAt"]]
    assert row.endswith(views.SKIPPED_REASONS["EMULATOR_DOWN"])


def test_skipped_says_when_a_restart_listed_only_the_first_of_a_jobs_missed_times(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 159: 119 skipped times listed for a job that missed about 3,950 while down."""
    from scheduler_emulator.core.scheduler import MAX_DOWNTIME_SKIPS

    def down(job: str, count: int, restart: str) -> list[dict[str, Any]]:
        start = datetime(2026, 10, 28, tzinfo=UTC)
        return [
            {"job": f"projects/p/locations/l/jobs/{job}", "reason": "EMULATOR_DOWN",
             "nominalTime": iso_z(start + timedelta(minutes=i)), "recordedAt": restart,
             "scheduleTime": iso_z(start + timedelta(minutes=i))}
            for i in range(count)
        ]  # fmt: skip

    listing(monkeypatch, "skipped", down("heartbeat", MAX_DOWNTIME_SKIPS, "2026-12-07T06:00:00Z")
            + down("nightly", MAX_DOWNTIME_SKIPS - 1, "2026-12-07T06:00:00Z")
            + down("nightly", 2, "2026-12-08T06:00:00Z"))  # fmt: skip
    code, _, err = run_command(capsys, "skipped", "--last", "500")
    assert code == 0
    assert err == (
        f"note: a restart lists the first {MAX_DOWNTIME_SKIPS} of a job's scheduled times that "
        "passed while the emulator was down, not the later ones: more passed for heartbeat, "
        "recorded nowhere.\n"
    )


def test_an_attempts_time_shows_milliseconds_and_wide_shows_microseconds() -> None:
    """Three columns fewer in the table (a trial's attempts rows were 121-123 wide)."""
    begun = datetime(2026, 12, 3, 18, 4, 0, 123456, tzinfo=UTC)
    whole = begun.replace(microsecond=0)
    attempts = [
        Attempt(1, "projects/p/locations/l/jobs/j", 1, 1, iso_z(at), at, {}, nominal=at)
        for at in (begun, whole)
    ]
    assert [row[0] for row in attempt_rows(attempts)] == [
        "2026-12-03T18:04:00.123Z",
        "2026-12-03T18:04:00.000Z",
    ]
    assert [row[0] for row in attempt_rows(attempts, wide=True)] == [
        "2026-12-03T18:04:00.123456Z",
        "2026-12-03T18:04:00.000000Z",  # more digits than without --wide (a trial's read fewer)
    ]


def test_json_prints_what_the_api_lists(daemon: Daemon, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json``: one API record per line; ``runs`` the newest ``--last`` oldest first, as its
    table shows them (``skipped --json``: the test below)."""

    def printed(*argv: str) -> list[dict[str, Any]]:
        code, out, err = run_command(capsys, *argv, "--port", port(daemon), "--json")
        assert code == 0, err
        return [json.loads(line) for line in out.splitlines()]

    def listed(path: str, key: str, **params: object) -> list[dict[str, Any]]:
        answer = requests.get(daemon.url + path, params=params, timeout=30)
        return list(answer.json()[key])

    since = printed("runs", "--job", "report", "--since", "2026-03-01T12:00:00Z")
    after = listed("/_emulator/runs", "runs", job="report", scheduledAfter="2026-03-01T12:00:00Z")
    assert since == after[::-1] and 0 < len(since) < len(printed("runs", "--job", "report"))
    runs = printed("runs", "--job", "report", "--last", "3")
    assert runs == listed("/_emulator/runs", "runs", job="report", pageSize=3)[::-1]
    assert len(runs) == 3 and all("duplicate" in a for run in runs for a in run["attempts"])
    jobs = printed("jobs")
    assert jobs == listed("/_emulator/jobs", "jobs")  # nextFireTimes whole, as the API lists
    assert all(len(job["nextFireTimes"]) == 5 for job in jobs if job["state"] == "ENABLED")
    assert {job["name"].rsplit("/", 1)[1] for job in jobs} >= {"nightly", "report"}


FROM_9 = "attempts from 2026-03-01T09:00:00Z to 2026-03-01T11:00:00Z were dropped"


@pytest.mark.parametrize(
    ("first", "through", "tail", "said"),
    [
        (1001, 1000, True, "attempts before 2026-03-01T10:00:00Z were dropped"),  # just before
        (1001, 2000, True, FROM_9),  # after the first one kept since
        (None, 2000, False, FROM_9),  # all of them (trial 214), up to the newest dropped's start
        (None, 2000, True, ""),  # none since, and none dropped since: the tail is older
        (1001, 900, True, ""),  # dropped well before: the listing since is whole
        (1001, None, True, ""),  # nothing dropped
        (1, None, True, ""),  # the first attempt of all
    ],
)
def test_attempts_since_says_when_the_bound_dropped_what_it_asks_for(
    first: int | None,
    through: int | None,
    tail: bool,
    said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Trial 123: the note compared the oldest attempt kept, which a run still going (kept
    whole) made older than ``--since``, and never showed. Trial 211: a run still going since
    before kept the first attempt since, and the attempts after it that were dropped went
    unsaid (or were said to be before it). Trial 214: all of them dropped went unsaid."""

    def attempt(number: int, hour: int) -> dict[str, Any]:
        return replace(hourly_attempt(number), start_time=datetime(2026, 3, 1, hour, tzinfo=UTC),
                       id=number).to_json()  # fmt: skip

    class Client:
        def get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
            if "startAfter" in params:  # the first attempt since
                assert params == {"pageSize": 1, "startAfter": "2026-03-01T09:00:00Z"}
                found = [] if first is None else [attempt(first, 10)]
                dropped = {"droppedThrough": through, "droppedThroughStart": "2026-03-01T11:00:00Z"}
                return {"attempts": found, **(dropped if through else {})}
            assert through is not None and params["pageToken"] == str(through)
            if not tail:  # nothing kept after the newest dropped
                return {"attempts": []}
            return {"attempts": [attempt(through + 1, 11 if first else 8)]}  # the whole tail

    since = datetime(2026, 3, 1, 9, tzinfo=UTC)
    views._note_trimmed(Client(), since)  # type: ignore[arg-type]
    err = capsys.readouterr().err
    views._note_trimmed(Client(), since, job="nightly")  # type: ignore[arg-type]
    under_job = capsys.readouterr().err  # (trial 173: it read as the job's own instant)
    assert err.startswith(f"note: {said} by the history's bound") if said else err == ""
    assert ("every job's alike, nightly's too" in under_job) is bool(said)
    assert under_job.count("runs still going") == (FROM_9 in said)  # (trial 214: said twice)


def test_a_squeezed_last_column_keeps_a_timestamp_whole() -> None:
    """A trial's 120-column ``jobs`` table split NEXT mid-offset (``…-04:`` / ``00``)."""
    lines = render_table(
        ["JOB", "SCHEDULE", "NEXT"],
        [["report", "x" * 90, "2026-09-25T00:00:00-04:00 2026-09-25T01:00:00-04:00"]],
        width=TABLE_WIDTH,
    )
    assert [line.split()[-1] for line in lines[1:]] == [
        "2026-09-25T00:00:00-04:00",
        "2026-09-25T01:00:00-04:00",
    ]


def test_jobs_of_one_id_in_several_locations_are_told_apart() -> None:
    """Trial 59: ``dup`` in three projects or locations read as three identical rows in
    ``jobs``, ``runs`` and ``skipped``; the JOB column now names project and location when the
    rows span more than one (and the ID alone when they do not)."""
    names = [f"projects/{p}/locations/{loc}/jobs/dup"
             for p, loc in (("my-project", "us-central1"), ("my-project", "europe-west1"),
                            ("other-project", "us-central1"))]  # fmt: skip
    job = {"id": "dup", "state": "ENABLED", "schedule": "0 3 * * *", "timeZone": "Etc/UTC",
           "lastAttempt": None, "nextFireTimes": []}  # fmt: skip
    labels = [
        "my-project/us-central1/dup",
        "my-project/europe-west1/dup",
        "other-project/us-central1/dup",
    ]
    assert [row[0] for row in job_rows([{**job, "name": n} for n in names])] == labels
    assert [row[0] for row in job_rows([{**job, "name": names[0]}])] == ["dup"]
    run = {"id": 1, "scheduleTime": "2026-12-06T03:00:00Z", "attempts": [], "state": "SUCCEEDED"}
    assert [row[1] for row in views.run_rows([{**run, "job": n} for n in names])] == labels
    skipped = {"scheduleTime": "2026-12-06T03:00:00Z", "recordedAt": "2026-12-06T03:00:00Z"}
    assert [row[1] for row in views.skipped_rows([{**skipped, "job": n} for n in names])] == labels
    start = datetime(2026, 12, 6, 3, tzinfo=UTC)
    attempts = [Attempt(i, n, i, 1, None, start, {}) for i, n in enumerate(names, 1)]
    assert [row[1] for row in attempt_rows(attempts)] == labels


def test_a_daemon_that_stops_answering_is_said_to_have_stopped() -> None:
    """A trial: ``attempts --follow`` said "no scheduler-emulator answers …; start it" when the
    daemon it had been following was stopped."""
    target = RecordingTarget(body=b"{}")
    with serving(target) as url:
        client = views.DaemonClient("127.0.0.1", int(url.rsplit(":", 1)[1]))
        assert client.get("/_emulator/clock") == {}
    with pytest.raises(ConfigurationError, match=rf"^the scheduler-emulator at {url} "):
        client.get("/_emulator/clock")


def test_a_view_asks_a_busy_daemon_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trial 112: with 100 API clients at the daemon, a view exited 2 on the first 503 its cap
    of requests at once answered."""
    monkeypatch.setattr(views, "BUSY_RETRY_SECONDS", (0.01, 0.01))
    busy = b'{"error": {"code": 503, "message": "Too many requests in progress: 64 at once."}}'
    target = RecordingTarget(status=lambda _: 503 if len(target.requests) <= 2 else 200, body=busy)
    with serving(target) as url:
        client = views.DaemonClient("127.0.0.1", int(url.rsplit(":", 1)[1]))
        assert "error" in client.get("/_emulator/jobs") and len(target.requests) == 3
        target.status = 503  # busy for longer than the view waits: the 503 is its answer
        with pytest.raises(views.Refused, match="^Too many requests in progress: 64 at once"):
            client.get("/_emulator/jobs")
    assert len(target.requests) == 6


def test_clock_prints_the_clock_and_moves_a_manual_one(capsys: pytest.CaptureFixture[str]) -> None:
    """A trial moved the clock from the terminal with curl: there was no command for it."""
    from tests.daemon import MANUAL, running_daemon

    with running_daemon("--in-memory", *MANUAL) as daemon:
        parent = "projects/my-project/locations/us-central1"
        target = {"uri": f"{daemon.url}/_emulator/health", "httpMethod": "GET"}
        job = {"name": f"{parent}/jobs/n", "schedule": "0 2 * * *", "httpTarget": target}
        daemon.session.post(f"{daemon.url}/v1/{parent}/jobs", json=job).raise_for_status()
        at = ("--port", port(daemon))
        moves = [(), ("--advance", "90s"), ("--next",), ("--to", "2026-09-26T00:00:00Z")]
        said = [run_command(capsys, "clock", *at, *move) for move in moves]
        assert said == [
            (0, "manual clock at 2026-09-24T01:59:00Z; next due at 2026-09-24T02:00:00Z: n\n", ""),
            (0, "manual clock at 2026-09-24T02:00:30Z; next due at 2026-09-25T02:00:00Z: n\n", ""),
            (0, "manual clock at 2026-09-25T02:00:00Z; next due at 2026-09-26T02:00:00Z: n\n", ""),
            (0, "manual clock at 2026-09-26T00:00:00Z; next due at 2026-09-26T02:00:00Z: n\n", ""),
        ]
        for name in ("a", "b", "c", "d", "e"):  # which jobs are due: the first three, by name
            job = {**job, "name": f"{parent}/jobs/{name}"}
            daemon.session.post(f"{daemon.url}/v1/{parent}/jobs", json=job).raise_for_status()
        _, out, _ = run_command(capsys, "clock", *at)
        assert out.endswith("next due at 2026-09-26T02:00:00Z: a, b, c and 3 more\n"), out
        assert [a.code for a in daemon.attempts()] == ["OK", "OK"]  # moves deliver on the way
        code, out, err = run_command(capsys, "clock", *at, "--to", "2026-09-25T00:00:00Z")
        assert (code, out) == (2, "")
        assert err.startswith("error: the clock did not move: the manual clock cannot go back")
        assert "restart the daemon with --start T and --in-memory or a new --data-dir" in err
        code, out, err = run_command(capsys, "clock", *at, "--advance", "soon")
        assert code == 2 and 'argument --advance: not a duration: "soon"' in err
        for advance in (("--advance=-5m",), ("--advance", "-5m")):  # (trials 73, 75)
            code, out, err = run_command(capsys, "clock", *at, *advance)
            assert code == 2 and 'never negative (time moves forward); got "-5m"' in err


def test_a_move_a_stop_cut_short_is_not_said_to_have_moved_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 149: a SIGTERM during ``clock --to`` said "the clock did not move" of a clock
    that had moved three hours."""
    stopped = (
        "The emulator is stopping: the clock stopped at 2026-09-28T18:20:00Z, before "
        "2026-09-28T18:20:30Z; what was due up to then was sent or recorded as not sent."
    )

    def call(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        if path == "/_emulator/clock:moveTo":
            raise views.Refused(stopped)
        return {"mode": "manual"}

    monkeypatch.setattr(views.DaemonClient, "call", call)
    code, out, err = run_command(capsys, "clock", "--to", "2026-09-28T18:20:30Z")
    assert (code, out) == (2, "")
    assert err == f"error: the clock did not reach its target: {stopped}\n"


@pytest.mark.parametrize(
    ("mode", "refused", "said"),
    [  # trial 187: a full disk stopped the move two minutes on ("did not move", it said)
        (
            "manual",
            "The emulator's data directory /d cannot be written (database or disk is full).",
            "the clock moved to 2026-09-28T00:06:00Z, short of its target",
        ),
        (  # trial 219: a system clock's time goes on between the two readings by itself
            "system",
            "the emulator runs on the system clock; start it on a manual clock (…).",
            "the clock did not move",
        ),
    ],
)
def test_a_refused_move_says_where_the_clock_got_to(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
    refused: str,
    said: str,
) -> None:
    readings = iter(["2026-09-28T00:04:00Z", "2026-09-28T00:06:00Z"])

    def call(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        if path == "/_emulator/clock:advance":
            raise views.Refused(refused)
        return {"mode": mode, "now": next(readings)}

    monkeypatch.setattr(views.DaemonClient, "call", call)
    code, out, err = run_command(capsys, "clock", "--advance", "30m")
    assert (code, out, err) == (2, "", f"error: {said}: {refused}\n")


def test_a_slow_move_says_what_it_waits_for_and_a_quick_one_says_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trials 158, 170: ``clock --advance`` held for a Cloud Run execution (or a target up to
    its attempt deadline) saying nothing."""
    said: list[str] = []

    def call(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        if path == "/_emulator/clock:advance" and views.MOVE_NOTE_SECONDS < 1:  # a slow move
            wait_for(lambda: said.append(capsys.readouterr().err) or "note:" in said[-1], 10)
        if path == "/_emulator/attempts":  # what is in flight: named (trial 172)
            jobs = ("a-queued", "b-queued", "ok", "slow")  # newest first: slow is the oldest
            listed = [{"job": f"projects/p/locations/l/jobs/{job}", "code": None} for job in jobs]
            listed[2]["code"] = "OK"
            return {"attempts": listed}
        return {"mode": "manual", "now": "2026-09-28T18:20:30Z"}

    monkeypatch.setattr(views.DaemonClient, "call", call)
    monkeypatch.setattr(views, "MOVE_NOTE_SECONDS", 0.05)
    code, out, _ = run_command(capsys, "clock", "--advance", "30s")
    assert (code, out) == (0, "manual clock at 2026-09-28T18:20:30Z; nothing due\n")
    waits = (
        "note: the clock sends each attempt due on its way and waits for its answer (slow; then b"
    )
    assert waits in "".join(said)  # (trial 183: by name, the one it waits on was cut off)
    monkeypatch.setattr(views, "MOVE_NOTE_SECONDS", 5.0)  # answered at once: no note
    code, out, err = run_command(capsys, "clock", "--advance", "30s")
    assert (code, err) == (0, "")


def test_a_daemon_gone_in_the_middle_of_a_request_is_said_to_have_stopped() -> None:
    """Trial 78: a `clock --to` cut off by the daemon's death said that no daemon answers
    there, as for a wrong port."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as listener:

        def drop_one() -> None:
            connection, _ = listener.accept()
            connection.recv(65536)
            connection.close()  # the request read, no answer

        threading.Thread(target=drop_one, daemon=True).start()
        client = views.DaemonClient("127.0.0.1", listener.getsockname()[1], timeout=10)
        with pytest.raises(ConfigurationError, match=r"stopped answering \(stopped\?\)"):
            client.get("/_emulator/config")


@pytest.mark.parametrize(
    ("start", "said"),
    [
        ("2026-03-29T04:01:30Z", "started 90 s late"),
        ("2026-03-29T04:33:00Z", "started 33.0 min late"),  # (trial 143: "1980 s")
        ("2026-03-29T06:30:00Z", "started 2.5 h late"),
        ("2026-12-07T01:00:00Z", "started 252.9 d late"),  # (trial 141: 21851126 s)
    ],
)
def test_a_late_start_is_said_in_the_unit_that_reads(start: str, said: str) -> None:
    run = {"nominalTime": "2026-03-29T04:00:00Z", "scheduleTime": "2026-03-29T04:00:00Z"}
    assert said in views._run_reason(run, "", [{"startTime": start}], {})


def test_a_run_whose_schedule_time_an_earlier_run_was_answered_2xx_for_says_so() -> None:
    """Trial 170: a forced run sends the job's next scheduled time; the scheduled run that
    sends it again read "succeeded" with no reason in ``runs``, though ``attempts`` named the
    forced run (a target deduplicating by ScheduleTime skips it)."""
    header = "2026-12-09T03:00:00Z"

    def run(run_id: int, start: str, forced: bool) -> dict[str, Any]:
        attempt = {"id": run_id, "job": "p/l/rollup", "runId": run_id, "attempt": 1,
                   "startTime": start, "scheduleTime": header, "responseStatus": 200,
                   "code": "OK", "forced": forced,
                   "request": {"url": "http://svc.test/"}}  # fmt: skip
        return {"job": "p/l/rollup", "id": run_id, "nominalTime": start, "scheduleTime": header,
                "forced": forced, "state": "succeeded", "attempts": [attempt]}  # fmt: skip

    runs = [run(14, header, False), run(8, "2026-12-08T09:00:00Z", True)]  # newest first
    scheduled, forced = (row[-1] for row in run_rows(runs))
    assert scheduled.startswith("same ScheduleTime as run 8 (forced), which the target answered")
    assert forced == ""


def test_a_forced_publish_is_not_said_to_have_sent_a_schedule_time() -> None:
    """Trial 174: a forced run of a Pub/Sub job read ``forced, sent T`` in ``attempts``,
    ``runs`` and the text log, though a message carries no ScheduleTime header."""
    from scheduler_emulator.runtime.storage.attempt_log import text_line

    publish = replace(
        hourly_attempt(1), forced=True, response_status=None,
        request={"pubsubTopic": "projects/p/topics/restock", "data": "e30="},
    )  # fmt: skip
    sent = replace(hourly_attempt(2), forced=True)  # an HTTP one sends it
    assert [row[6] for row in attempt_rows([publish, sent])] == [
        "forced", f"forced, sent {sent.schedule_time}"
    ]  # fmt: skip
    run = {"job": publish.job, "id": 1, "forced": True, "scheduleTime": publish.schedule_time,
           "nominalTime": "2026-03-01T03:00:00Z", "attempts": [publish.to_json()]}  # fmt: skip
    assert run_rows([run])[0][0] == "forced"
    assert text_line(publish).endswith("  forced") and "sent" not in text_line(publish)


def test_an_injected_attempts_reason_is_cut_between_words_at_the_reason_width() -> None:
    """Trial 174: a Pub/Sub copy's REASON was cut mid-word at 90 characters (``…Message ID = 2
    on projects/my-project/to...``), where the README says reasons are cut to 160, between
    words where they can be."""
    topic = "projects/my-project/topics/" + "beat-" * 30
    copy = replace(
        hourly_attempt(1), response_status=None, injected=True,
        debug_info=f"Injected: a duplicate delivery. PUBSUB_PUBLISHED. Message ID = 2 on {topic}",
    )  # fmt: skip
    [row] = attempt_rows([copy])
    reason = row[-1]
    assert reason.startswith("a duplicate delivery. PUBSUB_PUBLISHED. Message ID = 2 on "), reason
    assert len(reason) <= 160 and reason.endswith("…"), reason


@pytest.mark.parametrize("verb", ["delete", "pause", "resume", "run"])
def test_a_job_argument_that_is_no_job_name_is_refused_before_any_request(
    verb: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 176: ``delete '../../../../../_emulator/faults'`` was sent as ``DELETE
    /v1/../../../../../_emulator/faults``, and cleared the fault plan."""

    def call(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        raise AssertionError(f"{method} {path} was sent")

    monkeypatch.setattr(views.DaemonClient, "call", call)
    code, out, err = run_command(capsys, verb, "../../../../../_emulator/faults")
    assert (code, out) == (2, "")
    assert err.startswith('error: JOB "../../../../../_emulator/faults": Job name must be'), err


def test_a_firebase_functions_name_is_offered_its_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 227: ``pause flaky`` listed the jobs, not the function's job it meant."""
    parent = "projects/demo-shop/locations/us-central1"
    ids = ["firebase-schedule-report-us-central1", "firebase-schedule-flaky-us-central1"]

    def call(self: Any, method: str, path: str, params: Any = None, **kwargs: Any) -> Any:
        if path == "/_emulator/config":
            return {"project": "demo-shop", "location": "us-central1"}
        if method == "POST":
            raise views.Refused("Job not found.")
        if path == f"/v1/{parent}/jobs":
            return {"jobs": [{"name": f"{parent}/jobs/{i}"} for i in ids]}
        return {"attempts": [], "jobs": []}

    monkeypatch.setattr(views.DaemonClient, "call", call)
    code, _, err = run_command(capsys, "pause", "flaky")
    assert code == 2 and err.endswith(" Did you mean 'firebase-schedule-flaky-us-central1'?\n")


def test_resume_says_a_forced_runs_retry_in_the_jobs_zone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 225: the next run read in the job's zone and the forced run's retry in UTC."""
    name = "projects/my-project/locations/us-central1/jobs/berlin"

    def call(self: Any, method: str, path: str, params: Any = None, **kwargs: Any) -> Any:
        if path == "/_emulator/config":
            return {"project": "my-project", "location": "us-central1"}
        if path == "/_emulator/jobs":
            return {"jobs": [{"name": name, "forcedRunRetryTime": "2026-09-25T02:15:30Z"}]}
        return {"name": name, "timeZone": "Europe/Berlin", "scheduleTime": "2026-09-25T02:30:00Z"}

    monkeypatch.setattr(views.DaemonClient, "call", call)
    code, out, _ = run_command(capsys, "resume", "berlin")
    assert (code, out) == (0, "resumed berlin; next run at 2026-09-25T04:30:00+02:00; first, a "
                              "forced run's retry, due 2026-09-25T04:15:30+02:00\n")  # fmt: skip
