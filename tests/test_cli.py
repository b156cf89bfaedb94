"""``scheduler-emulator next`` and the command line's error handling."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scheduler_emulator.tools.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


class TestNext:
    def test_fall_back_day_prints_both_occurrences_of_the_repeated_time(self) -> None:
        result = run_cli(
            "next",
            "30 1 * * *",
            "--time-zone",
            "America/New_York",
            "--after",
            "2026-10-31T12:00:00Z",
            "-n",
            "3",
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-02T01:30:00-05:00",
        ]

    def test_vixie_policy_fires_a_fixed_time_job_once_on_fall_back_day(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = main(
            [
                "next",
                "30 1 * * *",
                "--time-zone",
                "America/New_York",
                "--after",
                "2026-10-31T12:00:00Z",
                "-n",
                "3",
                "--dst-policy",
                "vixie",
            ]
        )
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
        ],
    )
    def test_invalid_schedule_or_zone_exits_2_with_the_message(self, args: list[str]) -> None:
        result = run_cli("next", *args)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.startswith("error: Schedule or time zone is invalid.")


def test_python_dash_m_prints_help() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert "start" in result.stdout and "next" in result.stdout


def test_a_schedule_that_never_fires_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["next", "0 0 30 2 *", "--after", "2026-01-01T00:00:00Z"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no further fire time within 10 years (printed 0 of 5)" in captured.err
