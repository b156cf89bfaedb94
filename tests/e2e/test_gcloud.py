"""``gcloud scheduler jobs …`` (Cloud SDK 528) against the live daemon.

gcloud runs with a scratch ``CLOUDSDK_CONFIG`` and no configuration other than what
``scheduler-emulator env-init`` prints, so these tests also prove that env-init is enough.
Jobs that are only scaffolding for the command under test are created through the REST API
(each gcloud call costs about a second of start-up).
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests
import yaml

from tests.daemon import Daemon
from tests.support import RecordingTarget, assert_delivered

pytestmark = pytest.mark.skipif(
    shutil.which("gcloud") is None,
    reason="gcloud is not on PATH; install the Google Cloud SDK to run the gcloud tests",
)

LOCATION = "us-central1"
PROJECT = "my-project"
OIDC_EMAIL = "scheduler-invoker@my-project.iam.gserviceaccount.com"
OIDC_AUDIENCE = "https://orders-abc123-uc.a.run.app"
#: gcloud retries a 5xx answer for about 30 s before giving up.
GCLOUD_TIMEOUT = 120


def env_init(daemon: Daemon) -> dict[str, str]:
    """Run ``scheduler-emulator env-init`` for ``daemon`` and parse its ``export`` lines.

    :return: the variables it exports, e.g. ``{"CLOUDSDK_CORE_PROJECT": "my-project", …}``.
    """
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    output = subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "env-init"]
        + ["--host", host, "--port", port, "--project", PROJECT],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    exported: dict[str, str] = {}
    for line in output.splitlines():
        if line.startswith("#"):  # the client notes: comments to the shell
            continue
        keyword, assignment = shlex.split(line)
        assert keyword == "export", line
        key, _, value = assignment.partition("=")
        exported[key] = value
    return exported


@dataclass
class Gcloud:
    """Runs ``gcloud scheduler jobs …`` configured only by env-init (plus offline switches)."""

    env: dict[str, str]

    @classmethod
    def for_daemon(cls, daemon: Daemon, config_dir: Path) -> Gcloud:
        """Configure gcloud for ``daemon`` with a scratch config directory.

        Every inherited ``CLOUDSDK_*`` variable is dropped so a developer's own gcloud setup
        cannot leak in.
        """
        env = {key: value for key, value in os.environ.items() if not key.startswith("CLOUDSDK_")}
        env.update(
            CLOUDSDK_CONFIG=str(config_dir),
            CLOUDSDK_CORE_DISABLE_PROMPTS="1",
            CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK="true",
            CLOUDSDK_CORE_DISABLE_USAGE_REPORTING="true",
        )
        env.update(env_init(daemon))
        return cls(env)

    @property
    def project(self) -> str:
        """The project env-init set."""
        return self.env["CLOUDSDK_CORE_PROJECT"]

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``gcloud scheduler jobs <args> --location=us-central1``."""
        return subprocess.run(
            ["gcloud", "scheduler", "jobs", *args, f"--location={LOCATION}"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=GCLOUD_TIMEOUT,
        )

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a command that must succeed; fail the test with gcloud's stderr otherwise."""
        result = self(*args)
        assert result.returncode == 0, result.stderr
        return result


def create_command(
    uri: str, schedule: str = "0 2 * * *", max_retry_attempts: int = 3
) -> tuple[str, ...]:
    """``gcloud scheduler jobs create http nightly`` for the Orders example's nightly job
    (examples/orders/jobs.yaml: OIDC token, 3 retries) with ``uri`` as the target."""
    return (
        "create",
        "http",
        "nightly",
        f"--schedule={schedule}",
        f"--uri={uri}",
        f"--oidc-service-account-email={OIDC_EMAIL}",
        f"--oidc-token-audience={OIDC_AUDIENCE}",
        f"--max-retry-attempts={max_retry_attempts}",
    )


def job_path(project: str, job: str = "nightly") -> str:
    return f"/v1/projects/{project}/locations/{LOCATION}/jobs/{job}"


def create_over_rest(daemon: Daemon, project: str, job: str, uri: str) -> None:
    """Create ``job`` through the REST API, as the Orders example's nightly job (retryCount 3)."""
    body = {
        "name": f"projects/{project}/locations/{LOCATION}/jobs/{job}",
        "schedule": "0 2 * * *",
        "timeZone": "Etc/UTC",
        "httpTarget": {"uri": uri, "httpMethod": "POST"},
        "retryConfig": {"retryCount": 3},
    }
    response = daemon.post(f"/v1/projects/{project}/locations/{LOCATION}/jobs", body)
    assert response.status_code == 200, response.text


def table(stdout: str) -> list[list[str]]:
    """Split gcloud's table output into cells (columns are separated by 2+ spaces)."""
    return [re.split(r" {2,}", line.strip()) for line in stdout.splitlines() if line.strip()]


HEADER = ["ID", "LOCATION", "SCHEDULE (TZ)", "TARGET_TYPE", "STATE"]


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch ``CLOUDSDK_CONFIG`` directory shared by the module's gcloud runs."""
    return tmp_path_factory.mktemp("cloudsdk")


@pytest.fixture(scope="module")
def gcloud(module_daemon: Daemon, config_dir: Path) -> Gcloud:
    """gcloud pointed at the module's daemon by env-init alone."""
    return Gcloud.for_daemon(module_daemon, config_dir)


def test_seed_create_command_delivers_the_nightly_post_at_two(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    app, uri = served_target
    daemon.reset(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))  # where MANUAL starts a daemon
    gcloud.ok(*create_command(uri))

    answer = daemon.post("/_emulator/clock:moveTo", {"time": "2026-09-24T02:00:00Z"})

    assert answer.json() == {"now": "2026-09-24T02:00:00Z"}
    [request] = app.wait_for(1)
    assert_delivered(request, "2026-09-24T02:00:00Z")


def test_describe_shows_enabled_state_default_deadline_and_retry_count(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    gcloud.ok(*create_command(served_target[1]))

    job = yaml.safe_load(gcloud.ok("describe", "nightly").stdout)

    assert job["name"] == f"projects/{gcloud.project}/locations/{LOCATION}/jobs/nightly"
    assert job["state"] == "ENABLED"
    assert job["attemptDeadline"] == "180s"
    assert job["schedule"] == "0 2 * * *"
    assert job["timeZone"] == "Etc/UTC"
    assert job["retryConfig"]["retryCount"] == 3
    assert job["httpTarget"]["uri"] == served_target[1]
    assert job["httpTarget"]["oidcToken"] == {
        "serviceAccountEmail": OIDC_EMAIL,
        "audience": OIDC_AUDIENCE,
    }


def test_list_prints_the_job_table(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    create_over_rest(daemon, gcloud.project, "nightly", served_target[1])

    rows = table(gcloud.ok("list").stdout)

    assert rows == [HEADER, ["nightly", LOCATION, "0 2 * * * (Etc/UTC)", "HTTP", "ENABLED"]]


def test_list_with_page_size_follows_next_page_token_to_all_five_jobs(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    names = ["nightly", "hourly", "weekly", "monthly", "yearly"]
    for name in names:
        create_over_rest(daemon, gcloud.project, name, served_target[1])

    rows = table(gcloud.ok("list", "--page-size=2").stdout)

    # gcloud prints one table (with its header) per page it fetched: 2 + 2 + 1 jobs.
    assert rows.count(HEADER) == 3
    assert [row[0] for row in rows if row != HEADER] == names


def test_update_schedule_keeps_retry_count(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    create_over_rest(daemon, gcloud.project, "nightly", served_target[1])

    # gcloud sends retryCount 0 (its default) in the body, with updateMask=schedule.
    gcloud.ok("update", "http", "nightly", "--schedule=0 3 * * *")

    job = yaml.safe_load(gcloud.ok("describe", "nightly").stdout)
    assert job["schedule"] == "0 3 * * *"
    assert job["retryConfig"]["retryCount"] == 3
    assert job["state"] == "ENABLED"


def test_pause_then_resume_switch_the_state(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    create_over_rest(daemon, gcloud.project, "nightly", served_target[1])

    paused = gcloud.ok("pause", "nightly")
    assert "Job has been paused." in paused.stderr
    assert daemon.get(job_path(gcloud.project))["state"] == "PAUSED"

    resumed = gcloud.ok("resume", "nightly")
    assert "Job has been resumed." in resumed.stderr
    assert daemon.get(job_path(gcloud.project))["state"] == "ENABLED"


def test_run_delivers_a_forced_request_to_the_target(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    app, uri = served_target
    create_over_rest(daemon, gcloud.project, "nightly", uri)

    result = gcloud.ok("run", "nightly")

    assert result.stdout == ""
    [request] = app.wait_for(1)
    assert request.path == "/_triggers/timer/nightly"
    assert request.headers["X-Cloudscheduler-Jobname"] == "nightly"
    assert request.headers["X-Cloudscheduler"] == "true"
    [attempt] = daemon.attempts("nightly")
    assert attempt["forced"] is True


def test_delete_quiet_removes_the_job(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
) -> None:
    create_over_rest(daemon, gcloud.project, "nightly", served_target[1])

    result = gcloud.ok("delete", "nightly", "--quiet")

    assert "Deleted job [nightly]." in result.stderr
    response = requests.get(daemon.url + job_path(gcloud.project), timeout=30)
    assert response.status_code == 404


class TestErrors:
    """gcloud exits 1 and prints ``ERROR: (command) STATUS: message``."""

    def error(self, result: subprocess.CompletedProcess[str]) -> str:
        assert result.returncode == 1, (result.stdout, result.stderr)
        return result.stderr

    def test_second_create_is_already_exists(
        self, daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
    ) -> None:
        create_over_rest(daemon, gcloud.project, "nightly", served_target[1])

        stderr = self.error(gcloud(*create_command(served_target[1])))

        assert stderr.startswith(
            "ERROR: (gcloud.scheduler.jobs.create.http) ALREADY_EXISTS: Job "
            f"projects/{gcloud.project}/locations/{LOCATION}/jobs/nightly already exists."
        )

    def test_describe_of_a_missing_job_is_not_found(self, daemon: Daemon, gcloud: Gcloud) -> None:
        stderr = self.error(gcloud("describe", "nightly"))

        assert stderr.startswith(
            "ERROR: (gcloud.scheduler.jobs.describe) NOT_FOUND: Job not found."
        )

    def test_six_field_schedule_is_invalid_argument(
        self, daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
    ) -> None:
        stderr = self.error(gcloud(*create_command(served_target[1], schedule="*/5 * * * * *")))

        assert stderr.startswith(
            "ERROR: (gcloud.scheduler.jobs.create.http) INVALID_ARGUMENT: "
            "Schedule or time zone is invalid."
        )
        assert requests.get(daemon.url + job_path(gcloud.project), timeout=30).status_code == 404

    def test_nine_retry_attempts_is_invalid_argument(
        self, daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
    ) -> None:
        stderr = self.error(gcloud(*create_command(served_target[1], max_retry_attempts=9)))

        assert stderr.startswith("ERROR: (gcloud.scheduler.jobs.create.http) INVALID_ARGUMENT: ")
        assert "retryCount" in stderr
        assert requests.get(daemon.url + job_path(gcloud.project), timeout=30).status_code == 404

    def test_resume_of_an_enabled_job_is_failed_precondition(
        self, daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str]
    ) -> None:
        create_over_rest(daemon, gcloud.project, "nightly", served_target[1])

        stderr = self.error(gcloud("resume", "nightly"))

        assert stderr.startswith("ERROR: (gcloud.scheduler.jobs.resume) FAILED_PRECONDITION: ")
        assert daemon.get(job_path(gcloud.project))["state"] == "ENABLED"


def test_a_job_with_a_1000000_byte_body_is_created(
    daemon: Daemon, gcloud: Gcloud, served_target: tuple[RecordingTarget, str], tmp_path: Path
) -> None:
    # Google's limit is 1 MB a job; over REST the body travels base64-encoded in JSON
    # (1,333,336 bytes here), which the daemon's request limit leaves room for.
    body = tmp_path / "body.bin"
    body.write_bytes(b"x" * 1_000_000)
    gcloud.ok(
        "create",
        "http",
        "big",
        "--schedule=0 2 * * *",
        f"--uri={served_target[1]}",
        f"--message-body-from-file={body}",
    )
    job = daemon.get(job_path(gcloud.project, "big"))
    assert base64.b64decode(job["httpTarget"]["body"]) == b"x" * 1_000_000
