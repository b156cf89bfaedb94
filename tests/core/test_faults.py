"""Fault injection on a manual clock: each action, determinism, and the plan's sources."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from scheduler_emulator import Attempt, Emulator, ManualClock, WsgiTransport
from scheduler_emulator.core.faults import AttemptContext, FaultPlan, FaultRule
from scheduler_emulator.domain.attempts import DUPLICATE_NOTE
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.runtime.storage.attempt_log import text_line
from scheduler_emulator.server.server import create_app
from scheduler_emulator.tools.fault_file import load_fault_file
from scheduler_emulator.tools.timeline import duplicate_notes
from scheduler_emulator.tools.views import attempt_rows, run_rows
from tests.support import RecordingTarget, nightly_job


def timeline(emulator: Emulator) -> list[tuple[Any, ...]]:
    return [
        (a.attempt, a.start_time.strftime("%H:%M:%S"), a.code, a.response_status, a.injected)
        for a in emulator.attempts()
    ]


class TestActions:
    def test_duplicate_delivers_the_same_request_again(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.faults.add(action="duplicate", job="nightly", count=2)
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=1))
        assert len(target.requests) == 3
        assert len({tuple(sorted(r.headers.items())) for r in target.requests}) == 1
        assert timeline(emulator) == [  # the delivery itself is real: only its copies are marked
            (1, "02:00:00", "OK", 200, False),
            (1, "02:00:00", "OK", 200, True),
            (1, "02:00:00", "OK", 200, True),
        ]

    def test_a_rule_naming_the_job_in_full_fires_on_it(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """A trial: a rule's ``job`` given as the name the API and views show never matched."""
        job = emulator.create_job(nightly_job())
        emulator.faults.add(action="duplicate", job=job.name)
        assert emulator.faults.rules[0].job == "nightly"
        emulator.advance(timedelta(minutes=1))
        assert len(target.requests) == 2

    def test_a_duplicate_is_not_a_try_and_its_failure_names_itself(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """A trial: a run whose retry succeeded read ``3/3 succeeded``, with the duplicate's
        500 as its reason, as if the target had failed the run."""
        target.status = lambda received: 200 if len(target.requests) == 2 else 500
        target.body = b"flaky: database locked"
        emulator.faults.add(action="duplicate", job="nightly", attempt=2)
        emulator.create_job(nightly_job(retryConfig={"retryCount": 2}))
        emulator.advance(timedelta(minutes=2))
        [run] = Client(create_app(emulator)).get("/_emulator/runs").json["runs"]
        assert (run["state"], run["tries"], run["maxAttempts"]) == ("succeeded", 2, 3)
        copy = run["attempts"][-1]
        assert copy["reason"] == "injected duplicate delivery: flaky: database locked"
        # a copy the target answered 2xx has no failure reason, but the views still name it
        target.status = 200
        emulator.faults.add(action="duplicate", job="nightly", attempt=1)
        emulator.advance(timedelta(days=1))
        ok_copy = emulator.attempts()[-1]
        assert (ok_copy.code, ok_copy.reason) == ("OK", "")
        assert attempt_rows([ok_copy])[0][-1] == "injected duplicate delivery"
        assert text_line(ok_copy).endswith("(injected duplicate)")

    def test_the_views_name_the_retry_a_lost_ack_made_a_duplicate(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """A trial: ``attempts`` and ``runs`` showed the retry after a lost acknowledgement as a
        plain ``200 OK``, though "did my service get it twice?" is the question."""
        emulator.faults.add(action="lost_ack", job="nightly", attempt=1)
        emulator.create_job(nightly_job(retryConfig={"retryCount": 1}))
        emulator.advance(timedelta(minutes=2))
        rows = attempt_rows(emulator.attempts())
        assert [(row[2], row[3], row[-1]) for row in rows] == [
            ("1*", "-", "injected lost ack: the target answered 200, the answer was dropped"),
            ("2", "200", "duplicate: the target already answered 200 to attempt 1 of this run"),
        ]
        [run] = Client(create_app(emulator)).get("/_emulator/runs").json["runs"]
        assert run_rows([run])[0][-1] == (
            "1 duplicate delivery (2xx again); "
            "attempt 1 failed: injected lost ack: the target answered 200, the answer was dropped"
        )

    def test_a_second_forced_run_with_the_same_schedule_time_names_the_first_run(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """A trial: the second of two forced runs (both send the job's next scheduled time)
        read "already answered 200 to attempt 1 of this run", though it was run 2's first; a
        later trial: it read "duplicate" while the runs view and the JSON did not flag it.
        Every surface flags duplicates within a run; the note names the shared ScheduleTime."""
        emulator.create_job(nightly_job())
        emulator.run_job("nightly")
        emulator.run_job("nightly")
        notes = [row[-1] for row in attempt_rows(emulator.attempts())]
        assert notes == [
            "",
            "same ScheduleTime as run 1 (forced), which the target answered 200: a target "
            "deduplicating by it skips this run",
        ]
        runs = Client(create_app(emulator)).get("/_emulator/runs").json["runs"]
        assert [a["duplicate"] for run in runs for a in run["attempts"]] == [False, False]

    def test_a_duplicate_answered_otherwise_says_what_it_answered(self) -> None:
        """Trial 105: a run-once guard's no-op (``Already completed…``) read the same as work
        done twice; an answer like the earlier one's adds nothing."""
        at = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
        guard = "Already completed by an earlier delivery: not run again (run-once guard).\n"
        attempts = [
            Attempt(n, "projects/p/locations/l/jobs/j", run, 1, "2026-12-05T02:00:00Z", at,
                    {"url": "http://x.test/"}, at, 200, "OK", response_excerpt=said)
            for n, run, said in ((1, 1, ""), (2, 1, guard), (3, 1, ""), (4, 2, "ok"), (5, 2, "ok"))
        ]  # fmt: skip
        notes = duplicate_notes(attempts)
        said = "duplicate: the target already answered 200 to attempt 1 of this run"
        assert notes[1:3] == [f"{said}; this time it answered: {guard.strip()}", said]
        assert notes[4] == said
        assert notes[3].startswith("same ScheduleTime as run 1, which the target answered 200")
        assert notes[3].endswith("; this time it answered: ok")

    def test_a_duplicate_run_of_a_cloud_run_job_names_the_execution_it_started(self) -> None:
        """Trial 216: the row held the Admin API's whole answer (~1,000 characters)."""
        at = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
        job = "projects/p/locations/l/jobs/e"
        operation = '{"name": "projects/p/locations/l/operations/x", "metadata": {"name": "'
        attempts = [
            Attempt(n, "projects/p/locations/l/jobs/j", 1, 1, "2026-12-05T02:00:00Z", at,
                    {"url": f"https://run.googleapis.com/v2/{job}:run"}, at, 200, "OK",
                    response_excerpt=f'{operation}{job}/executions/{e}"}}}}')
            for n, e in ((1, "e-abc12"), (2, "e-def34"))
        ]  # fmt: skip
        assert duplicate_notes(attempts)[1] == (
            "duplicate: the target already answered 200 to attempt 1 of this run; this time it "
            "started execution e-def34"
        )

    def test_a_retry_after_a_late_answer_is_not_said_to_answer_otherwise(self) -> None:
        """Trial 120: a late answer's body is not kept, so a retry answering the same JSON read
        "it answered otherwise" — the sign of a deduplicating target — for one that did the
        work twice."""
        at = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
        late = "DEADLINE_EXCEEDED. The target's late answer: URL_CRAWLED. Original HTTP response "
        late += "code number = 200"
        first = Attempt(1, "projects/p/locations/l/jobs/j", 1, 1, "2026-12-05T02:00:00Z", at,
                        {}, at, None, "DEADLINE_EXCEEDED", debug_info=late)  # fmt: skip
        retry = replace(first, id=2, attempt=2, response_status=200, code="OK",
                        response_excerpt='{"posted": 1}', debug_info="")  # fmt: skip
        assert duplicate_notes([first, retry])[1] == (
            "duplicate: the target already answered 200 to attempt 1 of this run"
        )

    def test_a_retry_after_a_lost_empty_answer_says_what_it_answered(self) -> None:
        """Trial 129: a lost ack of a 204 with no body kept nothing to compare, so the guard's
        no-op on the retry read like work done twice."""
        at = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
        lost = "URL_UNREACHABLE-UNREACHABLE_LOST_ACK. Injected: the target answered 204 but "
        lost += "the response was lost."
        first = Attempt(1, "projects/p/locations/l/jobs/j", 1, 1, "2026-12-05T02:00:00Z", at,
                        {}, at, None, "UNAVAILABLE", debug_info=lost)  # fmt: skip
        retry = replace(first, id=2, attempt=2, response_status=200, code="OK", debug_info="",
                        response_excerpt="Already completed by an earlier delivery")  # fmt: skip
        assert duplicate_notes([first, retry])[1] == (
            "duplicate: the target already answered 204 to attempt 1 of this run; this time it "
            "answered: Already completed by an earlier delivery"
        )

    def test_a_duplicate_of_a_copys_answer_names_the_copy(self) -> None:
        """Trial 120: "already answered 200 to attempt 1" under an attempt 1 that read 409: the
        200 was its injected copy's."""
        at = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
        first = Attempt(1, "projects/p/locations/l/jobs/j", 1, 1, "2026-12-05T02:00:00Z", at,
                        {}, at, 409, "ABORTED")  # fmt: skip
        copy = replace(first, id=2, response_status=200, code="OK", debug_info=DUPLICATE_NOTE)
        retry = replace(first, id=3, attempt=2, response_status=200, code="OK")
        assert duplicate_notes([first, copy, retry])[2] == (
            "duplicate: the target already answered 200 to attempt 1's injected copy of this run"
        )

    @pytest.mark.parametrize(
        "request_",
        [
            {
                "method": "POST",
                "url": "https://run.googleapis.com/v2/projects/p/locations/l/jobs/j:run",
            },
            {"targetType": "PUB_SUB", "pubsubTopic": "projects/p/topics/tick"},
        ],
        ids=["cloud-run-admin-api", "pubsub"],
    )
    def test_no_schedule_time_note_where_no_service_sees_the_header(
        self, request_: dict[str, Any]
    ) -> None:
        """A trial: two forced runs of a job that runs a Cloud Run job read as duplicates,
        though the job's tasks never see the ScheduleTime header (nor does a Pub/Sub
        subscriber)."""
        at = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)
        first, second = (
            Attempt(
                n,
                "projects/p/locations/l/jobs/j",
                n,
                1,
                "2026-12-05T02:00:00Z",
                at,
                request_,
                at,
                200,
                "OK",
                forced=True,
            )
            for n in (1, 2)
        )
        assert duplicate_notes([first, second]) == ["", ""]
        http = [replace(a, request={"url": "http://x.test/"}) for a in (first, second)]
        assert duplicate_notes(http)[1].startswith("same ScheduleTime as run 1 (forced)")

    def test_a_failed_assert_attempted_gives_each_attempts_reason(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """A trial's assertion printed the debug text (``URL_ERROR-ERROR_NOT_FOUND. Original
        HTTP response code number = 404``), not what the target said."""
        target.status, target.body = 500, b"flaky: database locked"
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=1))
        with pytest.raises(AssertionError, match="\n      flaky: database locked"):
            emulator.assert_attempted("nightly", code="OK")

    def test_concurrent_duplicates_arrive_together(self, clock: ManualClock) -> None:
        arrived = threading.Barrier(3, timeout=10)

        def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
            arrived.wait()  # only returns when all three requests are in at once
            start_response("200 OK", [])
            return [b""]

        emu = Emulator(clock, transport=WsgiTransport(app))
        emu.faults.add(action="duplicate", count=2, concurrent=True)
        emu.create_job(nightly_job())
        emu.advance(timedelta(minutes=1))
        assert [a.code for a in emu.attempts()] == ["OK", "OK", "OK"]

    def test_lost_ack_is_retried_even_with_retry_count_zero(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.faults.add(action="lost_ack", job="nightly", attempt=1)
        emulator.create_job(nightly_job(retryConfig={}))
        emulator.advance(timedelta(minutes=5))
        assert len(target.requests) == 2
        first, second = emulator.attempts()
        assert (first.code, first.response_status) == ("UNAVAILABLE", None)
        assert "answered 200 but the response was lost" in first.debug_info
        assert (second.attempt, second.code, second.start_time - first.end_time) == (
            2,
            "OK",
            timedelta(seconds=5),
        )  # type: ignore[operator]

    @pytest.mark.parametrize("retry_count", [0, 2])
    def test_a_run_whose_every_answer_is_lost_earns_one_extra_retry_only(
        self, emulator: Emulator, target: RecordingTarget, retry_count: int
    ) -> None:
        """A trial: a rule with no ``attempt`` retried a run for ever, and the job's next runs
        were skipped as still going."""
        emulator.faults.add(action="lost_ack", job="nightly")
        emulator.create_job(nightly_job(retryConfig={"retryCount": retry_count}))
        emulator.advance(timedelta(days=1, minutes=5))
        runs = Client(create_app(emulator)).get("/_emulator/runs").json["runs"]
        assert [(r["state"], r["tries"], r["maxAttempts"]) for r in runs] == [
            ("gave up", retry_count + 2, retry_count + 2)
        ] * 2
        assert emulator.skipped_runs() == []

    def test_status_answers_without_calling_the_target(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.faults.add(action="status", status=503, attempt=1)
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=2))
        assert len(target.requests) == 1  # only the retry reached it
        assert timeline(emulator) == [
            (1, "02:00:00", "UNAVAILABLE", 503, True),
            (2, "02:00:05", "OK", 200, False),
        ]

    def test_connection_error_fails_before_sending(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.faults.add(action="connection_error")
        emulator.create_job(nightly_job(retryConfig={"retryCount": 1}))
        emulator.advance(timedelta(minutes=2))
        assert target.requests == []
        assert [(a.code, a.response_status) for a in emulator.attempts()] == [
            ("UNAVAILABLE", None)
        ] * 2

    def test_delay_adds_latency_before_the_backoff(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        target.status = 500
        emulator.faults.add(action="delay", seconds=7, attempt=1)
        emulator.create_job(nightly_job(retryConfig={"retryCount": 1}))
        emulator.advance(timedelta(minutes=2))
        first, second = emulator.attempts()
        assert (first.end_time - first.start_time).total_seconds() == 7  # type: ignore[operator]
        assert second.start_time.strftime("%H:%M:%S") == "02:00:12"

    def test_a_delay_within_the_deadline_is_named_where_the_answer_is_not(
        self, emulator: Emulator
    ) -> None:
        """Trial 132: a delayed 200 showed its ``*`` and nothing else, in every view."""
        emulator.faults.add(action="delay", seconds=3)
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=2))
        [attempt] = emulator.attempts()
        assert attempt.debug_info.endswith("Injected delay: 3 s before sending.")
        assert attempt_rows([attempt])[0][-1] == "injected delay: 3 s before sending"

    def test_deadline_retries_while_the_first_handler_still_runs(self, clock: ManualClock) -> None:
        release = threading.Event()
        seen: list[str] = []

        def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
            seen.append("start")
            if len(seen) == 1:
                release.wait(10)  # the first handler is slow: it outlives the deadline
                seen.append("first done")
            else:
                seen.append("retry done")
                release.set()
            start_response("200 OK", [])
            return [b""]

        emu = Emulator(clock, transport=WsgiTransport(app))
        emu.faults.add(action="deadline", attempt=1, seconds=0.05)
        emu.create_job(nightly_job(attemptDeadline="30s"))
        emu.advance(timedelta(minutes=2))
        assert seen == ["start", "start", "retry done", "first done"]
        first, second = emu.attempts()
        assert (first.code, first.response_status) == ("DEADLINE_EXCEEDED", None)
        assert (first.end_time - first.start_time).total_seconds() == 30  # type: ignore[operator]
        assert second.start_time.strftime("%H:%M:%S") == "02:00:35"
        assert "late answer: URL_CRAWLED" in first.debug_info

    def test_a_target_that_answers_within_the_faults_seconds_still_times_out(
        self, clock: ManualClock, target: RecordingTarget
    ) -> None:
        """A trial's record said the target "was still handling the request" when it had
        answered before the fault's ``seconds``: the fault decides the outcome, and the record
        says only that the deadline passed before the answer counted."""
        emu = Emulator(clock, transport=WsgiTransport(target))
        emu.faults.add(action="deadline", attempt=1, seconds=0.5)
        emu.create_job(nightly_job(attemptDeadline="30s"))
        emu.advance(timedelta(minutes=2))
        first = emu.attempts()[0]
        assert first.code == "DEADLINE_EXCEEDED"
        assert "still handling" not in first.debug_info
        assert first.reason == (
            "injected deadline: the attempt deadline passed before the target's answer counted; "
            "its late answer: 200"
        )


class TestDeterminism:
    def run_with(self, seed: int, target: RecordingTarget) -> list[tuple[Any, ...]]:
        emu = Emulator(ManualClock(nightly_clock_start()), transport=WsgiTransport(target))
        emu.faults.seed = seed
        emu.faults.add(action="duplicate", probability=0.3)
        emu.faults.add(action="status", status=500, probability=0.3)
        emu.create_job(nightly_job(schedule="*/5 * * * *"))
        emu.advance(timedelta(hours=6))
        return timeline(emu)

    def test_same_seed_gives_the_same_timeline(self, target: RecordingTarget) -> None:
        assert self.run_with(11, target) == self.run_with(11, target)

    def test_another_seed_gives_another_timeline(self, target: RecordingTarget) -> None:
        assert self.run_with(11, target) != self.run_with(12, target)

    def test_draws_depend_only_on_seed_rule_job_run_and_attempt(self) -> None:
        plan = FaultPlan([FaultRule("duplicate", probability=0.5)], seed=3)
        contexts = [AttemptContext("j", run, None, 1) for run in range(1, 200)]
        first = [bool(plan.decide(c)) for c in contexts]
        again = [bool(plan.decide(c)) for c in reversed(contexts)][::-1]
        assert first == again
        assert 60 < sum(first) < 140


class TestRules:
    @pytest.mark.parametrize(
        ("rule", "context", "expected"),
        [
            (FaultRule("status", job="report*"), AttemptContext("report-1", 1, None, 1), True),
            (FaultRule("status", job="report*"), AttemptContext("nightly", 1, None, 1), False),
            (FaultRule("status", run=2), AttemptContext("j", 1, None, 1), False),
            (FaultRule("status", attempt=2), AttemptContext("j", 1, None, 2), True),
            (
                FaultRule("status", schedule_time="2026-09-24T02:00:00Z"),
                AttemptContext("j", 1, "2026-09-24T02:00:00Z", 3),
                True,
            ),
            (  # the same instant, as a job in New York sends it
                FaultRule("status", schedule_time="2026-09-24T10:00:00Z"),
                AttemptContext("j", 1, "2026-09-24T06:00:00-04:00", 1),
                True,
            ),
            (
                FaultRule("status", schedule_time="2026-09-24T10:00:00Z"),
                AttemptContext("j", 1, None, 1),
                False,
            ),
        ],
    )
    def test_matching(self, rule: FaultRule, context: AttemptContext, expected: bool) -> None:
        assert rule.matches(context) is expected

    def test_limit_caps_how_often_a_rule_fires(self) -> None:
        plan = FaultPlan([FaultRule("status", limit=2)])
        fired = [bool(plan.decide(AttemptContext("j", n, None, 1))) for n in range(1, 6)]
        assert fired == [True, True, False, False, False]

    @pytest.mark.parametrize(
        ("fields", "field"),
        [
            ({"action": "explode"}, "action"),
            ({"action": "status", "probability": 2}, "probability"),
            ({"action": "status", "status": 42}, "status"),
            ({"action": "duplicate", "count": 0}, "count"),
            ({"action": "delay", "seconds": -1}, "seconds"),
            ({"action": "status", "run": 0}, "run"),
            ({"action": "status", "colour": "red"}, "colour"),
            ({"job": "x"}, "action"),
            ({"action": "lost_ack", "schedule_time": "yesterday"}, "schedule_time"),  # trial 222
        ],
    )
    def test_bad_rules_name_the_field(self, fields: dict[str, Any], field: str) -> None:
        with pytest.raises(InvalidArgument) as info:
            FaultRule.from_json(fields)
        assert info.value.violations[0].field == field

    @pytest.mark.parametrize(
        ("earlier", "later", "shadowed"),
        [
            (FaultRule("duplicate", count=2), FaultRule("duplicate", job="alpha", run=2), True),
            (FaultRule("duplicate", job="report*"), FaultRule("duplicate", job="report-1"), True),
            (FaultRule("duplicate", job="alpha", attempt=1), FaultRule("duplicate", job="alpha",
             attempt=1, run=3), True),
            (FaultRule("duplicate", job="report*"), FaultRule("duplicate", job="rep*"), False),
            (FaultRule("duplicate", job="alpha", run=2), FaultRule("duplicate"), False),
            (FaultRule("duplicate", probability=0.5), FaultRule("duplicate", job="alpha"), False),
            (FaultRule("duplicate", limit=3), FaultRule("duplicate", job="alpha"), False),
            (FaultRule("duplicate"), FaultRule("lost_ack", job="alpha"), False),
        ],
    )  # fmt: skip
    def test_a_rule_an_earlier_one_of_its_action_always_takes_is_named(
        self, earlier: FaultRule, later: FaultRule, shadowed: bool
    ) -> None:
        """A trial's second duplicate rule never fired and nothing said so."""
        notes = FaultPlan([earlier, later]).shadowed()
        assert notes == (
            [f"rules[1] ({later.action}) never acts: rules[0] is the {later.action} rule of "
             "every attempt it matches (one rule of each action acts on an attempt)."]
            if shadowed else []
        )  # fmt: skip

    def test_a_rule_a_delivery_replacing_one_always_takes_is_named_wherever_it_stands(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """Trial 155: a ``status`` rule before a ``lost_ack`` of the same job left the second
        nothing to act on, and nothing said so; ``status`` goes first wherever it stands."""
        plan = emulator.faults
        plan.add(action="lost_ack", job="nightly")
        plan.add(action="status", status=503, job="night*")
        plan.add(action="connection_error", job="nightly")
        plan.add(action="delay", job="other", seconds=1)  # another job: acts
        assert plan.shadowed() == [
            f"rules[{index}] ({action}) never acts: rules[1] (status) replaces the delivery of "
            "every attempt it matches (the target is not called, and no other rule acts)."
            for index, action in ((0, "lost_ack"), (2, "connection_error"))
        ]
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=1))
        assert target.requests == []  # indeed: the status rule stood in for the delivery
        assert [a.response_status for a in emulator.attempts("nightly")] == [503]

    def test_a_lost_ack_under_a_deadline_is_named_and_indeed_loses_nothing(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """Trial 184: a ``lost_ack`` on the attempts a ``deadline`` rule ends did nothing, and
        nothing said so; both fire (``fired``: the deadline for its retry too), the deadline's
        outcome is recorded."""
        plan = emulator.faults
        plan.add(action="lost_ack", job="nightly", attempt=1)
        plan.add(action="deadline", job="night*", seconds=0)
        assert plan.shadowed() == [
            "rules[0] (lost_ack) never acts: rules[1] (deadline) ends every attempt it matches "
            "before an answer counts, so none is lost."
        ]
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=5))  # past the 180 s attempt deadline
        assert emulator.attempts("nightly")[0].code == "DEADLINE_EXCEEDED"
        assert plan.fired() == [1, 2]

    def test_a_rule_whose_job_pattern_matches_no_job_is_named(self) -> None:
        """Trial 60: a misspelt job (``sweeep``) was accepted without a word and never fired."""
        plan = FaultPlan(
            [FaultRule("lost_ack", job="sweeep"), FaultRule("duplicate", job="swe*"),
             FaultRule("deadline"), FaultRule("duplicate", job="sweep")]
        )  # fmt: skip
        assert plan.unmatched(["sweep", "ping", "sweep"]) == [
            "rules[0] (lost_ack) names job 'sweeep', which no job is (job IDs: ping, sweep): it "
            "acts on none until such a job exists."
        ]
        assert plan.unmatched([]) == []  # no job yet: the jobs come later

    def test_a_shadowed_rule_indeed_never_acts(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.faults.add(action="duplicate", count=1)
        emulator.faults.add(action="duplicate", job="nightly", run=1, count=3)
        assert len(emulator.faults.shadowed()) == 1
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=1))
        assert len(target.requests) == 2  # the first rule's one copy, not the second's three

    def test_plan_round_trips_through_json(self) -> None:
        plan = FaultPlan([FaultRule("duplicate", job="n*", count=2), FaultRule("lost_ack")], 9)
        assert FaultPlan.from_json(plan.to_json()).to_json() == plan.to_json()


def full_duplicate_rule(job: str) -> dict[str, Any]:
    """The full JSON of a ``duplicate`` rule for ``job`` with every other field at its
    default, as ``GET /_emulator/faults`` lists it."""
    return {
        "action": "duplicate",
        "job": job,
        "run": None,
        "schedule_time": None,
        "attempt": None,
        "probability": 1.0,
        "limit": None,
        "count": 1,
        "concurrent": False,
    }


def test_a_fault_file_names_every_problem_a_line_each(tmp_path: Path) -> None:
    """A trial: a plan with a bad seed and a bad rule named the seed only."""
    path = tmp_path / "faults.yaml"
    path.write_text("seed: -3\nrules:\n  - {action: nope}\n  - {action: lost_ack}\n  - 7\n")
    with pytest.raises(InvalidArgument) as caught:
        load_fault_file(path)
    lines = caught.value.message.splitlines()
    assert [line.split(": ")[1] for line in lines] == ["seed must be a whole number from 0 to "
                                                       f"{2**63 - 1}; got -3.", "rules[0]",
                                                       "rules[2]"]  # fmt: skip
    assert all(line.startswith(f"{path}: ") for line in lines)
    assert [v.field for v in caught.value.violations] == ["seed", "rules[0].action", "rules[2]"]
    assert len(caught.value.violations) == 3


def test_a_rule_with_several_bad_values_names_each_a_line_each(tmp_path: Path) -> None:
    """A trial: a rule with two bad values named the first only, so fixing it met the next."""
    path = tmp_path / "faults.yaml"
    path.write_text("rules:\n  - {action: status, status: 99, probability: 2, run: x}\n")
    with pytest.raises(InvalidArgument) as caught:
        load_fault_file(path)
    lines = [line.split(": ", 2)[2] for line in caught.value.message.splitlines()]
    assert lines == [
        "probability must be between 0 and 1; got 2.",
        "status must be an HTTP status 100-599; got 99.",
        f'run must be a whole number from 1 to {2**63 - 1}; got "x".',
    ]
    fields = [v.field for v in caught.value.violations]  # paths in the plan, as Google's
    assert fields == ["rules[0].probability", "rules[0].status", "rules[0].run"]


def test_a_number_yaml_reads_as_text_says_so(tmp_path: Path) -> None:
    """A trial's ``seconds: 1e3`` was refused as "not a number" with no word on why: PyYAML
    (YAML 1.1) reads an exponent without a dot and a sign as text."""
    path = tmp_path / "faults.yaml"
    path.write_text("rules:\n  - {action: delay, seconds: 1e3}\n")
    with pytest.raises(InvalidArgument, match="unquote it; YAML reads 1e3 as text too"):
        load_fault_file(path)
    path.write_text("rules:\n  - {action: delay, seconds: 1.0e+3}\n")
    assert load_fault_file(path).rules[0].seconds == 1000
    with pytest.raises(InvalidArgument) as refused:  # (trial 133: true was called text)
        FaultRule.from_json({"action": "delay", "seconds": True})
    assert refused.value.message == "seconds must be a number; got true."


def test_a_bad_value_and_a_field_the_action_does_not_read_are_named_together() -> None:
    """A trial: ``status: 503`` (its default) on a delay was named only once ``seconds`` was
    fixed."""
    with pytest.raises(InvalidArgument) as caught:
        FaultRule.from_json({"action": "delay", "seconds": "fast", "status": 503})
    assert caught.value.message.splitlines() == [
        'seconds must be a number; got "fast".',
        "fault rule field 'status' does not apply to action 'delay'; only the status action "
        "reads it.",
    ]


def test_fault_file_loads_yaml(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text("seed: 5\nrules:\n  - {action: lost_ack, job: nightly, run: 1}\n")
    plan = load_fault_file(path)
    assert plan.seed == 5 and plan.rules == [FaultRule("lost_ack", job="nightly", run=1)]
    path.write_text("rules:\n  - {action: nope}\n")
    with pytest.raises(InvalidArgument, match=f"{path}: rules\\[0\\]: action must be one of"):
        load_fault_file(path)


def test_faults_endpoint_adds_lists_and_clears(emulator: Emulator, target: RecordingTarget) -> None:
    client = Client(create_app(emulator))
    plan = client.post("/_emulator/faults", json={"action": "duplicate", "job": "nightly"}).json
    assert plan == {"seed": 0, "rules": [full_duplicate_rule("nightly")], "fired": [0]}
    client.post("/_emulator/faults", json={"seed": 4, "rules": [{"action": "lost_ack"}]})
    assert client.get("/_emulator/faults").json["seed"] == 4
    assert len(client.get("/_emulator/faults").json["rules"]) == 2
    bad = client.post("/_emulator/faults", json={"action": "boom"})
    assert bad.status_code == 400 and bad.json["error"]["status"] == "INVALID_ARGUMENT"
    for method, path in (("GET", "?y=2"), ("POST", "?dryRun=1"), ("DELETE", "?all=no")):
        bad = client.open("/_emulator/faults" + path, method=method, json={"action": "delay"})
        assert bad.status_code == 400 and "takes no parameter" in bad.json["error"]["message"]
    assert client.post("/_emulator/faults").json["error"]["message"].endswith("got no body.")
    for body, said in (  # (trial 127: each was taken without a word)
        ({}, 'The body must be a fault rule (with "action") or {"seed": N, "rules": [...]}'),
        ({"action": "lost_ack", "job": ""}, "job must be a job ID or a pattern such as"),
        ({"action": None}, "delay; got null."),
        (
            {"action": "lost_ack", "concurrent": "yes"},
            'concurrent must be true or false; got "yes"',
        ),
        ({"rules": [7]}, "rules[0]: a fault rule must be an object; got 7."),
    ):
        bad = client.post("/_emulator/faults", json=body)
        assert bad.status_code == 400 and said in bad.json["error"]["message"], (body, bad.json)
    assert len(client.get("/_emulator/faults").json["rules"]) == 2
    assert client.delete("/_emulator/faults").json == {"seed": 4, "rules": [], "fired": []}
    emulator.create_job(nightly_job())
    client.post("/_emulator/clock:advance", json={"seconds": 60})
    injected = client.get("/_emulator/attempts").json["attempts"]
    assert [a["injected"] for a in injected] == [False]
    client.post("/_emulator/faults", json={"action": "lost_ack", "job": "nightly"})
    client.post("/_emulator/faults", json={"action": "delay", "job": "other"})
    emulator.run_job("nightly")
    assert client.get("/_emulator/faults").json["fired"] == [1, 0]  # (trial 225)


def nightly_clock_start() -> datetime:
    return datetime(2026, 9, 24, 1, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"action": "duplicate", "job": 5}, "job"),
        ({"action": "status", "probability": "0.5"}, "probability"),
        ({"action": "status", "probability": None}, "probability"),
        ({"action": "duplicate", "count": "2"}, "count"),
        ({"action": "delay", "seconds": "1"}, "seconds"),
        ({"action": "duplicate", "concurrent": "yes"}, "concurrent"),
        ({"action": "status", "schedule_time": 5}, "schedule_time"),
        ({"action": 3}, "action"),
    ],
)
def test_wrongly_typed_rule_fields_are_refused_naming_them(
    fields: dict[str, Any], field: str, emulator: Emulator
) -> None:
    with pytest.raises(InvalidArgument) as info:
        emulator.faults.add(**fields)
    assert info.value.violations[0].field == field
    assert emulator.faults.rules == []


def test_a_misspelt_keyword_is_refused_naming_it(emulator: Emulator) -> None:
    said = r"unknown fault rule field 'jbo'; did you mean 'job'\? known: "  # (trial 73)
    with pytest.raises(InvalidArgument, match=said):
        emulator.faults.add(action="status", jbo="nightly")


def test_a_rules_misspelt_field_and_bad_value_are_said_at_once() -> None:
    """Trial 205: a plan file took one run per problem of a rule."""
    with pytest.raises(InvalidArgument) as info:
        FaultPlan.from_json([{"action": "lost-ack", "atempt": 1}, {"atcion": "duplicate"}])
    assert [v.field for v in info.value.violations] == [
        "rules[0].atempt", "rules[0].action", "rules[1].atcion", "rules[1].action"
    ]  # fmt: skip
    assert info.value.message.splitlines()[1] == (
        "rules[0]: action must be one of duplicate, lost_ack, deadline, status, connection_error, "
        'delay; got "lost-ack"; did you mean "lost_ack"?'
    )


def test_a_rule_given_as_a_mapping_is_read_as_a_plans_rule(emulator: Emulator) -> None:
    """Trial 75: ``add({...})`` was kept as the rule and failed every attempt after it."""
    added = emulator.faults.add({"action": "status", "job": "nightly", "status": 503})
    assert added == FaultRule(action="status", job="nightly", status=503)
    with pytest.raises(InvalidArgument, match="unknown fault rule field 'jbo'"):
        emulator.faults.add({"action": "status", "jbo": "nightly"})
    with pytest.raises(TypeError, match="a fault rule is a FaultRule, a mapping or keywords"):
        emulator.faults.add("duplicate")  # type: ignore[arg-type]


def test_an_error_inside_the_emulator_still_records_the_attempt(
    emulator: Emulator, target: RecordingTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(request: Any, timeout_seconds: float) -> Any:
        raise RuntimeError("transport bug")

    monkeypatch.setattr(emulator.transport, "send", broken)
    emulator.create_job(nightly_job(retryConfig={}))
    emulator.advance(timedelta(minutes=2))
    [attempt] = emulator.attempts()
    assert attempt.code == "UNKNOWN" and attempt.end_time is not None
    assert "transport bug" in attempt.debug_info
    assert isinstance(emulator.recorder.last_error, RuntimeError)
    assert emulator.recorder.error_count == 1


def test_only_one_retry_overlaps_a_deadline_then_the_slow_request_is_awaited(
    clock: ManualClock,
) -> None:
    release = threading.Event()
    seen: list[str] = []
    calls: list[int] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls.append(1)
        number = len(calls)
        seen.append(f"start {number}")
        if number == 1:
            release.wait(10)  # slow: still running when the first retry arrives
        elif number == 2:
            release.set()  # the overlapping retry; the slow one can now finish
        seen.append(f"end {number}")
        start_response("500 Busy" if number == 2 else "200 OK", [])
        return [b""]

    emu = Emulator(clock, transport=WsgiTransport(app))
    emu.faults.add(action="deadline", attempt=1, seconds=0.05)
    emu.create_job(nightly_job(attemptDeadline="30s"))
    emu.advance(timedelta(hours=1))  # one step through every retry
    assert seen[:3] == ["start 1", "start 2", "end 2"]
    assert seen[3:] == ["end 1", "start 3", "end 3"]  # retry 2 waited for the slow request
    assert [a.code for a in emu.attempts()] == ["DEADLINE_EXCEEDED", "INTERNAL", "OK"]


@pytest.mark.parametrize(
    ("rule", "defaults"),
    [
        pytest.param({"action": "delay"}, {"seconds": 0.1}, id="delay"),
        pytest.param({"action": "deadline"}, {"seconds": 0.1}, id="deadline"),
        pytest.param({"action": "status"}, {"status": 503}, id="status"),
        pytest.param({"action": "lost_ack"}, {}, id="lost_ack"),
    ],
)
def test_the_faults_endpoint_shows_the_defaults_that_apply_to_each_action(
    emulator: Emulator, rule: dict[str, object], defaults: dict[str, object]
) -> None:
    client = Client(create_app(emulator))
    client.post("/_emulator/faults", json=rule)
    [shown] = client.get("/_emulator/faults").json["rules"]
    assert shown == {
        "action": rule["action"],
        "job": "*",
        "run": None,
        "schedule_time": None,
        "attempt": None,
        "probability": 1.0,
        "limit": None,
        **defaults,
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            {"action": "duplicate", "seconds": 2},
            "fault rule field 'seconds' does not apply to action 'duplicate'; only the deadline "
            "and delay actions read it.",
            id="one-rule",
        ),
        pytest.param(
            {"rules": [{"action": "lost_ack", "status": 500}]},
            "rules[0]: fault rule field 'status' does not apply to action 'lost_ack'; only the "
            "status action reads it.",
            id="in-a-plan",
        ),
    ],
)
def test_the_faults_endpoint_refuses_a_field_the_action_does_not_read(
    emulator: Emulator, body: dict[str, object], message: str
) -> None:
    client = Client(create_app(emulator))
    refused = client.post("/_emulator/faults", json=body)
    assert refused.status_code == 400
    assert refused.json["error"]["status"] == "INVALID_ARGUMENT"
    assert refused.json["error"]["message"] == message
    assert client.get("/_emulator/faults").json["rules"] == []


class TestFieldsThatDoNotApply:
    """A field the rule's action does not read is refused by the core, so every entry point
    (Python, a fault file, a scenario, the endpoint) refuses it the same way."""

    @pytest.mark.parametrize(
        ("fields", "field", "readers"),
        [
            pytest.param({"action": "duplicate", "seconds": 2}, "seconds", "deadline and delay"),
            pytest.param({"action": "delay", "status": 500}, "status", "status"),
            pytest.param({"action": "lost_ack", "count": 2}, "count", "duplicate"),
            pytest.param({"action": "status", "concurrent": True}, "concurrent", "duplicate"),
            pytest.param(
                {"action": "connection_error", "seconds": 0.1}, "seconds", "deadline and delay"
            ),  # refused even at its default value: the key is there
        ],
    )
    def test_from_json_and_add_refuse_it_naming_the_field_and_the_action(
        self, fields: dict[str, Any], field: str, readers: str, emulator: Emulator
    ) -> None:
        message = (
            f"fault rule field {field!r} does not apply to action {fields['action']!r}; only the "
            f"{readers} action{'s read' if ' and ' in readers else ' reads'} it."
        )
        with pytest.raises(InvalidArgument) as info:
            FaultRule.from_json(fields)
        assert (info.value.message, info.value.violations[0].field) == (message, field)
        with pytest.raises(InvalidArgument, match="does not apply to action"):
            emulator.faults.add(**fields)
        assert emulator.faults.rules == []

    def test_the_constructor_refuses_a_non_default_value(self) -> None:
        with pytest.raises(InvalidArgument, match="'seconds' does not apply to action 'status'"):
            FaultRule("status", seconds=3)
        assert FaultRule("deadline", seconds=3).seconds == 3

    def test_a_fault_file_refuses_it(self, tmp_path: Path) -> None:
        path = tmp_path / "faults.yaml"
        path.write_text("rules:\n  - {action: duplicate, seconds: 2}\n")
        with pytest.raises(
            InvalidArgument,
            match=f"{path}: rules\\[0\\]: fault rule field 'seconds' does not apply to action",
        ):
            load_fault_file(path)

    def test_every_action_has_its_list_of_fields(self) -> None:
        from scheduler_emulator.core.faults import ACTION_FIELDS, ACTIONS, rule_fields

        assert set(ACTION_FIELDS) == set(ACTIONS)
        assert rule_fields("delay")[-1] == "seconds"
        assert FaultRule("duplicate").to_full_json() == full_duplicate_rule("*")


def test_a_null_job_or_a_date_schedule_time_is_refused_naming_what_to_write() -> None:
    """A trial's ``job: null`` was stored, then broke every attempt's fault matching; an
    unquoted YAML timestamp was named as a datetime with a hint about numeric job IDs."""
    with pytest.raises(InvalidArgument, match="job must be a string; got null .leave job out"):
        FaultRule.from_json({"action": "lost_ack", "job": None})
    when = datetime(2026, 9, 24, 2, tzinfo=UTC)
    with pytest.raises(InvalidArgument, match="YAML reads an unquoted timestamp as a date"):
        FaultRule.from_json({"action": "lost_ack", "schedule_time": when})


def test_a_plan_holds_at_most_max_rules_and_a_batch_that_does_not_fit_adds_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trial 176: six POSTs of 20,000 rules left 120,002, each matched against every attempt;
    a 100,000-character job pattern was taken too."""
    from scheduler_emulator.core import faults

    monkeypatch.setattr(faults, "MAX_RULES", 3)
    emulator = Emulator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))
    client = Client(create_app(emulator))
    rule = {"action": "status", "status": 500}
    assert client.post("/_emulator/faults", json={"rules": [rule, rule]}).status_code == 200
    refused = client.post("/_emulator/faults", json={"rules": [rule, rule]})
    assert refused.status_code == 400
    assert refused.json["error"]["message"] == (
        "a fault plan holds at most 3 rules; it holds 2 and 2 more were given (clear it: DELETE "
        "/_emulator/faults)."
    )
    assert len(emulator.faults.rules) == 2  # none of the batch added
    emulator.faults.add(rule)
    with pytest.raises(InvalidArgument, match="at most 3 rules; it holds 3 and 1 more"):
        emulator.faults.add(rule)
    with pytest.raises(InvalidArgument, match="at most 3 rules; it holds 0 and 4 more"):
        FaultPlan.from_json([rule] * 4)  # (a fault file, a scenario's faults)
    with pytest.raises(InvalidArgument, match="job must be at most 1000 characters; got 1001"):
        FaultRule.from_json({**rule, "job": "j" * 1001})
    emulator.close()


def test_a_fault_file_nested_too_deeply_is_not_called_a_jobs_file(tmp_path: Path) -> None:
    """Trial 176: a bad --faults file (or scenario) was "not a valid jobs file"."""
    deep = tmp_path / "faults.yaml"
    deep.write_text("- " * 3000 + "x\n")
    with pytest.raises(InvalidArgument) as error:
        load_fault_file(deep)
    assert f"{deep}: not readable: nested deeper than 64 levels" in str(error.value)
    assert "jobs file" not in str(error.value)
