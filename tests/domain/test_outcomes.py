"""Outcome classification of attempts: only a final 2xx answer is a success; each failure gets
the code and debug text Cloud Scheduler logs for it (those seen in production exactly, the rest
our pinned mapping, listed in docs/differences-from-production.md)."""

from __future__ import annotations

import pytest

from scheduler_emulator.domain.outcomes import Failure, classify_failure, classify_status


@pytest.mark.parametrize(
    ("status", "code", "debug_info"),
    [
        (200, "OK", "URL_CRAWLED. Original HTTP response code number = 200"),
        (204, "OK", "URL_CRAWLED. Original HTTP response code number = 204"),
        (
            401,
            "UNAUTHENTICATED",
            "URL_ERROR-ERROR_AUTHENTICATION. Original HTTP response code number = 401",
        ),
        (
            403,
            "PERMISSION_DENIED",
            "URL_ERROR-ERROR_OTHER. Original HTTP response code number = 403",
        ),
        (404, "NOT_FOUND", "URL_ERROR-ERROR_NOT_FOUND. Original HTTP response code number = 404"),
        (
            500,
            "INTERNAL",
            "URL_UNREACHABLE-UNREACHABLE_5xx. Original HTTP response code number = 500",
        ),
        (
            504,
            "DEADLINE_EXCEEDED",
            "URL_TIMEOUT-TIMEOUT_WEB. Original HTTP response code number = 504",
        ),
        (
            400,
            "INVALID_ARGUMENT",
            "URL_ERROR-ERROR_OTHER. Original HTTP response code number = 400",
        ),
        (
            429,
            "RESOURCE_EXHAUSTED",
            "URL_ERROR-ERROR_OTHER. Original HTTP response code number = 429",
        ),
        (
            503,
            "UNAVAILABLE",
            "URL_UNREACHABLE-UNREACHABLE_5xx. Original HTTP response code number = 503",
        ),
    ],
)
def test_http_status_maps_to_the_logged_code_and_debug_text(
    status: int, code: str, debug_info: str
) -> None:
    outcome = classify_status(status)
    assert (outcome.code, outcome.debug_info, outcome.http_status) == (code, debug_info, status)
    assert outcome.ok is (code == "OK")


def test_a_redirect_left_unfollowed_is_a_failure() -> None:
    assert not classify_status(302).ok


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (Failure.CONNECTION, "UNAVAILABLE"),
        (Failure.DEADLINE, "DEADLINE_EXCEEDED"),
        (Failure.RESTARTED, "UNAVAILABLE"),
    ],
)
def test_failures_without_response_have_no_http_status(failure: Failure, code: str) -> None:
    outcome = classify_failure(failure, "Connection refused.")
    assert outcome.code == code
    assert outcome.http_status is None
    assert outcome.debug_info.endswith(". Connection refused.")
