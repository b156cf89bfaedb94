"""Hostile environments for the data directory: a damaged database, a valid database with one
damaged row, a full disk, and a second daemon after the lock file was deleted (the daemon as a
real subprocess; of the many damaged files, one per family, the others in this process).

Each refusal exits 2 naming the file and what to do, leaves the file as it was, and prints no
traceback; a damaged attempt row is left out with a warning."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.runtime._options import STORE_FILE_NAME
from scheduler_emulator.server.server import serve
from tests.daemon import running_daemon, serving_in_thread
from tests.support import case_table, run_command

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"


def start(data_dir: Path, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``scheduler-emulator start`` on ``data_dir``, expected to exit by itself."""
    return subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "start", "--port", "0"]
        + ["--data-dir", str(data_dir), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


#: The case of each family that runs the daemon as a real subprocess (exit code, no traceback,
#: the whole stderr); the family's other cases run the command line's ``main`` (refusals) or an
#: emulator on the data directory served over HTTP (damaged history rows) in this process.
IN_A_PROCESS = {"truncated", "config-not-json", "start-time-yesterday"}


def refusal(data_dir: Path, request: pytest.FixtureRequest) -> tuple[int, str]:
    """``scheduler-emulator start`` on ``data_dir``, expected to refuse: its exit code and
    stderr; as a subprocess for the cases of :data:`IN_A_PROCESS`, else in this process."""
    code, _, err = run_command(
        request.getfixturevalue("capsys"),
        *("start", "--port", "0", "--data-dir", str(data_dir)),
        process=request.node.callspec.id in IN_A_PROCESS,
    )
    return code, err


def job(index: int) -> dict[str, object]:
    return {
        "name": f"{JOBS[4:]}/job{index}",
        "schedule": "* * * * *",
        "httpTarget": {"uri": "http://127.0.0.1:9/x"},
        "description": "d" * 300,
    }


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- damaged database


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory of 300 jobs and their attempts, cleanly closed."""
    data = tmp_path_factory.mktemp("healthy")
    emulator = Emulator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), data_dir=data)
    for index in range(300):
        emulator.create_job(job(index))
    emulator.advance(60)
    emulator.close()
    return data


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def garbage_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[4096 * 2 : 4096 * 4] = bytes(range(256)) * 32
    path.write_bytes(bytes(data))


def empty(path: Path) -> None:
    path.write_bytes(b"")


def drop_table(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE skipped")
    db.close()


def future_version(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()


def not_sqlite(path: Path) -> None:
    path.write_text("jobs: []\n")


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        pytest.param(truncate, "cannot be read (database disk image is malformed)", id="truncated"),
        pytest.param(garbage_pages, "is damaged", id="garbage-pages"),
        pytest.param(empty, "is empty (0 bytes)", id="zero-bytes"),
        pytest.param(drop_table, "has lost its skipped table", id="dropped-table"),
        pytest.param(future_version, "later release of scheduler-emulator", id="future-version"),
        pytest.param(not_sqlite, "is not an SQLite database", id="not-sqlite"),
    ],
)
def test_a_damaged_database_exits_2_naming_it_and_is_left_untouched(
    healthy: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    damage: Callable[[Path], None],
    problem: str,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(healthy, data)
    database = data / STORE_FILE_NAME
    damage(database)
    before = digest(database)
    code, stderr = refusal(data, request)
    assert code == 2, stderr
    assert "Traceback" not in stderr
    assert f"the database {database} " in stderr and problem in stderr
    assert "Move it aside" in stderr and "--data-dir" in stderr
    assert stderr.count("\n") == 1
    assert digest(database) == before
    assert not (data / f"{STORE_FILE_NAME}-wal").exists() or damage is drop_table


def test_the_healthy_copy_still_starts(healthy: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(healthy, data)
    with running_daemon("--data-dir", str(data)) as daemon:
        listed = daemon.get(JOBS + "?pageSize=500")
    assert len(listed["jobs"]) == 300


# ------------------------------------------------------------------------------- damaged rows

DAMAGED_JOB = f"{JOBS[4:]}/job7"


def damage_row(healthy: Path, tmp_path: Path, sql: str) -> Path:
    """A copy of ``healthy`` whose database ran ``sql`` (``:job`` is job7's full name, ``HUGE``
    a 5,000-digit number); return its data directory."""
    data = tmp_path / "data"
    shutil.copytree(healthy, data)
    with sqlite3.connect(data / STORE_FILE_NAME) as db:
        for statement in sql.replace("HUGE", "9" * 5000).split("; "):
            assert db.execute(statement, {"job": DAMAGED_JOB}).rowcount == 1, statement
    db.close()
    return data


@case_table(__file__, "damaged_at_start")
def test_a_damaged_row_read_at_start_exits_2_naming_file_table_job_and_field(
    healthy: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    table: str,
    sql: str,
    field: str,
    problem: str,
) -> None:
    data = damage_row(healthy, tmp_path, sql)
    database = data / STORE_FILE_NAME
    before = digest(database)
    code, stderr = refusal(data, request)
    assert code == 2, stderr
    assert "Traceback" not in stderr
    assert stderr.startswith(
        f"error: the database {database} has a damaged row in its {table} table: "
        f'job "{DAMAGED_JOB}", '
    ), stderr
    assert field in stderr and problem in stderr
    assert "Move it aside" in stderr and "--data-dir" in stderr
    assert stderr.count("\n") == 1
    assert digest(database) == before


def read_history(url: str) -> tuple[list[Any], Any, Any, Any, Any]:
    """Every page that reads the history (its window holds the damaged row), from the emulator
    at ``url``: two pages of attempts, job7's attempts, job7's timeline, the runs and job7's."""

    def get(path: str, **params: Any) -> Any:
        response = requests.get(url + path, params=params, timeout=30)
        response.raise_for_status()
        return response.json()

    pages = [get("/_emulator/attempts", pageSize=1000) for _ in range(2)]
    mine = get("/_emulator/attempts", job="job7")
    lanes = get("/_emulator/timeline", name="job7", pageSize=200)
    runs = get("/_emulator/runs", pageSize=1000)
    my_runs = get("/_emulator/runs", job="job7")
    get("/_emulator/jobs", pageSize=1000)
    get("/_emulator/skipped")
    return pages, mine, lanes, runs, my_runs


@case_table(__file__, "damaged_attempt")
def test_a_damaged_history_row_is_left_out_of_every_page_with_one_warning(
    healthy: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    sql: str,
    field: str,
    table: str,
) -> None:
    data = damage_row(healthy, tmp_path, sql)
    with sqlite3.connect(data / STORE_FILE_NAME) as db:
        damaged_id = db.execute(
            f"SELECT MIN(id) FROM {table} WHERE job = ?", (DAMAGED_JOB,)
        ).fetchone()[0]
        total = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    db.close()
    # On a manual clock before the next minute the healthy jobs are due at: nothing runs.
    if request.node.callspec.id in IN_A_PROCESS:
        clock = ("--clock", "manual", "--start", "2026-01-01T00:01:30Z")
        with running_daemon("--data-dir", str(data), *clock) as daemon:
            pages, mine, lanes, runs, my_runs = read_history(daemon.url)
            daemon.process.send_signal(signal.SIGTERM)
            daemon.process.wait(30)
            assert daemon.process.stderr is not None
            stderr = daemon.process.stderr.read()
    else:  # the daemon's stderr: what the emulator logged (with any traceback) or printed
        emulator = Emulator(ManualClock(datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)), data_dir=data)
        try:
            with serving_in_thread(serve(emulator, "127.0.0.1", 0)) as url:
                pages, mine, lanes, runs, my_runs = read_history(url)
        finally:
            emulator.close()
        stderr = capsys.readouterr().err + caplog.text
    if table == "attempts":
        for page in pages:
            ids = [attempt["id"] for attempt in page["attempts"]]
            assert len(ids) == total - 1 and damaged_id not in map(int, ids)
        assert mine.get("attempts", []) == []
    else:
        assert damaged_id not in [run["id"] for run in runs["runs"] + my_runs.get("runs", [])]
        assert len(runs["runs"]) == total - 1
    (lane,) = [lane for lane in lanes["lanes"] if lane["job"] == DAMAGED_JOB]
    if field in ("start_time", "end_time", "first_attempt_start"):  # what the timeline reads
        assert lane["runs"] == []
    others = [other for other in lanes["lanes"] if other is not lane]
    assert others and all(other["runs"] for other in others)
    assert "Traceback" not in stderr
    warning = (
        f"warning: the database {data / STORE_FILE_NAME} has a damaged row in its {table} "
        f'table: job "{DAMAGED_JOB}", {field} '
    )
    assert stderr.count(warning) == 1, stderr
    # A warning: the daemon goes on; no advice meant for a database it cannot start on.
    assert "left out of the emulator's pages" in stderr
    assert "Move it aside" not in stderr and "--data-dir" not in stderr, stderr


# --------------------------------------------------------------------------------------- lock


def test_deleting_every_file_but_the_database_does_not_let_a_second_daemon_in(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with running_daemon("--data-dir", str(data), "--clock", "manual") as first:
        assert first.post(JOBS, job(1)).status_code == 200
        deleted = []
        for path in data.iterdir():
            if path.name != STORE_FILE_NAME:
                path.unlink()
                deleted.append(path.name)
        assert "daemon.lock" in deleted
        second = start(data)
        still = first.get(JOBS)
    assert second.returncode == 2, second.stderr
    assert f"data directory {data} is in use" in second.stderr
    assert "Traceback" not in second.stderr
    assert [j["name"] for j in still["jobs"]] == [job(1)["name"]]


def test_a_start_that_fails_leaves_no_data_directory_it_made(tmp_path: Path) -> None:
    """Trial 74: a start refused for a port in use left the new data directory behind."""
    import socket

    kept = tmp_path / "kept"
    kept.mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = str(taken.getsockname()[1])
        made = run_command(
            None, "start", "--data-dir", str(tmp_path / "new" / "data"), "--port", busy
        )
        existing = run_command(None, "start", "--data-dir", str(kept), "--port", busy)
    for code, _, err in (made, existing):
        assert code == 2 and "Address already in use" in err, err
        assert (
            f"Another process holds it (another scheduler-emulator, or a service: `lsof -i :{busy}`"
            in err
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]  # what it did not make stays


# ---------------------------------------------------------------------------------- full disk


@pytest.fixture(params=["size=4m"])
def small_disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A 4 MB tmpfs (needs root and mount; another ``-o`` by indirect parametrizing); skipped
    with the reason when it cannot be had."""
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", request.param, "tmpfs", str(mount)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a small tmpfs for a full disk: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs for a full disk: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


@pytest.mark.parametrize("small_disk", ["size=1m,ro"], indirect=True)
def test_a_read_only_mount_is_named(small_disk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Trial 187: a read-only mount was "this user cannot write in …"."""
    code, _, err = run_command(capsys, "start", "--port", "0", "--data-dir", str(small_disk))
    assert code == 2 and err.startswith(
        f"error: --data-dir {small_disk} cannot be written (it is on a read-only mount): "
    ), err


def fill(disk: Path) -> Path:
    """Write a filler file until the disk is full; return it."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        try:
            while True:
                out.write(b"\0")
        except OSError:
            pass
    return filler


@pytest.mark.timeout(240)
def test_a_full_disk_refuses_creates_keeps_reads_and_loses_nothing(small_disk: Path) -> None:
    data = small_disk / "data"
    args = ("--data-dir", str(data), "--clock", "manual")
    with running_daemon(*args) as daemon:
        for index in range(3):
            assert daemon.post(JOBS, job(index)).status_code == 200
        assert daemon.post("/_emulator/clock:advance", {"seconds": 120}).status_code == 200
        attempts_before = daemon.get("/_emulator/attempts")
        filler = fill(small_disk)
        acknowledged = [job(index)["name"] for index in range(3)]
        refused = None
        for index in range(3, 300):  # the WAL may still hold a few in space it already has
            response = requests.post(daemon.url + JOBS, json=job(index), timeout=60)
            if response.status_code == 200:
                acknowledged.append(job(index)["name"])
                continue
            refused = response
            break
        assert refused is not None, "every create succeeded on a full disk"
        assert refused.status_code == 503
        error = refused.json()["error"]
        assert error["status"] == "UNAVAILABLE"
        assert f"data directory {data}" in error["message"] and "full" in error["message"]
        listed = daemon.get(JOBS + "?pageSize=500")
        assert [j["name"] for j in listed["jobs"]] == acknowledged  # nothing unstored listed
        assert daemon.get("/_emulator/attempts") == attempts_before  # reads keep working
        advanced = requests.post(
            daemon.url + "/_emulator/clock:advance", json={"seconds": 120}, timeout=60
        )
        assert advanced.status_code in (200, 503)
        daemon.process.send_signal(signal.SIGTERM)
        daemon.process.wait(30)
        assert daemon.process.stderr is not None
        stderr = daemon.process.stderr.read()
        assert "Traceback" not in stderr
        assert "except what could not be written (database or disk is full)" in stderr
    restarted = start(data)
    assert restarted.returncode == 2, restarted.stderr
    assert "Traceback" not in restarted.stderr
    assert f"the data directory {data} is full" in restarted.stderr
    filler.unlink()
    with running_daemon(*args) as daemon:
        listed = daemon.get(JOBS + "?pageSize=500")
        attempts_after = daemon.get("/_emulator/attempts")
    assert [j["name"] for j in listed["jobs"]] == acknowledged

    def key(attempt: dict[str, object]) -> tuple[object, ...]:
        return attempt["job"], attempt["runId"], attempt["attempt"], attempt["endTime"]

    before = {key(a) for a in attempts_before["attempts"]}
    assert len(before) >= 3 and before <= {key(a) for a in attempts_after["attempts"]}


def test_the_free_space_check_names_the_directory(tmp_path: Path) -> None:
    from scheduler_emulator.runtime.storage.data_file import DataFileUnusable, check_free_space

    with pytest.raises(DataFileUnusable, match=f"data directory {tmp_path} is full"):
        check_free_space(tmp_path, minimum=2**62)
    check_free_space(tmp_path, minimum=1)
    assert json.dumps(os.statvfs(tmp_path).f_bavail)  # the check reads real numbers


@pytest.fixture
def immutable() -> Iterator[Callable[[Path], None]]:
    """``immutable(path)``: make ``path`` unwritable even by root (``chattr +i``), undone after
    the test; skipped with the reason where that cannot be had (not root, no chattr)."""
    made: list[Path] = []

    def make(path: Path) -> None:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make {path} immutable: {done.stderr.strip()}")
        made.append(path)

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_an_unwritable_database_or_directory_exits_2_naming_it(
    healthy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], immutable: Any
) -> None:
    """Trial 74: on a read-only database the daemon said it was listening, logged 1,226 failed
    writes, lost its engine thread to a traceback and answered its health checks for ever; an
    unwritable directory gave a bare "[Errno 1] Operation not permitted"."""
    data = tmp_path / "data"
    shutil.copytree(healthy, data)
    immutable(data / STORE_FILE_NAME)
    start = ("start", "--port", "0", "--data-dir", str(data))
    code, _, err = run_command(None, *start)  # (a process: one that listens has to be stopped)
    said = (
        f"error: cannot start: the database {data / STORE_FILE_NAME} cannot be opened or "
        "written ({}): make it and its directory writable by this user (its owner and mode, "
        "an immutable flag (lsattr), a read-only mount), or pass --data-dir DIR elsewhere.\n"
    )
    assert (code, err) == (2, said.format("attempt to write a readonly database"))
    subprocess.run(["chattr", "-i", str(data / STORE_FILE_NAME)], check=True)
    immutable(data)  # trial 75: "damaged or not a database. … Move it aside (mv …)"
    code, _, err = run_command(capsys, *start)  # (refused before it listens, fixed or not)
    assert (code, err) == (2, (
        f"error: --data-dir {data} cannot be written (this user cannot write in it): make it "
        "writable by this user (its owner and mode, an immutable flag (lsattr), a read-only "
        "mount), or pass another --data-dir.\n"
    ))  # fmt: skip
    locked = tmp_path / "locked"
    locked.mkdir()
    immutable(locked)
    new = locked / "new"
    for where, why in ((locked, "this user cannot write in it"),
                       (new, f"Operation not permitted: {new}")):  # fmt: skip
        code, _, err = run_command(capsys, "start", "--port", "0", "--data-dir", str(where))
        assert code == 2 and err == (
            f"error: --data-dir {where} cannot be written ({why}): make it writable by this user "
            "(its owner and mode, an immutable flag (lsattr), a read-only mount), or pass "
            "another --data-dir.\n"
        )
