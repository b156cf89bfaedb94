"""Backoff arithmetic and stop rules. The wait doubles from ``minBackoffDuration`` for
``maxDoublings`` retries, then grows linearly, capped at ``maxBackoffDuration``
(https://cloud.google.com/scheduler/docs/configuring/retry-jobs). Our pinned stop rule:
``retryCount`` and ``maxRetryDuration`` both 0 means no retry; otherwise retrying goes on while
either limit that is set is unmet."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_emulator.domain.resources import RetryConfig
from scheduler_emulator.domain.retry import backoff, gave_up_because, may_retry

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def seconds(n: float) -> timedelta:
    return timedelta(seconds=n)


class TestBackoff:
    @pytest.mark.parametrize(
        ("config", "expected"),
        [
            pytest.param(
                RetryConfig(
                    min_backoff_duration=seconds(10),
                    max_backoff_duration=seconds(300),
                    max_doublings=3,
                ),
                [10, 20, 40, 80, 160, 240, 300, 300],
                id="documented-example-10-300-3",
            ),
            pytest.param(RetryConfig(), [5, 10, 20, 40, 80], id="defaults-five-retries"),
            pytest.param(
                RetryConfig(min_backoff_duration=seconds(10), max_doublings=0),
                [10, 20, 30, 40, 50],
                id="zero-doublings-is-linear",
            ),
            pytest.param(
                RetryConfig(min_backoff_duration=seconds(1.5), max_backoff_duration=seconds(4)),
                [1.5, 3, 4, 4],
                id="fractional-min-capped-by-max",
            ),
        ],
    )
    def test_waits_follow_the_formula(self, config: RetryConfig, expected: list[float]) -> None:
        waits = [backoff(config, k).total_seconds() for k in range(1, len(expected) + 1)]
        assert waits == expected

    def test_retry_numbers_start_at_one(self) -> None:
        with pytest.raises(ValueError, match="starts at 1; got 0"):
            backoff(RetryConfig(), 0)


class TestMayRetry:
    @pytest.mark.parametrize(
        ("config", "retries_done", "elapsed", "expected"),
        [
            pytest.param(RetryConfig(), 0, 0, False, id="zero-count-zero-duration-never"),
            pytest.param(RetryConfig(retry_count=3), 2, 999, True, id="count-left"),
            pytest.param(RetryConfig(retry_count=3), 3, 0, False, id="count-exhausted"),
            pytest.param(
                RetryConfig(max_retry_duration=seconds(60)), 7, 59, True, id="duration-left"
            ),
            pytest.param(
                RetryConfig(max_retry_duration=seconds(60)), 0, 60, False, id="duration-spent"
            ),
            pytest.param(
                RetryConfig(retry_count=1, max_retry_duration=seconds(60)),
                5,
                30,
                True,
                id="both-set-duration-unmet",
            ),
            pytest.param(
                RetryConfig(retry_count=5, max_retry_duration=seconds(60)),
                2,
                600,
                True,
                id="both-set-count-unmet",
            ),
            pytest.param(
                RetryConfig(retry_count=2, max_retry_duration=seconds(60)),
                2,
                60,
                False,
                id="both-set-both-met",
            ),
        ],
    )
    def test_stop_rules(
        self, config: RetryConfig, retries_done: int, elapsed: float, expected: bool
    ) -> None:
        assert may_retry(config, retries_done, T0, T0 + seconds(elapsed)) is expected


class TestWhichLimitARunGaveUpOn:
    START = datetime(2026, 9, 24, 12, tzinfo=UTC)

    def test_a_retry_count_used_up(self) -> None:
        config = RetryConfig(retry_count=3)
        assert gave_up_because(config, 3, self.START, self.START) == "retry count"

    def test_a_max_retry_duration_passed(self) -> None:
        config = RetryConfig(max_retry_duration=timedelta(minutes=1))
        end = self.START + timedelta(minutes=2)
        assert gave_up_because(config, 4, self.START, end) == "max retry duration"

    def test_both_limits_reached(self) -> None:
        config = RetryConfig(retry_count=1, max_retry_duration=timedelta(minutes=1))
        end = self.START + timedelta(minutes=2)
        assert gave_up_because(config, 1, self.START, end) == "retry count and max retry duration"

    def test_no_retries_configured(self) -> None:
        assert gave_up_because(RetryConfig(), 0, self.START, self.START) == "no retries"
        # an extra retry (a lost acknowledgement, a restart) was made: its one retry is used up
        assert gave_up_because(RetryConfig(), 1, self.START, self.START) == "retry count"

    def test_a_retry_still_allowed_was_dropped_by_a_pause(self) -> None:
        config = RetryConfig(retry_count=3)
        assert gave_up_because(config, 1, self.START, self.START) == "job paused"
