"""Scenario files: validation, the expectation language, replays on a manual clock, the timeline,
determinism by seed, and the Orders example's duplicates with and without the run-once guard."""

from __future__ import annotations

import io
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.tools.replay import print_report, replay_scenario
from scheduler_emulator.tools.report import report_html
from scheduler_emulator.tools.scenario import (
    Check,
    ScenarioRun,
    load_scenario,
    parse_duration,
    run_scenario,
    select,
)
from tests.daemon import serving
from tests.support import RecordingTarget, run_cli

ORDERS_SCENARIOS = Path(__file__).resolve().parents[3] / "examples" / "orders" / "scenarios"

#: A WSGI target written next to the scenarios: counts deliveries, answers ``status`` (or the
#: statuses listed in ``answers``, in turn), and serves ``GET /count`` as JSON.
COUNTER_APP = """
import json


def make(status=200, answers=()):
    seen = []

    def app(environ, start_response):
        if environ["REQUEST_METHOD"] == "GET":
            if environ["PATH_INFO"] != "/count":
                start_response("404 Not Found", [])
                return [b""]
            body = json.dumps({"count": len(seen), "nested": {"seen": seen}}).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        seen.append(environ.get("HTTP_X_CLOUDSCHEDULER_SCHEDULETIME"))
        answer = answers[len(seen) - 1] if len(seen) <= len(answers) else status
        start_response(f"{answer} X", [])
        return [b""]

    return app


def failing():
    return make(status=500)


def flaky():
    return make(answers=[500, 409])
"""

HOURLY = """
start: "2026-09-24T00:30:00Z"
jobs:
  - name: hourly
    schedule: "0 * * * *"
    httpTarget: {uri: "http://svc.test/tick"}
    retryConfig: {retryCount: 2}
target:
  base_url: http://svc.test
  app: "counter_app.py:make()"
steps:
  - advance: 3h
probe:
  path: /count
  fields: {deliveries: count, seen: len(nested.seen)}
"""


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenario apps add their folder to ``sys.path``; undo that after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def write(folder: Path, text: str, name: str = "scenario.yaml") -> Path:
    """Write a scenario (dedented) and the counter app next to it; return the scenario path."""
    (folder / "counter_app.py").write_text(COUNTER_APP)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def replay(*args: str) -> tuple[int, str, str]:
    """Run ``scheduler-emulator replay ARGS`` in-process; return (exit code, stdout, stderr)."""
    return run_cli("replay", *args)


def timeline_of(output: str) -> str:
    """The timeline table of a replay's output (from its header to the first blank line)."""
    start = output.index("TIME ")
    return output[start : output.index("\n\n", start)]


class TestDurations:
    @pytest.mark.parametrize(
        ("value", "seconds"),
        [
            pytest.param("7d", 7 * 86400, id="days"),
            pytest.param("3600s", 3600, id="seconds-suffix"),
            pytest.param(90, 90, id="number"),
            pytest.param(1.5, 1.5, id="float"),
            pytest.param("1h30m", 5400, id="combined"),
            pytest.param("250ms", 0.25, id="milliseconds"),
            pytest.param("2w", 14 * 86400, id="weeks"),
            pytest.param("45", 45, id="digits"),
        ],
    )
    def test_a_step_duration_parses_with_or_without_a_unit(
        self, value: Any, seconds: float
    ) -> None:
        assert parse_duration(value) == timedelta(seconds=seconds)

    @pytest.mark.parametrize("value", ["7 days", "-5s", -1, True, "d", "", None, "1h-5m"])
    def test_anything_else_is_refused_naming_the_value(self, value: Any) -> None:
        with pytest.raises(ValueError, match="duration"):
            parse_duration(value)


class TestChecks:
    @pytest.mark.parametrize(
        ("value", "text", "observed", "holds"),
        [
            pytest.param(7, "== 7", 7, True, id="number"),
            pytest.param("== runs", "== runs", 2, True, id="named"),
            pytest.param(">= 3", ">= 3", 2, False, id="at-least"),
            pytest.param("<= runs + 1", "<= runs + 1", 3, True, id="offset"),
            pytest.param("!= runs - 1", "!= runs - 1", 1, False, id="negative-offset"),
            pytest.param("runs", "== runs", 2, True, id="bare-name"),
        ],
    )
    def test_a_check_compares_with_a_number_or_a_quantity(
        self, value: Any, text: str, observed: int, holds: bool
    ) -> None:
        check = Check.parse(value)
        expected = check.expected(lambda name: 2)
        assert check.text == text
        assert expected is not None
        assert check.holds(observed, expected) is holds

    @pytest.mark.parametrize("value", ["== many runs", "== ", "=> 3", 1.5, None, ["== 1"]])
    def test_a_malformed_check_is_refused(self, value: Any) -> None:
        with pytest.raises(ValueError, match="not a check"):
            Check.parse(value)

    def test_a_probe_selector_reads_a_path_or_a_length(self) -> None:
        document = {"a": {"b": [4, 5]}, "s": "x", "flag": True}
        assert select(document, "a.b.1") == 5
        assert select(document, "len(a.b)") == 2
        assert select(document, "a.missing") is None
        assert select(document, "flag") is None  # a boolean is not a count


class TestValidation:
    @pytest.mark.parametrize(
        ("patch", "message"),
        [
            pytest.param(
                {"steps": "[{advance: 7 days}]"},
                'steps[0].advance: not a duration: "7 days"',
                id="duration",
            ),
            pytest.param({"steps": "[{sleep: 5}]"}, "steps[0].sleep: unknown step", id="step-kind"),
            pytest.param(
                {"steps": "[{run_job: weekly}]"},
                'steps[0].run_job: no job "weekly" in the scenario (jobs: hourly)',
                id="run-unknown-job",
            ),
            pytest.param(  # trial 222
                {"steps": "[{run_job: hourli}]"},
                'no job "hourli" in the scenario (jobs: hourly); did you mean "hourly"?',
                id="run-misspelt-job",
            ),
            pytest.param(
                {"start": '"yesterday"'}, 'start: Invalid timestamp "yesterday"', id="start"
            ),
            pytest.param(
                {"start": "2026-09-24T00:30:00"}, "start: ", id="naive-start"
            ),  # YAML makes it a naive datetime
            pytest.param(
                {"faults": "{rules: [{action: explode}]}"},
                "faults.rules[0].action: action must be one of",
                id="fault-action",
            ),
            pytest.param(
                {"faults": "{rules: [{action: status, status: 999}]}"},
                "faults.rules[0].status: status must be an HTTP status 100-599; got 999.",
                id="fault-status",
            ),
            pytest.param(
                {"faults": "{rules: [{action: status, status: 99, probability: 2}]}"},
                "faults.rules[0].status: status must be an HTTP status 100-599; got 99.",
                id="fault-second-bad-value",  # a rule's every bad value, a line each
            ),
            pytest.param(
                {"faults": "{rules: [{action: delay, status: 500}]}"},
                "faults.rules[0].status: fault rule field 'status' does not apply to action "
                "'delay'; only the status action reads it.",
                id="fault-field-not-read",
            ),
            pytest.param(
                {"faults": "{seed: seven}"},
                "faults.seed: seed must be a whole number from 0 to 9223372036854775807; "
                'got "seven"',
                id="seed",
            ),
            pytest.param(
                {"expect": "{hourly: {codes: {OK: many}}}"},
                'expect.hourly.codes.OK: unknown quantity "many" (use runs, runs.STATE, attempts',
                id="check",
            ),
            pytest.param(
                {"expect": '{hourly: {codes: {OK: -1}, attempts: "== -3"}}'},
                "expect.hourly.codes.OK: a count is never negative; got -1",
                id="negative-count",  # (a trial's check that could never hold ran, and failed)
            ),
            pytest.param(
                {"expect": "{hourly: {codes: {FINE: 1}}}"},
                'expect.hourly.codes.FINE: not a google.rpc code name: "FINE"',
                id="code-name",
            ),
            pytest.param(
                {"expect": "{hourly: {codes: {DEADLINE_EXCEDED: 1}}}"},
                'codes.DEADLINE_EXCEDED: not a google.rpc code name: "DEADLINE_EXCEDED" (did you '
                "mean DEADLINE_EXCEEDED?)",
                id="code-name-misspelt",  # (trial 148)
            ),
            pytest.param(
                {"expect": "{hourly: {probe: {sweeps: 1}}}"},
                'expect.hourly.probe.sweeps: no probe field "sweeps" (probe fields: deliveries, '
                "seen)",
                id="probe-field",
            ),
            pytest.param(
                {"expect": '{hourly: {attempts: "== sweeps"}}'},
                'expect.hourly.attempts: unknown quantity "sweeps"',
                id="operand",
            ),
            pytest.param(
                {"expect": "{nightly: {runs: 1}}"},
                'expect.nightly: no job "nightly" in the scenario (jobs: hourly)',
                id="expect-job",
            ),
            pytest.param(
                {"expect": "{hourly: {sweeps: 1}}"},
                'expect.hourly.sweeps: unknown key "sweeps" (known: runs, attempts, codes, '
                "statuses, executions, probe)",
                id="expect-key",
            ),
            pytest.param(  # trial 167: the docs' bare FIELD works as an operand only
                {"expect": "{hourly: {seen: 1}}"},
                'expect.hourly.seen: a probe field is checked as "probe.seen" (trial 167).',
                id="expect-key-probe-field",
            ),
            pytest.param(  # trial 82: the near key named
                {"expect": "{hourly: {run: 1}}"},
                'expect.hourly.run: unknown key "run"; did you mean "runs"? (known: runs,',
                id="expect-key-near",
            ),
            pytest.param(
                {"expect": "{hourly: {codes: {OK: 1}, codes.OK: 2}}"},  # (a trial's contradiction)
                "expect.hourly.codes.OK: given twice (dotted and in its mapping); keep one.",
                id="quantity-twice",
            ),
            pytest.param(
                {"expect": "{hourly: {executions: 0}}"},  # a trial's check held, saying nothing
                "expect.hourly.executions: the job starts no Cloud Run execution: its URI is not "
                "a Cloud Run job's jobs/J:run (docs/cloud-run-jobs.md).",
                id="executions-of-an-http-job",
            ),
            pytest.param(
                {"expect": "{hourly: {executions: {DONE: 1}}}"},
                'expect.hourly.executions.DONE: not an execution state: "DONE" (RUNNING, '
                "SUCCEEDED, FAILED, CANCELLED, INTERRUPTED)",
                id="execution-state",
            ),
            pytest.param(
                {"expect": "{hourly: {runs: {failed: 0}}}"},
                'expect.hourly.runs.failed: not a run state: "failed" (succeeded, gave-up, '
                "retrying)",
                id="run-state",
            ),
            pytest.param(
                {"target": '{app: "x:y", url: "http://a.test"}'},
                "target: give app (in-process) or url (over HTTP), not both.",
                id="app-and-url",
            ),
            pytest.param(
                {"target": '{url: "ftp://a.test"}'},
                'target.url: expected an http:// or https:// URL; got "ftp://a.test"',
                id="target-url",
            ),
            pytest.param(
                {"probe": '{path: "sweeps"}'},
                'probe.path: expected a path such as "/sweeps" or an http(s) URL; got "sweeps"',
                id="probe-path",
            ),
            pytest.param(
                {"jobs": "[{name: hourly, schedule: '61 * * * *', httpTarget: {uri: 'http://a'}}]"},
                "jobs[0] (hourly): ",
                id="job",
            ),
            pytest.param({"repeat": "3"}, "repeat: unknown key", id="top-level"),
            pytest.param(  # trial 222: an empty file passed
                {"jobs": "[]"},
                "jobs: a scenario needs at least one HTTP job; got none.",
                id="no-jobs",
            ),
        ],
    )
    def test_an_error_names_the_file_the_key_path_and_the_value(
        self, tmp_path: Path, patch: dict[str, str], message: str
    ) -> None:
        lines = [line for line in HOURLY.splitlines() if line]
        document: dict[str, list[str]] = {}
        key = ""
        for line in lines:
            if not line.startswith(" "):
                key = line.split(":", 1)[0]
                document[key] = [line]
            else:
                document[key].append(line)
        for key, value in patch.items():
            document[key] = [f"{key}: {value}"]
        path = write(tmp_path, "\n".join("\n".join(v) for v in document.values()) + "\n")
        with pytest.raises(ConfigurationError) as error:
            load_scenario(path)
        assert str(error.value).startswith(f"{path}: ")
        assert message in str(error.value)

    @pytest.mark.parametrize(
        "text",
        ['{"attempts": [{"job": "x"}]}', '[{"job": "x", "attempt": 1}]'],
        ids=["export", "log"],
    )
    def test_a_recording_given_as_a_scenario_is_named_one(self, tmp_path: Path, text: str) -> None:
        """Trial 222: an attempts export read as a scenario with "did you mean steps?"."""
        path = write(tmp_path, text)
        with pytest.raises(ConfigurationError) as error:
            load_scenario(path)
        assert str(error.value).endswith(
            "it reads as a recording of attempts: replay --attempts FILE --target URL."
        )

    def test_every_problem_is_reported_not_only_the_first(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            """
            start: yesterday
            colour: blue
            jobs:
              - name: hourly
                schedule: "0 * * * *"
                httpTarget: {uri: "http://svc.test/tick"}
              - name: weekly
                schedule: "61 * * * *"
                httpTarget: {uri: "http://svc.test/week"}
                attemptDeadline: 5s
            faults:
              rules:
                - {action: duplicate, seconds: 2}
                - {action: explode}
            steps:
              - advance: soon
              - run_job: weekly
              - advance: 1h
              - move_to: later
            expect:
              hourly: {runs: many, codes: {FINE: 1}}
              weekly: {runs: 1}
            """,
        )
        code, out, err = replay(str(path))
        assert (code, out) == (2, "")
        lines = err.splitlines()
        assert lines[0].startswith("error: ")
        lines[0] = lines[0].removeprefix("error: ")
        expected = [  # (key path, the value as the message shows it), in file order
            ("colour", '"colour"'),
            ("start", '"yesterday"'),
            ("jobs[1] (weekly)", "'61 * * * *'"),
            ("jobs[1] (weekly)", "got 5s"),  # (trial 206: a job's first problem hid the rest)
            ("steps[0].advance", '"soon"'),
            ("steps[3].move_to", '"later"'),
            ("faults.rules[0].seconds", "'seconds'"),
            ("faults.rules[1].action", '"explode"'),
            ("expect.hourly.runs", '"many"'),
            ("expect.hourly.codes.FINE", '"FINE"'),
        ]
        assert len(lines) == len(expected), lines
        for line, (key_path, value) in zip(lines, expected, strict=True):
            assert line.startswith(f"{path}: {key_path}: ") and value in line, line
        assert lines[6].endswith(
            "fault rule field 'seconds' does not apply to action 'duplicate'; only the deadline "
            "and delay actions read it."
        )
        # weekly is invalid, yet the run_job step and the expectation naming it are not refused

    def test_an_inline_job_body_is_base64_as_in_a_jobs_file(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(
            tmp_path,
            HOURLY.replace('"http://svc.test/tick"}', '"http://svc.test/tick", body: ping}'),
        )
        load_scenario(path)
        [warning] = capsys.readouterr().err.splitlines()
        assert warning.startswith(f'warning: {path}: jobs[0] (hourly): httpTarget.body "ping"')
        path.write_text(path.read_text().replace("body: ping", "body: '{\"a\":1}'"))
        with pytest.raises(ConfigurationError) as error:
            load_scenario(path)
        assert "echo -n '{\"a\":1}' | base64 prints eyJhIjoxfQ==" in str(error.value)

    def test_a_scenario_that_extends_itself_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
        (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
        with pytest.raises(ConfigurationError, match="extends: the files extend each other"):
            load_scenario(tmp_path / "a.yaml")

    def test_a_missing_base_or_fault_file_says_where_it_was_looked_for(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A trial's message read ``no such file: "nobase.yaml" (nobase.yaml)``, and a missing
        fault plan was named without the scenario's ``faults`` key that names it."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "a.yaml").write_text("extends: nobase.yaml\n")
        with pytest.raises(ConfigurationError) as error:
            load_scenario("a.yaml")
        assert str(error.value).endswith(
            f'no such file: "nobase.yaml" (looked for {tmp_path.resolve() / "nobase.yaml"}, '
            "beside the file that extends it)."
        )
        (tmp_path / "a.yaml").write_text("faults: nofaults.yaml\n")
        with pytest.raises(ConfigurationError, match="a.yaml: faults: nofaults.yaml: cannot read"):
            load_scenario("a.yaml")

    def test_the_command_prints_error_and_exits_2(self, tmp_path: Path) -> None:
        path = write(
            tmp_path, HOURLY.replace("  - advance: 3h", "  - advance: 3h\n  - advance: soon")
        )
        code, out, err = replay(str(path))
        assert (code, out) == (2, "")
        assert err == f'error: {path}: steps[1].advance: not a duration: "soon" (use seconds, ' + (
            'or a number with a unit such as "7d", "3600s", "90m", "1h30m")\n'
        )

    def test_a_5000_digit_attempt_deadline_exits_2_naming_the_field(self, tmp_path: Path) -> None:
        deadline = "9" * 5000 + "s"
        path = write(
            tmp_path,
            HOURLY.replace("retryConfig: {retryCount: 2}", f'attemptDeadline: "{deadline}"'),
        )
        code, out, err = replay(str(path))
        assert (code, out) == (2, "")
        assert "jobs[0] (hourly): attemptDeadline must be at most 315576000000 seconds" in err

    def test_an_app_that_cannot_be_imported_is_a_configuration_error(self, tmp_path: Path) -> None:
        path = write(tmp_path, HOURLY.replace("counter_app.py:make()", "no_such_module:app"))
        code, _, err = replay(str(path))
        assert code == 2
        assert "target.app: cannot import 'no_such_module'" in err


class TestReplay:
    def test_jobs_run_on_the_virtual_clock_and_expectations_hold(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            HOURLY
            + """
            expect:
              hourly:
                runs: 3
                attempts: "== runs"
                codes: {OK: 3}
                probe: {deliveries: "== attempts", seen: 3}
            """.replace("\n            ", "\n"),
        )
        code, out, _ = replay(str(path))
        assert code == 0, out
        assert timeline_of(out).splitlines() == [
            "TIME                  JOB     RUN (ScheduleTime)    TRY  INJ  HTTP  CODE  DETAIL",
            "2026-09-24T01:00:00Z  hourly  2026-09-24T01:00:00Z    1        200  OK",
            "2026-09-24T02:00:00Z  hourly  2026-09-24T02:00:00Z    1        200  OK",
            "2026-09-24T03:00:00Z  hourly  2026-09-24T03:00:00Z    1        200  OK",
        ]
        assert "  ✓ hourly: probe.deliveries == attempts (observed 3; attempts = 3)\n" in out
        assert out.endswith("\nAll 5 expectations hold.\n")

    def test_a_rule_naming_no_job_is_said_beside_a_jobs_own_problem(self, tmp_path: Path) -> None:
        """Trial 208: ``job: refesh`` was said only once the jobs' problems were mended."""
        text = HOURLY.replace('"0 * * * *"', '"61 * * * *"')
        text += "faults:\n  rules: [{action: duplicate, job: hourlly}]\n"
        code, _, err = replay(str(write(tmp_path, text)))
        assert code == 2
        assert "jobs[0] (hourly): " in err and "names job 'hourlly'" in err, err

    def test_runs_count_only_schedule_times_the_target_was_called_with(
        self, tmp_path: Path
    ) -> None:
        """Trial 208: a run whose every attempt an injected connection error stood in for was
        counted, and ``probe.seen == runs`` failed for a deduplicating target."""
        text = HOURLY + "faults:\n  rules: [{action: connection_error, run: 2}]\n"
        expect = "expect:\n  hourly: {runs: 2, attempts: 5, probe: {deliveries: 2}}\n"
        code, out, _ = replay(str(write(tmp_path, text + expect)))
        assert code == 0, out
        assert "  ✓ hourly: runs == 2 (observed 2)\n" in out

    def test_a_probe_field_with_no_number_names_the_path_it_read(self, tmp_path: Path) -> None:
        """Trial 206: ``bogus = ?`` and "has no numeric value" named no path."""
        text = HOURLY.replace("seen: len(nested.seen)}", "seen: nosuch.path}")
        code, out, _ = replay(
            str(write(tmp_path, text + "expect:\n  hourly: {probe: {seen: 3}}\n"))
        )
        assert code == 1
        assert "  ✗ hourly: probe.seen == 3 (observed ?; probe.seen has no numeric value at " \
            "'nosuch.path' in the probe's answer)\n" in out  # fmt: skip

    def test_an_unmet_expectation_exits_1_and_is_named(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            HOURLY.replace("make()", "failing()")
            + "expect:\n  hourly: {runs: 3, codes: {OK: 3}, attempts: '<= runs + 1'}\n",
        )
        code, out, _ = replay(str(path))
        assert code == 1
        assert "  ✓ hourly: runs == 3 (observed 3)\n" in out
        assert out.endswith(  # (trial 132: runs + 1's value went unsaid)
            "\n2 of 3 expectations unmet:\n"
            "  hourly: codes.OK == 3 (observed 0)\n"
            "  hourly: attempts <= runs + 1 (observed 9; runs = 3, so runs + 1 = 4)\n"
        )

    def test_runs_that_gave_up_are_counted_and_can_be_expected(self, tmp_path: Path) -> None:
        """Trial 184: every run gave up under expectations that held, and only the attempts
        said so."""
        path = write(
            tmp_path,
            HOURLY.replace("make()", "failing()").replace("advance: 3h", "advance: 150m")
            + "expect:\n  hourly: {runs: 3, runs.gave-up: 0, runs.retrying: 1, "
            + "attempts: '>= runs.gave-up+5'}\n",  # (trial 188: refused as an operand)
        )
        code, out, _ = replay(str(path), "--report", str(tmp_path / "report.html"))
        assert code == 1
        header = (
            "Clock 2026-09-24T00:30:00Z -> 2026-09-24T03:00:00Z; 3 runs: 2 gave up, 1 retrying."
        )
        assert header in out.splitlines()
        # which runs, why they gave up, and when the pending retry is due (trial 206)
        section = out.split("\nRuns that did not succeed:\n", 1)[1].split("\n\n", 1)[0]
        rows = [line.split()[:6] for line in section.splitlines()[1:]]
        assert [row[2] for row in rows] == ["1", "2", "3"], section
        assert section.count("  gave up (retry count)  ") == 2, section
        assert rows[2][4:6] == ["retrying", "2026-09-24T03:00:05Z"], section
        assert "  ✓ hourly: runs.retrying == 1 (observed 1)\n" in out
        assert out.endswith(
            "\n1 of 4 expectations unmet:\n  hourly: runs.gave-up == 0 (observed 2)\n"
            f"\nReport written to {tmp_path / 'report.html'}.\n"
        )
        assert "<p>3 runs: 2 gave up, 1 retrying; 7 attempts, 7 failed" in (
            (tmp_path / "report.html").read_text()
        )

    def test_steps_move_the_clock_and_force_runs(self, tmp_path: Path) -> None:
        text = HOURLY.replace(
            "  - advance: 3h",
            '  - move_to: "2026-09-24T01:30:00Z"\n  - run_job: hourly\n  - advance: 1800',
        )
        run = run_scenario(load_scenario(write(tmp_path, text)))
        assert [
            (a.start_time.strftime("%H:%M"), a.forced, a.schedule_time) for a in run.attempts
        ] == [
            ("01:00", False, "2026-09-24T01:00:00Z"),
            ("01:30", True, "2026-09-24T02:00:00Z"),  # forced: the next scheduled time
            ("02:00", False, "2026-09-24T02:00:00Z"),
        ]
        assert run.end == datetime(2026, 9, 24, 2, 0, tzinfo=UTC)

    def test_runs_counts_distinct_schedule_times_so_a_forced_run_may_share_one(
        self, tmp_path: Path
    ) -> None:
        text = HOURLY.replace("  - advance: 3h", "  - run_job: hourly\n  - advance: 1h")
        text += "expect:\n  hourly: {runs: 1, attempts: 2}\n"
        run = run_scenario(load_scenario(write(tmp_path, text)))
        assert run.ok, run.results

    @pytest.mark.parametrize(
        ("report", "says"),
        [
            ("missing/r.html", "missing does not exist."),
            ("scenario.yaml/r.html", "scenario.yaml is not a directory."),
            (".", "is a directory."),
        ],
    )
    def test_a_report_that_cannot_be_written_is_refused_before_the_run(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str, says: str
    ) -> None:
        """A trial's ran the whole scenario, then said ``[Errno 2] No such file or directory``
        without naming --report."""
        monkeypatch.chdir(tmp_path)
        code, out, err = replay(str(write(tmp_path, HOURLY)), "--report", report)
        assert (code, out, err) == (2, "", f"error: --report {report}: {says}\n")

    def test_a_fault_rule_that_never_acts_is_a_warning(self, tmp_path: Path) -> None:
        rules = (
            "    - {action: duplicate}\n    - {action: duplicate, job: hourly, run: 2, count: 3}\n"
        )
        path = write(tmp_path, HOURLY + "faults:\n  rules:\n" + rules)
        code, _, err = replay(str(path))
        assert code == 0
        assert err == (
            f"warning: {path}: faults: rules[1] (duplicate) never acts: rules[0] is the duplicate "
            "rule of every attempt it matches (one rule of each action acts on an attempt).\n"
        )

    def test_a_fault_rule_that_never_fired_is_said_by_the_replay_and_the_report(
        self, tmp_path: Path
    ) -> None:
        """Trial 184: a rule whose probability drew no attempt could be seen only by reading
        the timeline."""
        rules = "    - {action: duplicate, run: 2}\n    - {action: lost_ack, run: 9}\n"
        path = write(tmp_path, HOURLY + "faults:\n  rules:\n" + rules)
        code, out, _ = replay(str(path), "--report", str(tmp_path / "report.html"))
        assert code == 0
        assert (
            "\nFault rules that never fired:\n  rules[1] (lost_ack): no attempt matched it" in out
        )
        page = (tmp_path / "report.html").read_text()
        assert "&quot;run&quot;: 2}</code> — fired for 1 attempt</li>" in page
        assert "&quot;run&quot;: 9}</code> — never fired</li>" in page

    def test_a_fault_rule_for_a_job_the_scenario_lacks_is_refused(self, tmp_path: Path) -> None:
        """Trial 60: a misspelt job never fired, and nothing said so; trial 148: the warning
        then let the scenario pass (exit 0) with its fault never injected."""
        path = write(
            tmp_path, HOURLY + "faults:\n  rules:\n    - {action: duplicate, job: hourli}\n"
        )
        code, out, err = replay(str(path))
        assert (code, out) == (2, "")
        assert err == (
            f"error: {path}: faults: rules[0] (duplicate) names job 'hourli', which no job is "
            "(job IDs: hourly): the scenario's jobs are all it has.\n"
        )
        # among the scenario's other problems, not only when it has none (trial 167)
        both = path.read_text().replace("3h", "3 hours")
        code, _, err = replay(str(write(tmp_path, both)))
        assert code == 2 and "names job 'hourli'" in err and "3 hours" in err, err
        # named by its place as written, after an invalid rule too (trial 214: rules[1] read 2)
        rules = "    - {action: duplicate, seconds: 1}\n    - {action: lost_ack, job: hourli}\n"
        code, _, err = replay(str(write(tmp_path, HOURLY + "faults:\n  rules:\n" + rules)))
        assert code == 2 and "faults: rules[1] (lost_ack) names job 'hourli'" in err, err

    def test_a_failing_target_is_retried_and_shown_in_the_timeline(self, tmp_path: Path) -> None:
        text = HOURLY.replace("make()", "flaky()").replace("3h", "1h")
        code, out, _ = replay(str(write(tmp_path, text)))
        assert code == 0
        rows = timeline_of(out).splitlines()[1:]
        assert [row.split()[3:7] for row in rows] == [
            ["1", "500", "INTERNAL", "URL_UNREACHABLE-UNREACHABLE_5xx."],  # no body: the debug text
            ["2", "409", "ABORTED", "URL_ERROR-ERROR_OTHER."],  # no body either
            ["3", "200", "OK"],
        ]

    def test_jobs_may_come_from_a_jobs_file(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "jobs.yaml").write_text(
            '- {name: hourly, schedule: "0 * * * *", httpTarget: {uri: "http://svc.test/t"}}\n'
        )
        text = HOURLY.split("target:")[0].split("jobs:")[0] + "jobs: jobs.yaml\ntarget:"
        text += HOURLY.split("target:")[1]
        run = run_scenario(load_scenario(write(tmp_path, text)))
        assert len(run.attempts) == 3
        (tmp_path / "jobs.yaml").write_text(  # trial 73: an AssertionError's traceback, exit 1
            '- {name: hourly, schedule: "0 * * * *", httpTarget: {uri: "http://svc.test/t"}}\n'
            '- {name: ready, schedule: "0 * * * *", pubsubTarget: '
            "{topicName: projects/my-project/topics/ready, data: eA==}}\n"
        )
        scenario = load_scenario(write(tmp_path, text))
        assert [job.job_id for job in scenario.jobs] == ["hourly"]
        page = report_html(run_scenario(scenario))  # (trial 183: said on stderr only)
        assert "ready: left out: jobs.yaml&#x27;s job 2 is not an HTTP job" in page
        assert capsys.readouterr().err == (  # a file start --jobs reads too (trial 75)
            f"warning: {tmp_path / 'scenario.yaml'}: jobs: ready: jobs.yaml's job 2 is not an "
            "HTTP job, which the runner leaves out.\n"
        )
        with pytest.raises(ConfigurationError) as refused:
            load_scenario(write(tmp_path, text + "expect:\n  ready: {runs: 1}\n"))
        assert str(refused.value).endswith(
            'expect.ready: no job "ready" in the scenario (jobs: hourly): jobs.yaml\'s job 2 is '
            "not an HTTP job, which the runner leaves out."
        )

    def test_faults_may_come_from_a_fault_plan_file(self, tmp_path: Path) -> None:
        """A trial reused its ``start --faults`` file and got "expected {seed, rules}"."""
        (tmp_path / "faults.yaml").write_text(
            "seed: 3\nrules: [{action: status, job: hourly, status: 503, attempt: 1}]\n"
        )
        text = HOURLY.replace("target:", "faults: faults.yaml\ntarget:", 1)
        run = run_scenario(load_scenario(write(tmp_path, text)))
        assert [a.code for a in run.attempts][:2] == ["UNAVAILABLE", "OK"]
        codes = [a.code for a in run.attempts]  # the report counts the failures (trial 183)
        said = f"{len(codes)} attempts, {codes.count('UNAVAILABLE')} failed, 0 duplicate"
        assert said in report_html(run) and codes.count("UNAVAILABLE") >= 1
        (tmp_path / "faults.yaml").write_text("rules: [{action: explode}]\n")
        with pytest.raises(ConfigurationError, match=r"faults\.yaml.*faults\.rules\[0\]"):
            load_scenario(write(tmp_path, text))
        with pytest.raises(ConfigurationError, match="missing.yaml"):
            load_scenario(write(tmp_path, text.replace("faults.yaml", "missing.yaml")))

    def test_a_dotted_module_app_is_imported_from_the_scenario_folder(self, tmp_path: Path) -> None:
        (tmp_path / "scenario_dotted_app.py").write_text(COUNTER_APP)
        text = HOURLY.replace("counter_app.py:make()", "scenario_dotted_app:make()")
        run = run_scenario(load_scenario(write(tmp_path, text)))
        assert run.probe == {"deliveries": 3, "seen": 3}

    def test_an_asgi_apps_probe_is_read_on_the_loop_its_deliveries_ran_on(
        self, tmp_path: Path
    ) -> None:
        """Trial 104: a FastAPI app's probe went through a WSGI client (a TypeError)."""
        (tmp_path / "asgi_app.py").write_text(
            "import asyncio\n"
            "from fastapi import FastAPI\n"
            "def make():\n"
            "    app, seen = FastAPI(), []\n"
            "    @app.post('/tick')\n"
            "    async def tick():\n"
            "        seen.append(asyncio.get_running_loop())\n"
            "    @app.get('/count')\n"
            "    async def count():  # one loop for every delivery and the probe\n"
            "        loops = {id(loop) for loop in seen} | {id(asyncio.get_running_loop())}\n"
            "        return {'count': len(seen), 'loops': len(loops)}\n"
            "    return app\n"
        )
        text = HOURLY.replace("counter_app.py:make()", "asgi_app.py:make()").replace(
            "seen: len(nested.seen)", "loops: loops"
        )
        run = run_scenario(load_scenario(write(tmp_path, text)))
        assert (run.probe, run.probe_error) == ({"deliveries": 3, "loops": 1}, None)

    def test_target_url_delivers_over_http_and_overrides_the_app(
        self, tmp_path: Path, target: RecordingTarget
    ) -> None:
        path = write(tmp_path, HOURLY.replace("probe:", "unused:").split("unused:")[0])
        with serving(target) as url:
            code, out, _ = replay(str(path), "--target", url + "/base")
        assert code == 0
        assert [(r.method, r.path) for r in target.requests] == [("POST", "/base/tick")] * 3
        assert target.requests[0].headers["X-Cloudscheduler-Jobname"] == "hourly"
        assert f"http://svc.test -> {url}/base over HTTP" in out

    def test_a_probe_that_fails_makes_its_expectations_unmet(self, tmp_path: Path) -> None:
        text = HOURLY.replace("path: /count", "path: /missing")
        text += "expect:\n  hourly: {probe: {deliveries: 3}}\n"
        code, out, _ = replay(str(write(tmp_path, text)))
        assert code == 1
        assert "Probe failed: GET /missing answered 404" in out
        assert "  ✗ hourly: probe.deliveries == 3 (observed ?; GET /missing answered 404)" in out
        # without an expectation, the failed probe alone exits 1 (trial 127: it exited 0)
        code, out, _ = replay(str(write(tmp_path, HOURLY.replace("path: /count", "path: /x"))))
        assert (
            code == 1 and "Probe failed: GET /x answered 404" in out and "No expectations." in out
        )

    def test_a_target_where_nothing_answers_is_refused_before_the_run(self, tmp_path: Path) -> None:
        """Trial 82: a service that had not started made every attempt UNAVAILABLE, printed
        ``✓ runs == 4`` and exited 1 like a handler's bug; it is refused (exit 2), given with
        ``--target`` or as the file's ``target.url``."""
        from tests.support import refusing_url

        text = HOURLY + "expect:\n  hourly: {probe: {deliveries: 3}}\n"
        with refusing_url() as url:
            said = f"error: nothing answers at {url} (Connection refused): start the service first"
            code, out, err = replay(str(write(tmp_path, text)), "--target", url)
            assert (code, out) == (2, "")
            assert err.startswith(said), err
            code, out, err = replay(str(write(tmp_path, text.replace("app:", f"url: {url}\n  #"))))
            assert (code, out) == (2, "")
            assert err.startswith(said), err

    def test_a_probe_path_without_a_target_is_refused_before_anything_runs(
        self, tmp_path: Path
    ) -> None:
        """A trial's scenario ran whole, then failed its probe ("needs target.base_url")."""
        text = HOURLY.split("target:")[0] + "steps:\n  - advance: 3h\nprobe:\n  path: /count\n"
        code, out, err = replay(str(write(tmp_path, text + "  fields: {n: count}\n")))
        assert (code, out) == (2, "")
        assert "probe.path: /count is a path, and the target has no address" in err, err

    def test_a_bad_target_option_is_refused(self, tmp_path: Path) -> None:
        code, _, err = replay(str(write(tmp_path, HOURLY)), "--target", "localhost:8000")
        assert code == 2
        assert err.startswith("error: --target must be an http:// or https:// URL")


PROBABILISTIC = (
    HOURLY.replace("3h", "2d")
    + """
faults:
  seed: 1
  rules:
    - {action: status, status: 503, probability: 0.3}
    - {action: duplicate, probability: 0.2}
"""
)


class TestDeterminism:
    def test_the_same_scenario_and_seed_print_byte_identical_output(self, tmp_path: Path) -> None:
        path = str(write(tmp_path, PROBABILISTIC))
        first, second = replay(path), replay(path)
        assert first == second
        assert "*" in timeline_of(first[1])  # faults did fire

    def test_a_different_seed_gives_a_different_timeline(self, tmp_path: Path) -> None:
        path = str(write(tmp_path, PROBABILISTIC))
        _, seed_1, _ = replay(path, "--seed", "1")
        _, seed_2, _ = replay(path, "--seed", "2")
        assert "(seed 1)" in seed_1 and "(seed 2)" in seed_2
        assert timeline_of(seed_1) != timeline_of(seed_2)
        assert replay(path)[1] == seed_1  # the file's own seed is 1


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestProgress:
    def test_a_terminal_gets_one_updating_progress_line(self, tmp_path: Path) -> None:
        path = write(tmp_path, HOURLY)
        terminal, piped = _Terminal(), io.StringIO()
        assert replay_scenario(path, terminal) == replay_scenario(path, piped) == 0
        shown = terminal.getvalue()
        assert shown.startswith("\r\x1b[K  replaying... 2026-09-24T00:30:00Z  0 attempts")
        assert "\n" not in shown.split("Scenario ")[0]  # the progress line never scrolls
        assert shown.split("\r\x1b[K")[-1] == piped.getvalue()

    def test_piped_output_has_no_progress(self, tmp_path: Path) -> None:
        out = io.StringIO()
        replay_scenario(write(tmp_path, HOURLY), out)
        assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


@pytest.fixture(scope="module")
def orders_runs() -> dict[str, tuple[ScenarioRun, str, int]]:
    """Each Orders scenario run once (its sweeps take real time): name → (run, report, exit)."""
    runs = {}
    for name in ("duplicates.yaml", "duplicates-guarded.yaml"):
        run = run_scenario(load_scenario(ORDERS_SCENARIOS / name))
        out = io.StringIO()
        code = print_report(run, out)
        runs[name] = (run, out.getvalue(), code)
    return runs


def rows_of(run: ScenarioRun) -> list[tuple[str, int, int | None, str]]:
    return [
        (a.schedule_time or "", a.attempt, a.response_status, a.code or "") for a in run.attempts
    ]


class TestOrdersDuplicates:
    """The two causes of duplicate runs Google names — a lost acknowledgement and a handler
    slower than its attempt deadline — against the Orders example, without and with the run-once
    guard."""

    def test_without_the_guard_the_service_sweeps_more_than_once_per_run(
        self, orders_runs: dict[str, tuple[ScenarioRun, str, int]]
    ) -> None:
        run, out, code = orders_runs["duplicates.yaml"]
        assert run.probe["sweeps"] == 4
        assert len({a.schedule_time for a in run.attempts}) == 2
        assert rows_of(run) == [
            ("2026-09-24T02:00:00Z", 1, None, "UNAVAILABLE"),  # lost ack: it did sweep
            ("2026-09-24T02:00:00Z", 2, 200, "OK"),  # ...and sweeps again
            ("2026-09-25T02:00:00Z", 1, None, "DEADLINE_EXCEEDED"),  # still sweeping
            ("2026-09-25T02:00:00Z", 2, 200, "OK"),  # overlaps it: a second sweep
        ]
        assert code == 1
        assert out.endswith(
            "\n1 of 2 expectations unmet:\n  nightly: probe.sweeps == runs (observed 4; runs = 2)\n"
        )

    def test_with_the_guard_each_run_is_swept_once(
        self, orders_runs: dict[str, tuple[ScenarioRun, str, int]]
    ) -> None:
        run, out, code = orders_runs["duplicates-guarded.yaml"]
        assert run.probe["sweeps"] == 2
        assert rows_of(run) == [
            ("2026-09-24T02:00:00Z", 1, None, "UNAVAILABLE"),
            ("2026-09-24T02:00:00Z", 2, 200, "OK"),  # duplicate of a completed run
            ("2026-09-25T02:00:00Z", 1, None, "DEADLINE_EXCEEDED"),
            ("2026-09-25T02:00:00Z", 2, 409, "ABORTED"),  # overlaps the running sweep
            ("2026-09-25T02:00:00Z", 3, 200, "OK"),  # duplicate of the completed run
        ]
        assert code == 0, out
        table = timeline_of(out).splitlines()
        assert table[4].endswith(  # the guard's own answer: the reason every view shows
            "409  ABORTED            Conflict: This scheduled run is in progress in another "
            "attempt; retry later."
        )
        for row in (table[2], table[5]):
            assert "200  OK                 duplicate: the target already answered 200" in row
        assert "injected lost ack: the target answered 200, the answer was dropped" in table[1]
        assert "its late answer: 200" in table[3]
        assert out.endswith("\nAll 8 expectations hold.\n")
