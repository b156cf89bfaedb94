"""The one reason text of a failed attempt (``domain.attempts.failure_reason``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from scheduler_emulator.domain.attempts import REASON_WIDTH, Attempt, failure_reason

JOB = "projects/my-project/locations/us-central1/jobs/hourly"
FAILED = Attempt(
    1, JOB, 1, 1, None, datetime(2026, 1, 1, tzinfo=UTC), {"url": "http://h/_triggers/timer/cleanup"},
    response_status=500, code="INTERNAL",
)  # fmt: skip


def test_a_long_answer_is_cut_and_the_hint_after_it_is_whole() -> None:
    attempt = replace(FAILED, response_excerpt='{"error": "' + "x" * 500 + '"}')
    assert len(attempt.hint) > 40  # the route is not the job's name: the emulator says so
    answer, _, shown_hint = failure_reason(attempt).partition(" — emulator's hint: ")
    assert len(answer) == REASON_WIDTH and answer.endswith("…")
    assert shown_hint == " ".join(attempt.hint.split())


def test_an_empty_answer_says_so_beside_the_hint() -> None:
    reason = failure_reason(FAILED)
    assert reason.startswith("empty body — emulator's hint: timer route 'cleanup'")
    assert not reason.endswith("…")


def test_a_success_has_no_reason() -> None:
    assert failure_reason(replace(FAILED, response_status=200, code="OK")) == ""
