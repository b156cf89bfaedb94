"""README's "What they print": the ``jobs``, ``runs`` and ``attempts`` tables it shows are what
the daemon prints after the README's own steps (the Orders example, a manual clock from
2026-09-24T01:59:00Z moved 120 s, a lost acknowledgement injected into nightly's first
attempts, then a day), the service's port aside, each within 120 columns.

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
            advance = f"{daemon.url}/_emulator/clock:advance"
            requests.post(advance, json={"seconds": 120}, timeout=60).raise_for_status()
            lost_ack = {"action": "lost_ack", "job": "nightly", "attempt": 1}
            requests.post(f"{daemon.url}/_emulator/faults", json=lost_ack, timeout=60)
            requests.post(advance, json={"seconds": 86400}, timeout=60).raise_for_status()
            port = daemon.url.rsplit(":", 1)[1]
            outputs = [
                run_cli("jobs", "--port", port),
                run_cli("runs", "--port", port, "--failed", "--last", "3"),
                run_cli("attempts", "--port", port, "--job", "nightly", "--last", "2"),
            ]
    assert [code for code, _, _ in outputs] == [0, 0, 0]
    printed = "\n".join(out for _, out, _ in outputs).replace(base, README_PORT)
    lines = [line.rstrip() for line in printed.splitlines()]
    assert lines == printed_block()
    assert max(len(line) for line in lines) <= 120  # a terminal's width, by default
