"""Daylight saving time, for both ``dst_policy`` values.

Google only warns of "anomalies" around the changes
(https://cloud.google.com/scheduler/docs/configuring/cron-job-schedules). Our pinned default
matches the cron fields against the wall time of each absolute minute: a time inside a
spring-forward gap does not run that day, one inside a fall-back overlap runs twice. ``"vixie"``
runs a fixed-time job once just after a gap and only at the first occurrence.

The policy cases are in ``cases/schedule_dst.toml``: each lists the fire times after a given
instant, rendered as the ``X-CloudScheduler-ScheduleTime`` value would be (in the job zone's
offset), so the offsets show which occurrence of a repeated wall time fired.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice

from scheduler_emulator.domain.schedule import parse_schedule
from scheduler_emulator.wire import format_schedule_time
from tests.support import case_table

NEW_YORK = "America/New_York"
#: Noon UTC the day before the 2026 fall-back (1 Nov, 02:00 EDT -> 01:00 EST).
BEFORE_FALL = datetime(2026, 10, 31, 12, tzinfo=UTC)


def fires(
    text: str, zone: str, after: datetime, count: int, dst_policy: str = "absolute"
) -> list[str]:
    """The first ``count`` fire times as RFC 3339 strings in the job's zone."""
    schedule = parse_schedule(text, zone, dst_policy=dst_policy)
    return [format_schedule_time(t) for t in islice(schedule.iter_after(after), count)]


def fires_by_next_after(
    text: str, zone: str, after: datetime, count: int, dst_policy: str = "absolute"
) -> list[str]:
    """Like :func:`fires`, but by calling ``next_after`` repeatedly."""
    schedule = parse_schedule(text, zone, dst_policy=dst_policy)
    result: list[str] = []
    instant = schedule.next_after(after)
    while instant is not None and len(result) < count:
        result.append(format_schedule_time(instant))
        instant = schedule.next_after(instant)
    return result


class TestDstPolicies:
    @case_table(__file__, "policies")
    def test_absolute_policy_matches_wall_time_on_absolute_minutes(
        self, text: str, zone: str, after: datetime, absolute: list[str], vixie: list[str]
    ) -> None:
        assert fires(text, zone, after, len(absolute)) == absolute
        assert fires_by_next_after(text, zone, after, len(absolute)) == absolute

    @case_table(__file__, "policies")
    def test_vixie_policy_runs_fixed_time_jobs_once_around_transitions(
        self, text: str, zone: str, after: datetime, absolute: list[str], vixie: list[str]
    ) -> None:
        assert fires(text, zone, after, len(vixie), "vixie") == vixie
        assert fires_by_next_after(text, zone, after, len(vixie), "vixie") == vixie


class TestRepeatedWallTime:
    def test_two_runs_in_the_overlap_carry_fold_and_distinct_offsets(self) -> None:
        schedule = parse_schedule("30 1 * * *", NEW_YORK)
        first, second = islice(schedule.iter_after(BEFORE_FALL), 2)
        assert (first.fold, second.fold) == (0, 1)
        assert first.astimezone(UTC) == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
        assert second.astimezone(UTC) == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
        assert format_schedule_time(first) != format_schedule_time(second)

    def test_next_after_the_first_occurrence_is_the_second(self) -> None:
        schedule = parse_schedule("30 1 * * *", NEW_YORK)
        first = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
        second = schedule.next_after(first)
        assert second is not None
        assert second.fold == 1
        assert second.astimezone(UTC) == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)


class TestSteadyCadence:
    @case_table(__file__, "steady_cadence")
    def test_wildcard_hour_jobs_keep_an_absolute_cadence_through_transitions(
        self, text: str, zone: str, after: datetime, step_minutes: int
    ) -> None:
        step = timedelta(minutes=step_minutes)
        schedule = parse_schedule(text, zone)
        count = int(timedelta(hours=36) / step)
        instants = [t.astimezone(UTC) for t in islice(schedule.iter_after(after), count)]
        assert all(b - a == step for a, b in zip(instants, instants[1:], strict=False))

    def test_kolkata_has_no_transition_all_year(self) -> None:
        schedule = parse_schedule("0 9 * * *", "Asia/Kolkata")
        instants = list(islice(schedule.iter_after(datetime(2026, 1, 1, tzinfo=UTC)), 365))
        assert {t.astimezone(UTC).time().isoformat() for t in instants} == {"03:30:00"}
        assert {format_schedule_time(t)[-6:] for t in instants} == {"+05:30"}
