"""One daemon per data directory, a per-project default directory, and a stop that does not
hang on a target that never answers (the daemon as a real subprocess)."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
import requests

from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.realtime import real_monotonic
from scheduler_emulator.runtime.storage.data_dir_lock import DataDirInUse, DataDirLock
from scheduler_emulator.runtime.storage.store import Store
from scheduler_emulator.tools.cli import default_data_dir
from tests.daemon import MANUAL, running_daemon
from tests.drip import DripTarget, drip_server
from tests.support import wait_for


class TestOneDaemonPerDataDirectory:
    def test_a_second_daemon_on_the_same_data_dir_exits_2_naming_the_first(
        self, tmp_path: Path
    ) -> None:
        with running_daemon("--data-dir", str(tmp_path)) as first:
            _, port = first.host_port
            second = subprocess.run(
                [sys.executable, "-m", "scheduler_emulator", "start", "--port", "0"]
                + ["--data-dir", str(tmp_path)],
                capture_output=True,
                text=True,
                timeout=60,
            )
        assert second.returncode == 2
        assert f"pid {first.process.pid}, port {port}" in second.stderr
        assert "--data-dir" in second.stderr

    def test_the_lock_is_free_again_once_its_holder_released_it(self, tmp_path: Path) -> None:
        first = DataDirLock(tmp_path)
        first.acquire()
        first.note_port(8095)
        with pytest.raises(DataDirInUse, match=f"pid {os.getpid()}, port 8095"):
            DataDirLock(tmp_path).acquire()
        first.release()
        again = DataDirLock(tmp_path)
        again.acquire()
        again.release()

    def test_a_lock_file_that_cannot_be_opened_leaves_the_directory_unlocked(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "daemon.lock").mkdir()  # open() fails: IsADirectoryError
        with pytest.raises(ConfigurationError, match="lock file .*daemon.lock is a directory"):
            DataDirLock(tmp_path).acquire()
        (tmp_path / "daemon.lock").rmdir()
        again = DataDirLock(tmp_path)
        again.acquire()  # the directory's own lock was let go: no DataDirInUse
        again.release()


class TestDefaultDataDirectory:
    def test_two_project_directories_get_two_data_directories(self, tmp_path: Path) -> None:
        (tmp_path / "a" / "app").mkdir(parents=True)
        (tmp_path / "b" / "app").mkdir(parents=True)
        first = default_data_dir(tmp_path / "a" / "app")
        second = default_data_dir(tmp_path / "b" / "app")
        assert first != second
        assert first.name.startswith("app-") and second.name.startswith("app-")

    def test_the_same_project_finds_the_same_data_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        monkeypatch.chdir(tmp_path)
        assert default_data_dir() == default_data_dir(tmp_path)
        assert default_data_dir().parent == tmp_path / "data" / "scheduler-emulator"
        monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # ignored, as the XDG spec says
        assert default_data_dir().parent == Path.home() / ".local/share/scheduler-emulator"


class TestStopping:
    def test_a_signal_that_comes_while_the_stop_event_is_locked_still_stops_it(self) -> None:
        """Trial 211: a daemon under ``timeout``, sent SIGTERM twice at once, hung for ever:
        the second handler ran while the first held its stop event's lock, and waited on it."""
        from scheduler_emulator import EmulatorOptions
        from scheduler_emulator.server.daemon import Daemon

        made: dict[str, Daemon] = {}  # (made off the main thread: no handler is installed here)
        maker = threading.Thread(target=lambda: made.update(d=Daemon(EmulatorOptions(), port=0)))
        maker.start()
        maker.join(30)
        daemon, thresholds = made["d"], gc.get_threshold()
        health = f"http://127.0.0.1:{daemon.server.server_port}/_emulator/health"
        runner = threading.Thread(target=daemon.run)
        try:
            runner.start()
            wait_for(lambda: requests.get(health, timeout=5).ok, 30, "the daemon serving")
            with daemon._stopping._cond:  # held, as by the code a signal interrupts
                handler = threading.Thread(target=daemon._signalled, args=(signal.SIGTERM, None))
                handler.daemon = True
                handler.start()
                handler.join(5)
                assert not handler.is_alive(), "the handler waited on the stop event's lock"
            runner.join(30)  # the signal's stop, carried out by the serving loop
        finally:  # run() froze the objects collected so far and raised the thresholds
            gc.unfreeze()
            gc.set_threshold(*thresholds)
        assert not runner.is_alive()

    def test_a_log_on_a_full_disk_loses_its_lines_not_the_stop(self) -> None:
        """A trial: a daemon logging to /dev/full exited 2 with a bare error when stopped."""
        with running_daemon("--in-memory", *MANUAL, "--log-file", "/dev/full") as daemon:
            name = "projects/my-project/locations/us-central1/jobs/nightly"
            refused = {"uri": "http://127.0.0.1:9/_triggers/timer/nightly"}
            job = {"name": name, "schedule": "0 2 * * *", "httpTarget": refused}
            assert daemon.post(f"/v1/{name.rsplit('/', 2)[0]}/jobs", job).status_code == 200
            daemon.advance(timedelta(minutes=1))  # its 02:00 run: an attempt, two lines lost
            daemon.process.send_signal(signal.SIGTERM)
            assert daemon.process.wait(timeout=30) == 0
            assert daemon.process.stderr is not None
            err = daemon.process.stderr.read()
        assert "AttemptStarted not logged: [Errno 28] No space left on device" in err
        assert "note: --log-file /dev/full: lines not written: [Errno 28]" in err
        assert "scheduler-emulator stopped" in err

    def test_a_stop_signal_sent_twice_at_once_is_one_stop_not_exit_now(self) -> None:
        """Trial 166: ``timeout`` (and ``kill -- -PGID``) signals the daemon and its group: the
        copy, taken for a second Ctrl-C, exited 143 at once, recording nothing."""
        hang = DripTarget(mode="hang", limit_seconds=60)
        with drip_server(hang) as base, running_daemon("--in-memory", *MANUAL) as daemon:
            name = "projects/my-project/locations/us-central1/jobs/hung"
            job = {"name": name, "schedule": "0 0 1 1 *", "httpTarget": {"uri": base + "/h"}}
            assert daemon.post(f"/v1/{name.rsplit('/', 2)[0]}/jobs", job).status_code == 200
            assert daemon.post(f"/v1/{name}:run").status_code == 200
            assert wait_for(lambda: hang.requests >= 1, bound_seconds=10)
            daemon.process.send_signal(signal.SIGTERM)
            assert daemon.process.stderr is not None
            lines = iter(daemon.process.stderr.readline, "")
            assert any("scheduler-emulator stopping:" in line for line in lines)
            daemon.process.send_signal(signal.SIGTERM)  # while it waits for the hung attempt
            assert daemon.process.wait(timeout=30) == 0
            rest = daemon.process.stderr.read()
        assert "exiting now" not in rest and "1 attempt(s) recorded as interrupted" in rest

    def test_sigterm_with_a_hung_delivery_exits_within_3_s_and_records_it_interrupted(
        self, tmp_path: Path
    ) -> None:
        hang = DripTarget(mode="hang", limit_seconds=60)
        jobs = tmp_path / "jobs.json"
        with drip_server(hang) as base:
            jobs.write_text(
                json.dumps(
                    [
                        {
                            "name": "hung",
                            "schedule": "0 0 1 1 *",
                            "httpTarget": {"uri": base + "/_triggers/timer/hung"},
                        }
                    ]
                )
            )
            data = tmp_path / "data"
            with running_daemon("--data-dir", str(data), "--jobs", str(jobs)) as daemon:
                name = "projects/my-project/locations/us-central1/jobs/hung"
                for _ in range(6):  # 4 sent at once (a job's bound), 2 queued behind them
                    assert daemon.post(f"/v1/{name}:run").status_code == 200
                assert wait_for(lambda: hang.requests >= 4, bound_seconds=10)
                started = real_monotonic()
                daemon.process.send_signal(signal.SIGTERM)
                daemon.process.wait(timeout=10)
                took = real_monotonic() - started
                assert daemon.process.stderr is not None
                stderr = daemon.process.stderr.read()
        assert took < 3.0, took
        assert daemon.process.returncode == 0
        assert "6 attempt(s) in flight or queued" in stderr
        assert "6 attempt(s) recorded as interrupted or not sent" in stderr
        # the stop line says the retry is kept (a trial's said nothing of a pending retry)
        assert "data dir" in stderr and ", 1 job with a retry pending (the first due " in stderr
        store = Store(data / "emulator.db")
        try:
            attempts = store.attempts()
            # retried at the next start: one retry beyond its config (none), as after a crash
            runs = store.open_runs()
        finally:
            store.close()
        assert {a.code for a in attempts} == {"UNAVAILABLE"}
        # those queued say so (trial 219: all six read "in flight", four had arrived)
        said = sorted(a.debug_info.rsplit(". ", 1)[-1] for a in attempts)
        assert said == 2 * ["The emulator stopped before the attempt was sent."] + 4 * [
            "The emulator stopped while the attempt was in flight."
        ]
        assert hang.requests == 4
        assert len(runs) == 6 and all(run.next_attempt_at is not None for run in runs)
        with running_daemon("--data-dir", str(data), "--jobs", str(jobs)) as again:
            assert ", 1 job with a retry pending (the first due " in again.first_line


def test_a_daemon_says_which_dst_policy_it_uses() -> None:
    """Trial 85: two daemons, one with ``--dst-policy vixie``, fired different runs on a
    transition night with the same startup line and ``/_emulator/config``."""
    with running_daemon("--in-memory", *MANUAL, "--dst-policy", "vixie") as daemon:
        assert ", DST policy vixie, in memory" in daemon.first_line
        assert daemon.get("/_emulator/config")["dstPolicy"] == "vixie"
    with running_daemon("--in-memory", *MANUAL) as daemon:  # the default: not in the line
        assert "DST policy" not in daemon.first_line
        assert daemon.get("/_emulator/config")["dstPolicy"] == "absolute"
