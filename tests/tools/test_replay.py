"""Recorded-timeline replay: the three input formats, pairing and ordering of log entries, the
reconstructed headers, spacing and its compression (on a fake clock: nothing sleeps), and the
command against a recording target on a real socket."""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator import Emulator, WsgiTransport
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.runtime import TransportResult
from scheduler_emulator.runtime._clock import ManualClock, Sleeper
from scheduler_emulator.runtime.storage.attempt_log import AttemptLog
from scheduler_emulator.tools.replay import (
    FORMAT_ATTEMPTS,
    FORMAT_EXPORT,
    FORMAT_LOG,
    RecordedAttempt,
    load_recording,
    parse_recording,
    plan_replay,
    replay_recording,
    send_replay,
)
from tests.daemon import serving
from tests.support import (
    RecordingTarget,
    assert_delivered,
    case_table,
    nightly_job,
    refusing_url,
    run_cli,
    run_command,
)

TYPE = "type.googleapis.com/google.cloud.scheduler.logging."
JOB = "projects/demo-project/locations/us-central1/jobs/nightly"
URL = "https://svc.example/run?src=cron"


def started(insert_id: str, scheduled: str, timestamp: str, job: str = JOB) -> dict[str, Any]:
    """An AttemptStarted entry as Cloud Logging exports it."""
    return {
        "insertId": insert_id,
        "jsonPayload": {
            "@type": TYPE + "AttemptStarted",
            "jobName": job,
            "scheduledTime": scheduled,
            "targetType": "HTTP",
            "url": URL,
        },
        "logName": "projects/demo-project/logs/cloudscheduler.googleapis.com%2Fexecutions",
        "receiveTimestamp": timestamp,
        "resource": {
            "type": "cloud_scheduler_job",
            "labels": {
                "job_id": job.rsplit("/", 1)[-1],
                "location": "us-central1",
                "project_id": "demo",
            },
        },
        "severity": "INFO",
        "timestamp": timestamp,
    }


def finished(insert_id: str, status: int, timestamp: str, job: str = JOB) -> dict[str, Any]:
    """An AttemptFinished entry: ``status`` only on failure, severity ERROR then."""
    entry = started(insert_id, "", timestamp, job)
    code = {200: None, 500: "INTERNAL", 404: "NOT_FOUND"}[status]
    kind = "URL_CRAWLED" if code is None else "URL_UNREACHABLE-UNREACHABLE_5xx"
    entry["jsonPayload"] = {
        "@type": TYPE + "AttemptFinished",
        "debugInfo": f"{kind}. Original HTTP response code number = {status}",
        "jobName": job,
        "targetType": "HTTP",
        "url": URL,
    }
    entry["httpRequest"] = {"status": status}
    if code is not None:
        entry["jsonPayload"]["status"] = code
        entry["severity"] = "ERROR"
    return entry


#: A failed attempt (500) and its retry 5 s later (200), exported out of order, with entry
#: timestamps stamped seconds after the dispatch (one Started after its Finished, as real
#: exports show).
EXPORT = [
    finished("f-2", 200, "2026-05-08T01:00:19.100000Z"),
    started("s-1", "2026-05-08T01:00:05.511927Z", "2026-05-08T01:00:12.349245Z"),
    finished("f-1", 500, "2026-05-08T01:00:11.900000Z"),
    started("s-2", "2026-05-08T01:00:10.511927Z", "2026-05-08T01:00:18.000000Z"),
]


class FakeClock:
    """A clock whose ``wait`` returns at once and moves its time by the wait it was asked for."""

    manual = True

    def __init__(self) -> None:
        self.seconds = 0.0
        self.waits: list[float] = []

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds

    def wait(self, until: datetime | None, wakeup: threading.Event) -> None:
        assert until is not None
        waited = (until - self.now()).total_seconds()
        self.waits.append(round(waited, 6))
        self.seconds += waited

    def attach(self, sleeper: Sleeper) -> None:
        """Nothing to drive."""


def write_json(folder: Path, data: Any, name: str = "recording.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(data))
    return path


class TestCloudLoggingExport:
    def test_attempts_are_ordered_by_dispatch_time_and_paired_in_order(self) -> None:
        recording = parse_recording(json.dumps(EXPORT))
        assert recording.format == FORMAT_EXPORT
        assert [
            (iso_of(a.started), a.recorded_status, a.recorded_code) for a in recording.attempts
        ] == [
            ("2026-05-08T01:00:05.511927", 500, "INTERNAL"),
            ("2026-05-08T01:00:10.511927", 200, "OK"),
        ]

    def test_headers_are_rebuilt_with_an_approximate_schedule_time_for_the_whole_run(
        self,
    ) -> None:
        first, retry = parse_recording(json.dumps(EXPORT)).attempts
        assert first.method == retry.method == "POST"
        assert first.body is None
        assert (
            dict(first.headers)
            == dict(retry.headers)
            == {
                "User-Agent": "Google-Cloud-Scheduler",
                "X-CloudScheduler": "true",
                "X-CloudScheduler-JobName": "nightly",
                "X-CloudScheduler-ScheduleTime": "2026-05-08T01:00:00Z",  # the retry keeps it
            }
        )
        assert first.schedule_time_approximate

    @pytest.mark.parametrize(
        ("entries", "expected"),
        [
            pytest.param(
                [
                    *EXPORT,
                    started("s-3", "2026-05-09T01:00:05.4Z", "2026-05-09T01:00:09Z"),
                    finished("f-3", 200, "2026-05-09T01:00:09.5Z"),
                ],
                ["2026-05-08T01:00:00Z", "2026-05-08T01:00:00Z", "2026-05-09T01:00:00Z"],
                id="after a retry's success",
            ),
            # Trial 120: a copy's 409 after the original's 200 made the next run, 30 minutes
            # later, its "retry": it was sent with the earlier ScheduleTime, and a deduplicating
            # service skipped it.
            pytest.param(
                [
                    started("s-1", "2026-05-08T01:30:00.4Z", "2026-05-08T01:30:01Z"),
                    finished("f-1", 200, "2026-05-08T01:30:01.1Z"),
                    started("s-2", "2026-05-08T01:30:00.5Z", "2026-05-08T01:30:01.2Z"),
                    finished("f-2", 404, "2026-05-08T01:30:01.3Z"),
                    started("s-3", "2026-05-08T02:00:00.4Z", "2026-05-08T02:00:01Z"),
                    finished("f-3", 200, "2026-05-08T02:00:01.1Z"),
                ],
                ["2026-05-08T01:30:00Z", "2026-05-08T01:30:00Z", "2026-05-08T02:00:00Z"],
                id="after a duplicate's failure",
            ),
        ],
    )
    def test_a_run_after_a_success_starts_a_new_schedule_time(
        self, entries: list[dict[str, Any]], expected: list[str]
    ) -> None:
        attempts = parse_recording(json.dumps(entries)).attempts
        assert [a.schedule_time for a in attempts] == expected

    def test_jobs_are_paired_separately_and_other_entries_are_ignored(self) -> None:
        other = JOB.replace("nightly", "report")
        entries = [
            started("a", "2026-05-08T01:00:00.5Z", "2026-05-08T01:00:01Z", other),
            *EXPORT,
            finished("b", 404, "2026-05-08T01:00:30Z", other),
            {"insertId": "audit", "protoPayload": {"methodName": "CreateJob"}},
        ]
        recording = parse_recording(json.dumps(entries))
        assert [(a.job_id, a.recorded_status) for a in recording.attempts] == [
            ("report", 404),
            ("nightly", 500),
            ("nightly", 200),
        ]
        assert "1 entry not AttemptStarted or AttemptFinished ignored." in recording.notes

    def test_an_attempt_without_its_finished_entry_has_no_recorded_answer(self) -> None:
        recording = parse_recording(json.dumps(EXPORT[1:3] + [EXPORT[3]]))
        assert [a.recorded for a in recording.attempts] == ["500 INTERNAL", "(not recorded)"]
        assert "1 attempt(s) without an AttemptFinished entry." in recording.notes


class TestEmulatorRecordings:
    @pytest.fixture
    def recorded_emulator(self, target: RecordingTarget) -> Iterator[tuple[Emulator, str]]:
        """The nightly job failing once (500) then succeeding, with its execution log."""
        answers = iter([500, 200])
        target.status = lambda received: next(answers)
        log = io.StringIO()
        emulator = Emulator(
            ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)),
            transport=WsgiTransport(target),
            attempt_log=AttemptLog(log),
        )
        target_json = {
            "uri": "http://target.test/run?x=1",
            "body": "e30=",  # {}
            "headers": {"Content-Type": "application/json"},
        }
        emulator.create_job(nightly_job(httpTarget=target_json))
        emulator.advance(timedelta(minutes=2))
        yield emulator, log.getvalue()
        emulator.close()

    def test_the_attempts_endpoint_shape_keeps_method_url_and_headers(
        self, recorded_emulator: tuple[Emulator, str]
    ) -> None:
        emulator, _ = recorded_emulator
        document = {"attempts": [a.to_json() for a in emulator.attempts()]}
        recording = parse_recording(json.dumps(document))
        assert recording.format == FORMAT_ATTEMPTS
        first, retry = recording.attempts
        assert (first.method, first.url, first.recorded) == (
            "POST",
            "http://target.test/run?x=1",
            "500 INTERNAL",
        )
        assert first.headers == emulator.attempts()[0].request["headers"]
        assert first.headers["Content-Type"] == "application/json"
        assert retry.schedule_time == "2026-09-24T02:00:00Z"
        assert not retry.schedule_time_approximate
        assert (retry.started - first.started).total_seconds() == 5

    def test_the_execution_log_is_paired_by_insert_id(
        self, recorded_emulator: tuple[Emulator, str]
    ) -> None:
        _, log = recorded_emulator
        lines = log.splitlines()
        shuffled = "\n".join([lines[3], lines[0], lines[2], lines[1]]) + "\n"
        recording = parse_recording(shuffled)
        assert recording.format == FORMAT_LOG
        assert [(a.recorded, a.schedule_time) for a in recording.attempts] == [
            ("500 INTERNAL", "2026-09-24T02:00:00Z"),
            ("200 OK", "2026-09-24T02:00:00Z"),
        ]
        assert recording.attempts[0].headers["X-CloudScheduler-JobName"] == "nightly"


class TestReading:
    @case_table(__file__, "malformed")
    def test_a_malformed_recording_names_what_is_wrong(self, text: str, message: str) -> None:
        with pytest.raises(ValueError) as error:
            parse_recording(text)
        assert message in str(error.value)

    def test_a_file_without_attempts_is_a_configuration_error(self, tmp_path: Path) -> None:
        path = write_json(tmp_path, [{"insertId": "x", "jsonPayload": {"@type": "other"}}])
        with pytest.raises(ConfigurationError, match=f"{path}: no attempts found"):
            load_recording(path)


def recorded(seconds: float, path: str = "/run") -> RecordedAttempt:
    start = datetime(2026, 5, 8, 1, 0, tzinfo=UTC) + timedelta(seconds=seconds)
    return RecordedAttempt(start, "nightly", "POST", "https://svc.example" + path, {})


class TestSpacing:
    @case_table(__file__, "spacing")
    def test_gaps_are_kept_or_capped(self, cap: float, waits: list[float]) -> None:
        attempts = [recorded(0), recorded(5), recorded(5.5), recorded(3605.5)]
        plan = plan_replay(attempts, "http://t", None if math.isinf(cap) else cap)
        assert [p.gap_seconds for p in plan] == [0, 5, 0.5, 3600]
        assert [p.wait_seconds for p in plan] == waits

    def test_sending_waits_the_gaps_between_attempt_starts(self, target: RecordingTarget) -> None:
        clock = FakeClock()
        plan = plan_replay([recorded(0), recorded(5), recorded(7)], "http://local.test")
        sent = send_replay(plan, transport=WsgiTransport(target), clock=clock)
        assert clock.waits == [5, 2]
        assert [s.waited_seconds for s in sent] == [0, 5, 2]
        assert len(target.requests) == 3

    def test_a_slow_answer_holds_back_no_later_send(self) -> None:
        """A trial's replay sent each request once the one before was answered: after a 25 s
        handler, the next came 25 s late, not 0.003 s, and the recording's overlap was lost."""
        second_started = threading.Event()

        class HeldTransport:
            def send(self, request: Any, timeout_seconds: float) -> TransportResult:
                if request.url.endswith("/first"):  # answered once the next send has begun
                    assert second_started.wait(10), "the second send waited for this answer"
                else:
                    second_started.set()
                return TransportResult(status=200)

        clock = FakeClock()
        plan = plan_replay([recorded(0, "/first"), recorded(5, "/second")], "http://local.test")
        sent = send_replay(plan, transport=HeldTransport(), clock=clock)
        assert [item.result.status for item in sent] == [200, 200]
        assert clock.waits == [5]


def test_a_gap_to_year_9999_waits_at_most_a_year_and_compress_gaps_is_finite(
    tmp_path: Path, target: RecordingTarget
) -> None:
    """Trial 127: a second attempt recorded at 9999-12-31 overflowed the wait with a traceback,
    and ``--compress-gaps nan`` or ``inf`` were taken."""
    entries = [
        started("s-1", "2026-05-08T01:00:00.5Z", "2026-05-08T01:00:01Z"),
        started("s-2", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
    ]
    path = write_json(tmp_path, entries)
    clock = FakeClock()
    with serving(target) as url:
        assert replay_recording(path, url + "/", io.StringIO(), clock=clock) == 0
        for cap in ("nan", "inf"):
            with pytest.raises(ConfigurationError, match="finite number of seconds"):
                replay_recording(path, url + "/", io.StringIO(), compress_gaps=float(cap))
    assert clock.waits == [366 * 86400] and len(target.requests) == 2


class TestReplayAgainstATarget:
    def test_an_export_replays_with_the_same_method_url_headers_and_spacing(
        self, tmp_path: Path, target: RecordingTarget
    ) -> None:
        path = write_json(tmp_path, EXPORT)
        clock, out = FakeClock(), io.StringIO()
        with serving(target) as url:
            code = replay_recording(path, url + "/", out, clock=clock)
        assert code == 0
        assert clock.waits == [5]  # the recorded spacing, computed, not slept
        assert [(r.method, r.path, r.query) for r in target.requests] == [
            ("POST", "/run", "src=cron")
        ] * 2
        for request in target.requests:
            assert_delivered(request, "2026-05-08T01:00:00Z", path="/run")
            assert request.body == b""
        lines = out.getvalue().splitlines()
        assert lines[0] == (
            f"Replaying 2 attempts from {path} (Cloud Logging export) to {url}, recorded "
            "spacing (waits 5s in all)."
        )
        header = lines.index(next(line for line in lines if line.startswith("#  RECORDED")))
        assert lines[header].split() == [
            "#", "RECORDED", "START", "GAP", "WAIT", "JOB", "METHOD", "PATH", "SCHEDULETIME",
            "RECORDED", "ANSWER",
        ]  # fmt: skip
        assert lines[header + 1].split() == [
            "1", "2026-05-08T01:00:05.511927Z", "-", "-", "nightly", "POST", "/run?src=cron",
            "2026-05-08T01:00:00Z~", "500", "INTERNAL", "200", "OK",
        ]  # fmt: skip
        assert lines[header + 2].split()[:4] == ["2", "2026-05-08T01:00:10.511927Z", "5s", "5s"]
        assert lines[-1] == "2 sent; 2 answered (1 with the recorded status), 0 without an answer."

    @pytest.mark.parametrize(("cap", "gap"), [("0", "0s"), ("0.2s", "0.2s")])
    def test_the_command_compresses_gaps(
        self, tmp_path: Path, target: RecordingTarget, cap: str, gap: str
    ) -> None:
        """A duration too (trial 148: ``1h`` was ``invalid float value``)."""
        path = write_json(tmp_path, EXPORT)
        with serving(target) as url:
            code, out, err = run_cli(
                "replay", "--attempts", str(path), "--target", url, "--compress-gaps", cap
            )
        assert (code, err) == (0, "")
        assert len(target.requests) == 2
        assert f"gaps capped at {gap} (waits {gap} in all)" in out
        assert out.splitlines()[5].split()[2:4] == ["5s", gap]

    @pytest.mark.parametrize(
        ("cap", "says"), [("-1", "a duration is never negative"), ("nan", "not a duration")]
    )
    def test_a_cap_that_is_no_duration_exits_2_naming_it(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], cap: str, says: str
    ) -> None:
        path = write_json(tmp_path, EXPORT)
        args = ("replay", "--attempts", str(path), "--target", "http://t", "--compress-gaps", cap)
        code, out, err = run_command(capsys, *args)
        assert (code, out) == (2, "")
        assert f"error: argument --compress-gaps: {says}" in err

    def test_a_target_that_does_not_answer_is_refused_before_the_run(self, tmp_path: Path) -> None:
        """Trial 82: a service that had not started made every attempt UNAVAILABLE and the
        replay exit 1, as an unmet expectation does; it is refused (exit 2), nothing sent."""
        path = write_json(tmp_path, EXPORT[1:3])
        with refusing_url() as url:
            code, out, err = run_cli(
                "replay", "--attempts", str(path), "--target", url, "--compress-gaps"
            )
        assert (code, out) == (2, "")
        assert err == (
            f"error: nothing answers at {url} (Connection refused): start the service first "
            "(replay sends every attempt there, and none would reach it).\n"
        )


class TestArguments:
    @case_table(__file__, "bad_arguments")
    def test_a_bad_combination_prints_error_and_exits_2(
        self, args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        write_json(tmp_path, EXPORT, "x.json")
        code, out, err = run_cli("replay", *args)
        assert (code, out) == (2, "")
        assert err.startswith("error: ") and message in err


def iso_of(instant: datetime) -> str:
    return instant.astimezone(UTC).replace(tzinfo=None).isoformat()


class TestBodies:
    def test_an_attempts_file_sends_each_recorded_body_and_leaves_out_pubsub_attempts(
        self, tmp_path: Path, target: RecordingTarget
    ) -> None:
        """A trial's replay of the README's jobs sent report's requests without their JSON
        body (400 where the service had answered 500 or 200), and refused the export for its
        Pub/Sub attempt; `attempts --json` lines (one attempt a line) were no recording."""
        log = io.StringIO()
        emulator = Emulator(
            ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)),
            transport=WsgiTransport(RecordingTarget()),
            attempt_log=AttemptLog(log),
        )
        body_json = {"uri": "http://target.test/run", "body": "e30="}  # {}
        emulator.create_job(nightly_job(httpTarget=body_json))
        emulator.create_job(
            name="restock",
            schedule="0 2 * * *",
            pubsub_target={"topic_name": "projects/my-project/topics/tick", "data": "e30="},
        )
        emulator.advance(timedelta(minutes=2))
        records = [a.to_json() for a in emulator.attempts()]
        emulator.close()
        assert [r["request"].get("body") for r in records] == ["{}", None]  # Pub/Sub: data
        path = write_json(tmp_path, {"attempts": records})
        lines = tmp_path / "attempts.jsonl"
        lines.write_text("".join(json.dumps(record) + "\n" for record in records))
        for recording in (path, lines):
            with serving(target) as url:
                code, out, err = run_cli(
                    "replay", "--attempts", str(recording), "--target", url, "--compress-gaps"
                )
            assert code == 0, err
            assert err == "note: 1 Pub/Sub attempt(s) not sent: replay sends HTTP requests.\n"
            assert "Replaying 1 attempt from" in out
        assert [r.body for r in target.requests] == [b"{}", b"{}"]
        # trial 148: the execution log's Pub/Sub entry ("has no url") refused the whole log
        from_log = parse_recording(log.getvalue())
        assert [a.job_id for a in from_log.attempts] == ["nightly"]
        assert from_log.warnings == [err.strip()]

    def test_a_recorded_body_is_sent_and_nothing_is_noted(
        self, tmp_path: Path, target: RecordingTarget
    ) -> None:
        attempt = {
            "job": JOB,
            "startTime": "2026-09-24T02:00:00Z",
            "request": {"method": "POST", "url": "http://t/run", "headers": {}, "body": '{"a":1}'},
        }
        path = write_json(tmp_path, {"attempts": [attempt]})
        with serving(target) as url:
            code, _, err = run_cli("replay", "--attempts", str(path), "--target", url)
        assert (code, err) == (0, "")
        assert [r.body for r in target.requests] == [b'{"a":1}']

    def test_a_partly_bodiless_file_counts_the_requests_sent_without_one(self) -> None:
        with_body = {
            "startTime": "2026-09-24T02:00:00Z",
            "request": {"url": "http://t/run", "body": "x"},
        }
        without = {"startTime": "2026-09-24T02:01:00Z", "request": {"url": "http://t/run"}}
        recording = parse_recording(json.dumps({"attempts": [with_body, without, without]}))
        assert recording.warnings == [
            "note: request bodies are not recorded in the /_emulator/attempts format; 2 "
            "requests are sent without a body."
        ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("recorded_as", ["attempts", "execution log"])
def test_attempts_the_target_never_received_are_not_sent_again(
    tmp_path: Path, target: RecordingTarget, recorded_as: str
) -> None:
    """A trial's replay sent an attempt an injected 503 had stood in for: the service got a run
    twice that it had received once. Injected statuses and connection errors are left out."""
    log = io.StringIO()
    emulator = Emulator(
        ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)),
        transport=WsgiTransport(RecordingTarget()),
        attempt_log=AttemptLog(log),
    )
    emulator.create_job(nightly_job(schedule="* * * * *"))
    emulator.faults.add(action="status", status=503, job="nightly", run=1, attempt=1)
    emulator.faults.add(action="connection_error", job="nightly", run=2, attempt=1)
    emulator.advance(timedelta(minutes=2, seconds=30))
    attempts = emulator.attempts()
    emulator.close()
    assert [(a.code, a.injected) for a in attempts] == [
        ("UNAVAILABLE", True), ("OK", False), ("UNAVAILABLE", True), ("OK", False)
    ]  # fmt: skip
    if recorded_as == "attempts":
        path = write_json(tmp_path, {"attempts": [a.to_json() for a in attempts]})
    else:
        path = tmp_path / "log.jsonl"
        path.write_text(log.getvalue())
    with serving(target) as url:
        code, out, _ = run_cli(
            "replay", "--attempts", str(path), "--target", url, "--compress-gaps", "0"
        )
    assert code == 0, out
    assert len(target.requests) == 2  # the two retries: what the service received
    assert "Note: 2 recorded attempt(s) not sent: an injected status or connection error" in out
    assert "2 sent; 2 answered" in out
