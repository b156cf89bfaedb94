"""README's "What they print": the ``jobs`` and ``attempts`` tables it shows are what the daemon
prints after the README's own steps (the Orders example, a manual clock from
2026-09-24T01:59:00Z moved 120 s and then a day), the service's port aside.

A reader found the block showing a ``report`` run at 20:00 New York time, which
``0 */6 * * *`` never fires at, and a jobs table without the ``restock`` job.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import requests

from tests.daemon import running_daemon, serving
from tests.support import run_cli

REPO = Path(__file__).resolve().parents[2]
README_PORT = "http://127.0.0.1:8000"


def printed_block() -> list[str]:
    """The ```text block after "What they print" in README.md, its lines."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"What they print.*?\n\n```text\n(.*?)\n```", text, re.S)
    assert match, "README.md has no 'What they print' text block"
    return match.group(1).splitlines()


def test_the_readme_shows_what_jobs_and_attempts_print(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)  # restock fails, as the README's
    monkeypatch.syspath_prepend(str(REPO / "examples" / "orders"))
    sys.modules.pop("app", None)
    from app import create_app

    with serving(create_app()) as base:
        jobs = (REPO / "examples/orders/jobs.yaml").read_text(encoding="utf-8")
        (tmp_path / "jobs.yaml").write_text(jobs.replace(README_PORT, base), encoding="utf-8")
        with running_daemon(
            "--jobs", str(tmp_path / "jobs.yaml"), "--in-memory",
            "--clock", "manual", "--start", "2026-09-24T01:59:00Z",
        ) as daemon:  # fmt: skip
            for seconds in (120, 86400):
                requests.post(
                    f"{daemon.url}/_emulator/clock:advance", json={"seconds": seconds}, timeout=60
                ).raise_for_status()
            port = daemon.url.rsplit(":", 1)[1]
            jobs_code, jobs_out, _ = run_cli("jobs", "--port", port)
            code, attempts_out, _ = run_cli("attempts", "--port", port, "--job", "report",
                                            "--last", "2")  # fmt: skip
    assert (jobs_code, code) == (0, 0)
    printed = (jobs_out + "\n" + attempts_out).replace(base, README_PORT)
    assert [line.rstrip() for line in printed.splitlines()] == printed_block()
