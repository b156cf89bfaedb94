"""Retry arithmetic: how long to wait before a retry, and whether to retry at all.

Pure functions of a :class:`~scheduler_emulator.domain.resources.RetryConfig`, following Google's
rules (https://cloud.google.com/scheduler/docs/configuring/retry-jobs), plus two of ours where
Google is silent: with both ``retryCount`` and ``maxRetryDuration`` set, retries go on while
either limit is unmet; the wait before a retry counts from the end of the failed attempt.
The documented example (min 10 s, max 300 s, 3 doublings) gives waits of
10, 20, 40, 80, 160, 240, 300, 300 s::

    >>> from datetime import timedelta as td
    >>> cfg = RetryConfig(min_backoff_duration=td(seconds=10),
    ...                   max_backoff_duration=td(seconds=300), max_doublings=3)
    >>> [int(backoff(cfg, k).total_seconds()) for k in range(1, 9)]
    [10, 20, 40, 80, 160, 240, 300, 300]
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .resources import RetryConfig

__all__ = [
    "GAVE_UP_COUNT",
    "GAVE_UP_DELETED",
    "GAVE_UP_DURATION",
    "GAVE_UP_NO_RETRIES",
    "GAVE_UP_PAUSED",
    "backoff",
    "gave_up_because",
    "max_attempts",
    "may_retry",
    "next_attempt_time",
]

_MICROSECOND = timedelta(microseconds=1)


def backoff(config: RetryConfig, retry_number: int) -> timedelta:
    """Return the wait before the ``retry_number``-th retry of a run.

    With ``min``, ``max`` and ``d`` the config's min/max backoff and max doublings: the wait is
    ``min × 2^(k−1)`` while ``k − 1 ≤ d``, then ``min × 2^d × (k − d)``, capped at ``max``.
    The wait counts from the end of the failed attempt (our pinned rule).

    :param config: the job's retry config.
    :param retry_number: 1 for the first retry, 2 for the second, …
    :raises ValueError: if ``retry_number`` < 1.
    :return: the wait as a timedelta, never more than ``max`` (computed without building a
        larger value, so any ``maxDoublings`` and any durations are safe).
    """
    if retry_number < 1:
        raise ValueError(f"retry_number starts at 1; got {retry_number}.")
    k, d = retry_number, max(config.max_doublings, 0)
    # Integer microseconds, capped before anything is multiplied: maxDoublings may be any int32
    # and a duration up to the proto's 10,000 years, so min × 2^d must never be built (it
    # overflows timedelta, and 2^(2^31) would exhaust memory).
    minimum = config.min_backoff_duration // _MICROSECOND
    maximum = config.max_backoff_duration // _MICROSECOND
    if minimum <= 0 or maximum <= 0:
        return max(min(config.min_backoff_duration, config.max_backoff_duration), timedelta(0))
    doublings = min(k - 1, d)
    if doublings >= maximum.bit_length():  # 2^doublings alone exceeds the cap
        return config.max_backoff_duration
    wait = minimum << doublings
    if k - 1 > d:
        wait *= k - d  # linear growth after d doublings; k is small, wait is capped below
    return min(timedelta(microseconds=wait), config.max_backoff_duration)


def may_retry(
    config: RetryConfig, retries_done: int, first_attempt_start: datetime, now: datetime
) -> bool:
    """Tell whether a run whose latest attempt just failed gets another attempt.

    - ``retryCount`` 0 and ``maxRetryDuration`` 0: never.
    - count only: while ``retries_done < retryCount``.
    - duration only: while less than ``maxRetryDuration`` has passed since the first attempt
      started.
    - both: while *either* limit is unmet.

    :param config: the job's retry config.
    :param retries_done: retries already made in this run (0 after the first attempt failed).
    :param first_attempt_start: when the run's first attempt started (aware).
    :param now: the end of the failed attempt (aware).
    :return: ``True`` if a retry should be scheduled.
    """
    count_left = retries_done < config.retry_count
    duration = config.max_retry_duration
    time_left = duration > timedelta(0) and now - first_attempt_start < duration
    return count_left or time_left


def next_attempt_time(
    config: RetryConfig,
    *,
    code: str,
    attempts_made: int,
    first_attempt_start: datetime,
    end_time: datetime,
    may_run: bool,
    extra_retry: bool = False,
    uncounted: int = 0,
) -> tuple[datetime | None, bool]:
    """The whole after-attempt decision: when the run's next attempt is due, if any.

    A run gets another attempt when its latest attempt failed (``code`` is not ``"OK"``), the
    job may still run (``may_run``: it is ENABLED, or the run was forced), and
    :func:`may_retry` allows — or, when it does not, the run holds an ``extra_retry`` earned by
    a lost acknowledgement (at-least-once delivery), which this spends. The attempt is
    due :func:`backoff` after the failed attempt's end.

    :param code: the google.rpc code name of the attempt that just ended.
    :param attempts_made: attempts of the run so far, the one that just ended included (≥ 1).
    :param first_attempt_start: when the run's first attempt started (aware).
    :param end_time: when the attempt that just ended ended (aware).
    :param may_run: the job is ENABLED or the run is forced.
    :param extra_retry: the run holds a retry beyond its config.
    :param uncounted: non-zero when the attempt that just ended is retried whatever the config
        and does not count against ``retryCount`` (an App Engine target's 503): the
        number of such attempts in a row; the wait is then the backoff of that retry number
        (pinned).
    :return: ``(when, extra_retry_left)``: the aware UTC instant of the next attempt, or
        ``None`` to end the run (also when the instant would fall past year 9999), and whether
        the run still holds its extra retry.
    """
    if code == "OK" and not extra_retry:  # the run ends (what follows would say so too)
        return None, False
    if uncounted and may_run:
        allowed = True
        wait_number = uncounted
    else:
        allowed = may_retry(config, attempts_made - 1, first_attempt_start, end_time)
        wait_number = attempts_made
    if not allowed and extra_retry:
        allowed, extra_retry = True, False
    if code == "OK" or not may_run or not allowed:
        return None, extra_retry
    try:
        return (end_time + backoff(config, wait_number)).astimezone(UTC), extra_retry
    except OverflowError:  # a backoff past the calendar: the run cannot be retried
        return None, extra_retry


#: Why a run ended without success (:func:`gave_up_because`): its retry count was used up…
GAVE_UP_COUNT = "retry count"
#: … its max retry duration had passed …
GAVE_UP_DURATION = "max retry duration"
#: … its job retries nothing (``retryCount`` 0 and no ``maxRetryDuration``) …
GAVE_UP_NO_RETRIES = "no retries"
#: … or the job was paused (a paused job's pending retries are dropped).
GAVE_UP_PAUSED = "job paused"
#: … or the job was deleted (its open runs end with it).
GAVE_UP_DELETED = "job deleted"


def max_attempts(
    config: RetryConfig | None, extra_retry: bool = False, uncounted: int = 0
) -> int | None:
    """The attempts a run of ``config`` makes at most: ``retryCount`` plus one, plus one more
    when the run earned a retry beyond its config (a restart, a lost acknowledgement), plus its
    ``uncounted`` attempts so far (App Engine 503s, retried whatever the config: each one more
    raises the bound), while it goes on and once it ended alike; ``None`` when the count does
    not bound the run (a ``maxRetryDuration`` is set, or no config is known)."""
    if config is None or config.max_retry_duration:
        return None
    return config.retry_count + 1 + extra_retry + uncounted


def gave_up_because(
    config: RetryConfig, retries_done: int, first_attempt_start: datetime, end_time: datetime
) -> str:
    """Which limit ended a run whose last attempt failed: the same rule as :func:`may_retry`,
    read the other way.

    :param config: the job's retry config.
    :param retries_done: retries the run made (its attempts less one).
    :param first_attempt_start: when the run's first attempt started (aware).
    :param end_time: when its last attempt ended (aware).
    :return: :data:`GAVE_UP_NO_RETRIES` when the config allows none and none was made (an
        extra retry, from a lost acknowledgement or a restart, is a retry count used up); else
        :data:`GAVE_UP_PAUSED` when :func:`may_retry` would still allow one (the job was
        paused, so the retry was dropped); else the limits that were reached:
        :data:`GAVE_UP_COUNT`, :data:`GAVE_UP_DURATION`, or both joined by " and " (with both
        set, retries go on while either is unmet).
    """
    duration = config.max_retry_duration
    if config.retry_count <= 0 and duration <= timedelta(0):
        return GAVE_UP_COUNT if retries_done else GAVE_UP_NO_RETRIES
    if may_retry(config, retries_done, first_attempt_start, end_time):
        return GAVE_UP_PAUSED
    if duration <= timedelta(0):
        return GAVE_UP_COUNT
    if config.retry_count <= 0:
        return GAVE_UP_DURATION
    return f"{GAVE_UP_COUNT} and {GAVE_UP_DURATION}"
