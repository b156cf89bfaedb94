"""load_jobs_file: YAML/JSON jobs files, all or nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler_emulator.domain.codec import job_to_json
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.domain.resources import Job, OidcToken, RetryConfig
from scheduler_emulator.tools.jobs_file import load_jobs_file
from tests.support import case_table, retry_config_json, run_command, stored_http_target

PROJECT = "my-project"
LOCATION = "us-central1"
SA = "scheduler-invoker@my-project.iam.gserviceaccount.com"

# The Orders example's nightly job (examples/orders/jobs.yaml): 02:00 UTC daily, an OIDC token,
# 3 retries.
SEED_JOB: dict[str, Any] = {
    "name": "nightly",
    "schedule": "0 2 * * *",
    "timeZone": "Etc/UTC",
    "httpTarget": {
        "uri": "http://127.0.0.1:8000/_triggers/timer/nightly",
        "httpMethod": "POST",
        "oidcToken": {
            "serviceAccountEmail": SA,
            "audience": "https://orders-abc123-uc.a.run.app",
        },
    },
    "retryConfig": {"retryCount": 3},
}

# `gcloud scheduler jobs describe nightly --format=json` of that job right after create:
# state, the full retryConfig, attemptDeadline, httpMethod and User-Agent are the
# server's; scheduleTime and userUpdateTime are output only (added here as the service shows them).
SEED_DESCRIBE: dict[str, Any] = {
    "name": "projects/my-project/locations/us-central1/jobs/nightly",
    "httpTarget": {
        "uri": "http://127.0.0.1:8000/_triggers/timer/nightly",
        "httpMethod": "POST",
        "headers": {"User-Agent": "Google-Cloud-Scheduler"},
        "oidcToken": {
            "serviceAccountEmail": SA,
            "audience": "https://orders-abc123-uc.a.run.app",
        },
    },
    "schedule": "0 2 * * *",
    "timeZone": "Etc/UTC",
    "state": "ENABLED",
    "retryConfig": retry_config_json(3),
    "attemptDeadline": "180s",
}

SEED_EXPECTED = Job(
    name="projects/my-project/locations/us-central1/jobs/nightly",
    schedule="0 2 * * *",
    time_zone="Etc/UTC",
    http_target=stored_http_target(
        "http://127.0.0.1:8000/_triggers/timer/nightly",
        oidc_token=OidcToken(SA, "https://orders-abc123-uc.a.run.app"),
    ),
    retry_config=RetryConfig(retry_count=3),
    attempt_deadline=timedelta(seconds=180),
)


def job(name: str, **overrides: Any) -> dict[str, Any]:
    """A valid short-named job entry; ``overrides`` replace top-level keys."""
    entry: dict[str, Any] = {
        "name": name,
        "schedule": "*/5 * * * *",
        "httpTarget": {"uri": f"http://127.0.0.1:8000/{name}"},
    }
    entry.update(overrides)
    return entry


def write(tmp_path: Path, name: str, text: str) -> Path:
    """Write ``text`` to ``tmp_path/name`` and return the path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load(path: Path) -> list[Job]:
    return load_jobs_file(path, project=PROJECT, location=LOCATION)


def load_error(path: Path) -> str:
    with pytest.raises(ConfigurationError) as caught:
        load(path)
    return str(caught.value)


class TestSeedJob:
    @pytest.mark.parametrize(
        ("filename", "dump"),
        [
            pytest.param("jobs.yaml", lambda d: yaml.safe_dump(d, sort_keys=False), id="yaml"),
            pytest.param("jobs.json", lambda d: json.dumps(d, indent=2), id="json"),
        ],
    )
    def test_seed_job_loads_normalised_per_3_7(
        self, tmp_path: Path, filename: str, dump: Callable[[Any], str]
    ) -> None:
        path = write(tmp_path, filename, dump([SEED_JOB]))

        assert load(path) == [SEED_EXPECTED]

    def test_seed_job_serialises_like_the_real_describe_output(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.yaml", yaml.safe_dump([SEED_JOB]))

        (loaded,) = load(path)

        assert job_to_json(loaded) == SEED_DESCRIBE

    def test_describe_output_with_output_only_fields_loads_as_is(self, tmp_path: Path) -> None:
        describe = {
            **SEED_DESCRIBE,
            "userUpdateTime": "2026-05-07T05:46:25.029067Z",
            "scheduleTime": "2026-05-08T02:00:00Z",
            "lastAttemptTime": "2026-05-07T02:00:00.123Z",
            "status": {"code": -1},
            "state": "PAUSED",
        }
        path = write(tmp_path, "describe.json", json.dumps(describe))

        assert load(path) == [SEED_EXPECTED]

    def test_gcloud_yaml_describe_output_loads(self, tmp_path: Path) -> None:
        # gcloud's default output: YAML, keys sorted, timestamps quoted.
        text = """\
attemptDeadline: 180s
httpTarget:
  headers:
    User-Agent: Google-Cloud-Scheduler
  httpMethod: POST
  oidcToken:
    audience: https://orders-abc123-uc.a.run.app
    serviceAccountEmail: scheduler-invoker@my-project.iam.gserviceaccount.com
  uri: http://127.0.0.1:8000/_triggers/timer/nightly
name: projects/my-project/locations/us-central1/jobs/nightly
retryConfig:
  maxBackoffDuration: 3600s
  maxDoublings: 5
  maxRetryDuration: 0s
  minBackoffDuration: 5s
  retryCount: 3
schedule: 0 2 * * *
scheduleTime: '2026-05-08T02:00:00Z'
state: ENABLED
timeZone: Etc/UTC
userUpdateTime: '2026-05-07T05:46:25.029067Z'
"""
        path = write(tmp_path, "describe.yaml", text)

        assert load(path) == [SEED_EXPECTED]
        # what `list --format=yaml` prints: a document a job (trial 229: refused)
        other = text.replace("jobs/nightly", "jobs/weekly").replace("0 2 * * *", "0 3 * * 1")
        path = write(tmp_path, "list.yaml", f"---\n{text}---  # next\n{other}")
        nightly, weekly = load(path)
        assert nightly == SEED_EXPECTED and (weekly.job_id, weekly.schedule) == (
            "weekly",
            "0 3 * * 1",
        )


class TestLayouts:
    def test_list_of_jobs_in_file_order(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.json", json.dumps([job("b"), job("a")]))

        assert [j.job_id for j in load(path)] == ["b", "a"]

    def test_list_jobs_response_shape(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.json", json.dumps({"jobs": [job("a")], "nextPageToken": "x"}))

        assert [j.name for j in load(path)] == ["projects/my-project/locations/us-central1/jobs/a"]

    def test_yaml_flow_style_that_is_not_json_loads(self, tmp_path: Path) -> None:
        path = write(
            tmp_path,
            "jobs.yaml",
            "[{name: a, schedule: '0 1 * * *', httpTarget: {uri: 'http://x/'}}]",
        )

        assert [j.job_id for j in load(path)] == ["a"]

    def test_empty_file_has_no_jobs(self, tmp_path: Path) -> None:
        assert load(write(tmp_path, "jobs.yaml", "")) == []

    def test_empty_list_has_no_jobs(self, tmp_path: Path) -> None:
        assert load(write(tmp_path, "jobs.yaml", "[]\n")) == []

    def test_full_names_are_kept(self, tmp_path: Path) -> None:
        name = "projects/other-project/locations/europe-west1/jobs/x"
        path = write(tmp_path, "jobs.json", json.dumps([job(name)]))

        assert [j.name for j in load(path)] == [name]

    def test_path_may_be_a_string(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.json", json.dumps([job("a")]))

        assert len(load_jobs_file(str(path), project=PROJECT, location=LOCATION)) == 1


class TestRejections:
    @pytest.mark.parametrize(
        ("entries", "message"),
        [
            pytest.param(
                [job("ok"), job("nightly", retryConfig={"retryCount": 9})],
                'job 2 ("nightly"): retryConfig.retryCount must be between 0 and 5; got 9.',
                id="retry-count",
            ),
            pytest.param(
                [job("nightly", schedule="0 0 2 * * *")],
                'job 1 ("nightly"): schedule: ',
                id="bad-schedule",
            ),
            pytest.param(
                [job("nightly", timeZone="EST")],
                'job 1 ("nightly"): timeZone: ',
                id="bad-time-zone",
            ),
            pytest.param(
                [job("nightly", httpTarget={"uri": "ftp://x.test/"})],
                'job 1 ("nightly"): httpTarget.uri must start with http:// or '
                'https://; got "ftp://x.test/".',
                id="bad-uri",
            ),
            pytest.param(
                [job("bad.id")],
                'job 1 ("bad.id"): name has an invalid job ID "bad.id": use only '
                "letters, digits, hyphens and underscores.",
                id="bad-job-id",
            ),
            pytest.param(
                [job("projects/my-project/jobs/x")],
                'job 1 ("projects/my-project/jobs/x"): name "projects/my-project/jobs/x" is not '
                "of the form projects/<PROJECT_ID>/locations/<LOCATION_ID>/jobs/<JOB_ID>.",
                id="partial-full-name",
            ),
            pytest.param(
                [job("nightly", retry_config={"retryCount": "many"})],
                'job 1 ("nightly"): retryConfig.retryCount must be an integer; got "many".',
                id="wrong-type",
            ),
            pytest.param(
                [job("nightly", foo=1)],
                'job 1 ("nightly"): "foo" is not a field of Job; it has name, description, '
                "pubsubTarget, appEngineHttpTarget, httpTarget, schedule, timeZone, retryConfig, "
                "attemptDeadline.",
                id="unknown-field",
            ),
            pytest.param(
                [job("nightly", retry_config={"maxRetryDuraton": "5s"})],
                'job 1 ("nightly"): retryConfig.maxRetryDuraton: "maxRetryDuraton" is not a field '
                'of RetryConfig; did you mean "maxRetryDuration"?',
                id="misspelt-field",
            ),
            pytest.param(
                [job("nightly", retry_config={"min_backoff": "5s"})],
                'job 1 ("nightly"): retryConfig.min_backoff: "min_backoff" is not a field '
                'of RetryConfig; did you mean "min_backoff_duration"?',
                id="misspelt-snake-case-field",
            ),
            pytest.param(
                [job("nightly", description="d" * 501)],
                'job 1 ("nightly"): description must be at most 500 characters; got 501.',
                id="description",
            ),
            pytest.param(
                [
                    job("a"),
                    job("nightly"),
                    job("projects/my-project/locations/us-central1/jobs/nightly"),
                ],
                'job 3 ("projects/my-project/locations/us-central1/jobs/nightly"): '
                "duplicate name projects/my-project/locations/us-central1/jobs/nightly "
                "(also job 2).",
                id="duplicate-after-qualification",
            ),
            pytest.param(
                [{k: v for k, v in job("x").items() if k != "name"}],
                "job 1: name is required (a job ID such as nightly, or a full job name).",
                id="missing-name",
            ),
            pytest.param(
                [{**job("x"), "name": 7}],
                "job 1: name is required (a job ID such as nightly, or a full job name).",
                id="name-not-a-string",
            ),
            pytest.param(
                ["nightly"],
                'job 1: expected a job object; got "nightly".',
                id="entry-not-an-object",
            ),
        ],
    )
    def test_invalid_job_rejects_the_file_naming_job_field_and_value(
        self, tmp_path: Path, entries: list[Any], message: str
    ) -> None:
        path = write(tmp_path, "jobs.json", json.dumps(entries))

        error = load_error(path)

        assert error.startswith(f"{path}: {message}")

    def test_schedule_error_names_the_value(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.json", json.dumps([job("n", schedule="0 0 2 * * *")]))

        assert "0 0 2 * * *" in load_error(path)

    def test_time_zone_error_names_the_value(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.json", json.dumps([job("n", timeZone="Mars/Base")]))

        assert "Mars/Base" in load_error(path)

    def test_every_problem_is_listed_one_per_line(self, tmp_path: Path) -> None:
        entries = [
            job("a", retryConfig={"retryCount": 9}),
            job("b"),
            job("c", description="d" * 501),
        ]
        path = write(tmp_path, "jobs.json", json.dumps(entries))

        lines = load_error(path).splitlines()

        assert [line.split(": ", 2)[1] for line in lines] == ['job 1 ("a")', 'job 3 ("c")']

    def test_each_problem_of_a_job_is_listed(self, tmp_path: Path) -> None:
        """Trial 72 fixed one job's problems over three starts: each start named one."""
        entry = {"name": "cleanup", "schedule": "30 3 * * *", "timeZone": "Berlin",
                 "http_target": {"body": "{not base64}"}}  # fmt: skip
        path = write(tmp_path, "jobs.json", json.dumps([job("a"), entry]))

        lines = load_error(path).splitlines()

        label = f'{path}: job 2 ("cleanup"): '
        assert [line.removeprefix(label).split(" ", 1)[0] for line in lines] == [
            "httpTarget.body", "timeZone:", "httpTarget.uri",
        ]  # fmt: skip
        assert lines[2] == label + "httpTarget.uri is required."

    def test_a_bad_schedule_or_uri_does_not_hide_the_next_problem(self, tmp_path: Path) -> None:
        """Trial 78: a four-field schedule hid a misspelt time zone (the schedule left out was
        then missing, which was said already)."""
        entry = {"name": "five", "schedule": "*/5 * * *", "timeZone": "Europe/Londn",
                 "httpTarget": {"uri": "ftp://x/y"}, "retryConfig": {"retryCount": 9}}  # fmt: skip
        path = write(tmp_path, "jobs.json", json.dumps([entry, {**entry, "name": "five 2"}]))

        lines = load_error(path).splitlines()

        said = ["schedule:", "timeZone:", "httpTarget.uri", "retryConfig.retryCount"]
        label = f'{path}: job 1 ("five"): '
        assert [line.removeprefix(label).split(" ", 1)[0] for line in lines[:4]] == said
        label = f'{path}: job 2 ("five 2"): '  # (trial 223: a bad name hid the rest)
        assert [line.removeprefix(label).split(" ", 1)[0] for line in lines[4:]] == [
            "name", *said
        ]  # fmt: skip

    def test_problems_past_the_twentieth_are_counted_in_one_line(self, tmp_path: Path) -> None:
        entries = [job(f"j{i}", retryConfig={"retryCount": 9}) for i in range(1, 1001)]
        path = write(tmp_path, "jobs.json", json.dumps(entries))

        lines = load_error(path).splitlines()

        assert len(lines) == 21
        assert lines[19].startswith(f'{path}: job 20 ("j20"): retryConfig.retryCount')
        assert lines[20] == "… and 980 more problems."

    def test_invalid_yaml_names_the_file_and_hints_at_quoting(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.yaml", "- name: a\n  schedule: */5 * * * *\n")

        error = load_error(path)

        assert error.startswith(
            f"{path} line 2 column 14: not valid YAML or JSON (quote schedules that start"
        )
        assert "expected alphabetic or numeric character" in error
        assert "\n" not in error and "^" not in error  # one line, no source excerpt

    def test_invalid_json_falls_back_to_yaml_and_reports(self, tmp_path: Path) -> None:
        path = write(tmp_path, "jobs.json", '[{"name": "a",]')

        assert load_error(path).startswith(f"{path} line 1 column 15: not valid YAML or JSON")

    def test_missing_file_names_the_file(self, tmp_path: Path) -> None:
        path = tmp_path / "absent.yaml"

        assert load_error(path) == f"{path}: cannot read the jobs file: No such file or directory."

    def test_a_missing_relative_path_says_where_it_was_looked_for(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A trial's ``load_jobs("jobs.yml")`` did not say which directory it was read from."""
        monkeypatch.chdir(tmp_path)
        assert load_error(Path("jobs.yml")) == (
            f"jobs.yml: cannot read the jobs file: No such file or directory (looked for "
            f"{tmp_path / 'jobs.yml'})."
        )

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            pytest.param(
                '"just a string"',
                'expected a list of jobs, {"jobs": [...]} or a single job; got str '
                '"just a string".',
                id="string",
            ),
            pytest.param(
                '{"jobs": {"a": 1}}',
                "expected {\"jobs\": [...]}; got keys ['jobs'].",
                id="jobs-not-a-list",
            ),
            pytest.param(
                '{"jobs": [], "extra": 1}',
                "expected {\"jobs\": [...]}; got keys ['extra', 'jobs'].",
                id="jobs-with-extra-keys",
            ),
        ],
    )
    def test_wrong_layout_is_rejected(self, tmp_path: Path, text: str, message: str) -> None:
        path = write(tmp_path, "jobs.json", text)

        assert load_error(path) == f"{path}: {message}"


class TestHugeDurations:
    """A duration of thousands of digits is refused naming the job and the field, before its
    seconds are converted (it used to end in a ValueError traceback)."""

    @pytest.mark.parametrize(
        ("field", "overrides"),
        [
            ("attemptDeadline", {"attemptDeadline": "9" * 5000 + "s"}),
            (
                "retryConfig.minBackoffDuration",
                {"retryConfig": {"minBackoffDuration": "9" * 5000 + "s"}},
            ),
            (
                "retryConfig.maxBackoffDuration",
                {"retryConfig": {"maxBackoffDuration": "9" * 5000 + "s"}},
            ),
            (
                "retryConfig.maxRetryDuration",
                {"retryConfig": {"maxRetryDuration": "9" * 5000 + "s"}},
            ),
        ],
    )
    def test_a_5000_digit_duration_is_refused_naming_the_field(
        self, tmp_path: Path, field: str, overrides: dict[str, Any]
    ) -> None:
        path = write(tmp_path, "jobs.json", json.dumps([job("nightly", **overrides)]))
        said = load_error(path)
        assert f'job 1 ("nightly"): {field} must be at most 315576000000 seconds' in said

    @pytest.mark.timeout(120)
    def test_start_exits_2(self, tmp_path: Path) -> None:
        path = write(
            tmp_path, "jobs.json", json.dumps([job("nightly", attemptDeadline="9" * 5000 + "s")])
        )
        done = subprocess.run(
            [sys.executable, "-m", "scheduler_emulator", "start", "--jobs", str(path)]
            + ["--in-memory", "--port", "0"],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 2, done.stderr
        assert "attemptDeadline must be at most 315576000000 seconds" in done.stderr
        assert "Traceback" not in done.stderr


class TestBase64Fields:
    """``httpTarget.body`` and ``pubsubTarget.data`` are base64 text, as in the REST API
    (cases/jobs_file.toml)."""

    @case_table(__file__, "not_base64")
    def test_text_that_is_not_base64_is_refused_saying_how_to_encode_it(
        self, tmp_path: Path, target: dict[str, Any], field: str, value: str, encoded: str
    ) -> None:
        kind, spec = next(iter(target.items()))
        key = field.rsplit(".", 1)[1]
        entry = {"name": "nightly", "schedule": "0 2 * * *", kind: {**spec, key: value}}
        path = write(tmp_path, "jobs.json", json.dumps([entry]))
        message = load_error(path)
        assert message.startswith(f'{path}: job 1 ("nightly"): {field} must be a base64 string')
        assert json.dumps(value) in message  # the value, as JSON spells it
        assert f"echo -n '{value}' | base64 prints {encoded}" in message
        assert f"in YAML {key}: {encoded}." in message
        assert "\n" not in message

    def test_a_word_that_decodes_to_bytes_that_are_not_text_loads_with_a_warning(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(
            tmp_path,
            "jobs.yaml",
            "- name: nightly\n"
            "  schedule: '0 2 * * *'\n"
            "  httpTarget: {uri: 'http://a.test/x', body: hello1}\n"
            "- name: restock\n"
            "  schedule: '0 3 * * *'\n"
            "  pubsubTarget: {topicName: projects/my-project/topics/tick, data: ping}\n"
            "- name: fine\n"
            "  schedule: '0 4 * * *'\n"
            "  httpTarget: {uri: 'http://a.test/x', body: eyJhIjoxfQ==}\n",
        )
        jobs = load(path)
        assert [j.job_id for j in jobs] == ["nightly", "restock", "fine"]
        assert jobs[0].http_target is not None and jobs[0].http_target.body == b"\x85\xe9e\xa3"
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 2
        assert err[0].startswith(
            f'warning: {path}: job 1 ("nightly"): httpTarget.body "hello1" is read as base64'
        )
        assert "to send the text hello1, write its base64: body: aGVsbG8x" in err[0]
        assert err[1].startswith(
            f'warning: {path}: job 2 ("restock"): pubsubTarget.data "ping" is read as base64'
        )
        assert "data: cGluZw==" in err[1]

    def test_base64_that_decodes_to_text_or_looks_like_base64_loads_quietly(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        entries = [
            job("text", httpTarget={"uri": "http://a.test/x", "body": "aGVsbG8x"}),
            job("binary", httpTarget={"uri": "http://a.test/x", "body": "AAEC/w=="}),
        ]
        load(write(tmp_path, "jobs.json", json.dumps(entries)))
        assert capsys.readouterr().err == ""

    def test_a_paused_job_loads_enabled_with_a_warning(self, tmp_path: Path) -> None:
        """A trial's exported paused job came back enabled without a word."""
        entries = [job("cleanup", state="PAUSED"), job("nightly", state="ENABLED")]
        path = write(tmp_path, "jobs.json", json.dumps(entries))
        seen: list[str] = []
        jobs = load_jobs_file(path, project=PROJECT, location=LOCATION, warn=seen.append)
        assert [j.state.name for j in jobs] == ["ENABLED", "ENABLED"]
        assert seen == [
            f'warning: {path}: job 1 ("cleanup"): state PAUSED is output-only, as on CreateJob: '
            "a new job loads ENABLED and runs (one the data directory holds keeps its state); "
            "pause it with scheduler-emulator pause cleanup, "
            f"gcloud scheduler jobs pause cleanup --location={LOCATION}, or POST "
            "…/jobs/cleanup:pause."
        ]
        # one of another project is named in full (trial 201: its ID alone was not found)
        other = f"projects/other-project/locations/{LOCATION}/jobs/cleanup"
        path = write(tmp_path, "other.json", json.dumps([job(other, state="PAUSED")]))
        load_jobs_file(path, project=PROJECT, location=LOCATION, warn=seen.append)
        assert seen[-1].endswith(
            f"pause it with scheduler-emulator pause {other}, gcloud scheduler jobs pause "
            f"cleanup --location={LOCATION} --project=other-project, or POST …/jobs/cleanup:pause."
        )

    def test_a_schedule_that_never_fires_is_warned_about(self, tmp_path: Path) -> None:
        """Trial 201: ``0 0 31 2 *`` loaded without a word; only ``next`` said it never fires."""
        path = write(tmp_path, "jobs.json", json.dumps([job("never", schedule="0 0 31 2 *")]))
        seen: list[str] = []
        load_jobs_file(path, project=PROJECT, location=LOCATION, warn=seen.append)
        assert seen == [
            f"warning: {path}: job 1 (\"never\"): schedule '0 0 31 2 *' has no fire time within "
            "10 years: the job never runs (a day of the month that its months lack, such as 31 "
            "in February?)."
        ]

    def test_warnings_go_to_the_given_callback(self, tmp_path: Path) -> None:
        entry = job("nightly", httpTarget={"uri": "http://a.test/x", "body": "ping"})
        path = write(tmp_path, "jobs.json", json.dumps([entry]))
        seen: list[str] = []
        load_jobs_file(path, project=PROJECT, location=LOCATION, warn=seen.append)
        assert len(seen) == 1 and "httpTarget.body" in seen[0] and "nightly" in seen[0]


#: The case of each command that runs it as a real subprocess; the others run it in this process.
AS_A_SUBPROCESS = {"jobs-file-attempt-deadline", "fault-plan-seconds", "scenario-advance"}


@case_table(__file__, "huge_number")
def test_a_5000_digit_number_in_any_file_exits_2_naming_the_field(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    command: str,
    text: str,
    field: str,
) -> None:
    path = tmp_path / "file.yaml"
    path.write_text(text.replace("HUGE", "9" * 5000))
    process = request.node.callspec.id in AS_A_SUBPROCESS
    code, _, stderr = run_command(capsys, *command.split(), str(path), process=process)
    assert code == 2, stderr
    assert "Traceback" not in stderr and "set_int_max_str_digits" not in stderr
    assert stderr.startswith("error: ") and str(path) in stderr
    assert field in stderr, stderr


def test_a_file_over_the_job_count_is_refused_naming_the_limit_and_the_option(
    tmp_path: Path,
) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text("".join(f"- {{name: j{i}, schedule: '* * * * *'}}\n" for i in range(12)))
    with pytest.raises(ConfigurationError) as caught:
        load_jobs_file(path, project=PROJECT, location=LOCATION, max_jobs=10)
    assert str(caught.value) == (
        f"{path}: holds more jobs than the limit of 10 per file; raise it with "
        "--max-jobs-per-file N."
    )
    path.write_text(json.dumps({"jobs": [{"name": f"j{i}"} for i in range(12)]}))
    with pytest.raises(ConfigurationError, match="holds more jobs than the limit of 10 per"):
        load_jobs_file(path, project=PROJECT, location=LOCATION, max_jobs=10)


def test_start_says_it_is_loading_a_large_jobs_file_before_the_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_emulator.tools import cli

    small = write(tmp_path, "small.json", json.dumps([job("a")]))
    cli.load_jobs_by_file([str(small)], project="my-project", location="us-central1")
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(cli, "SAY_LOADING_BYTES", small.stat().st_size - 1)
    cli.load_jobs_by_file([str(small)], project="my-project", location="us-central1")
    assert capsys.readouterr().err.startswith(
        f"scheduler-emulator: loading 0.0 MB of jobs from {small}; the startup line follows"
    )
    with pytest.raises(ConfigurationError, match="larger than the limit"):  # (trial 112: it
        cli.load_jobs_by_file(  # said it was loading a file it then refused for its size)
            [str(small)], project="p", location="l", max_bytes=small.stat().st_size - 1
        )
    assert capsys.readouterr().err == ""


def test_an_app_engine_cron_yaml_says_what_it_is_and_how_to_write_it(tmp_path: Path) -> None:
    """A trial's cron.yaml was refused as "job 1: name is required"."""
    path = tmp_path / "cron.yaml"
    path.write_text("cron:\n- url: /tasks/summary\n  schedule: every 24 hours\n  target: worker\n")
    with pytest.raises(ConfigurationError, match="is an App Engine cron.yaml, not a jobs file"):
        load_jobs_file(path, project="p", location="us-central1")


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        (
            "jobs.json",
            '[{"name": "a", "schedule": "* * * * *", "schedule": "5 * * * *"}]',
            "1 column 41",
        ),
        (
            "jobs.yaml",
            '- name: a\n  schedule: "* * * * *"\n  schedule: "5 * * * *"\n',
            "3 column 3",
        ),
    ],
)
def test_a_key_written_twice_is_refused_naming_it_and_its_line(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    """A trial's file with two schedules loaded the last one without a word, where the API
    refuses a JSON object that names a key twice."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigurationError) as caught:
        load_jobs_file(path, project=PROJECT, location=LOCATION)
    assert f" {where}" in str(caught.value) and "found the key 'schedule' twice" in str(
        caught.value
    )
