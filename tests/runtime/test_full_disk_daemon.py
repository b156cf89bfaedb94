"""The daemon on a really full disk (a 4 MB tmpfs; needs root and mount, else skipped with the
reason): a refused PATCH, pause or clock advance answers 503 and leaves every read as before;
once space is back a pause and a resume do not store the refused PATCH; a restart finds the
last acknowledged state."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from tests.daemon import MANUAL, running_daemon, serving
from tests.runtime.test_data_dir_hostile import fill, small_disk  # noqa: F401 - the fixture
from tests.support import RecordingTarget

NAME = "projects/my-project/locations/us-central1/jobs/nightly"
JOB = "/v1/" + NAME


def reads(daemon: object) -> tuple[object, ...]:
    """The job, the list, the clock (its instant and ``nextDue``) and the attempts."""
    get = daemon.get  # type: ignore[attr-defined]
    return (
        get(JOB),
        get(JOB.rsplit("/", 1)[0]),
        get("/_emulator/clock"),
        get("/_emulator/attempts"),
    )


@pytest.mark.timeout(240)
def test_refused_changes_are_not_read_stored_later_or_found_after_a_restart(
    small_disk: Path,  # noqa: F811 - the fixture imported above
) -> None:
    data = small_disk / "data"
    args = ("--data-dir", str(data), *MANUAL)
    with serving(RecordingTarget()) as url, running_daemon(*args) as daemon:
        job = {"name": NAME, "schedule": "0 2 * * *", "httpTarget": {"uri": url}}
        assert daemon.post(JOB.rsplit("/", 1)[0], job).status_code == 200
        filler = fill(small_disk)
        acknowledged = None
        for attempt in range(300):  # the WAL may still take a few in space it already has
            body = {"description": f"try {attempt}", "schedule": "*/5 * * * *"}
            patched = requests.patch(daemon.url + JOB, json=body, timeout=60)
            if patched.status_code != 200:
                break
            acknowledged = patched.json()
        assert patched.status_code == 503, patched.text
        assert "the change was not stored" in patched.json()["error"]["message"]
        before = reads(daemon)
        assert before[0] == (acknowledged or before[0])
        paused = daemon.post(JOB + ":pause")
        advanced = daemon.post("/_emulator/clock:advance", {"seconds": 3600})
        assert (paused.status_code, advanced.status_code) == (503, 503), (paused, advanced)
        assert reads(daemon) == before  # the job, the list, the clock and nextDue
        filler.unlink()  # space is back
        assert daemon.post(JOB + ":pause").status_code == 200
        assert daemon.post(JOB + ":resume").status_code == 200
        kept = daemon.get(JOB)
        assert (kept.get("description"), kept["schedule"]) == (
            before[0].get("description"),
            before[0]["schedule"],
        )
        assert daemon.stop() == 0
        assert daemon.process.stderr is not None
        said = daemon.process.stderr.read()  # (trial 187: it still blamed the disk)
        assert "writes succeed again; those held were written" in said, said
        assert "scheduler-emulator stopped; jobs and attempts are in data dir" in said
        assert "could not be written" not in said.rsplit("scheduler-emulator stopped;", 1)[1]
    with running_daemon("--data-dir", str(data), "--clock", "manual") as again:
        restarted = again.get(JOB)
        assert (restarted.get("description"), restarted["schedule"], restarted["state"]) == (
            kept.get("description"),
            kept["schedule"],
            "ENABLED",
        )
