"""Execution-log entries: AttemptStarted and AttemptFinished, shaped as Cloud Logging exports
Cloud Scheduler's ``cloudscheduler.googleapis.com/executions`` log."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_emulator.domain.attempts import Attempt
from scheduler_emulator.runtime.storage.attempt_log import AttemptLog
from tests.support import wait_for

NAME = "projects/demo-project/locations/us-central1/jobs/nightly"
T0 = datetime(2026, 5, 8, 1, 0, tzinfo=UTC)


def attempt(**fields: object) -> Attempt:
    base: dict[str, object] = {
        "id": 7,
        "job": NAME,
        "run_id": 1,
        "attempt": 1,
        "schedule_time": "2026-05-08T01:00:00Z",
        "start_time": T0,
        "end_time": T0 + timedelta(milliseconds=250),
        "request": {"method": "POST", "url": "https://svc.example/run", "headers": {}},
        "response_status": 200,
        "code": "OK",
        "debug_info": "URL_CRAWLED. Original HTTP response code number = 200",
    }
    base.update(fields)
    return Attempt(**base)  # type: ignore[arg-type]


def entries(write: object) -> list[dict[str, object]]:
    stream = io.StringIO()
    log = AttemptLog(stream)
    write(log)  # type: ignore[operator]
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_attempt_started_has_the_envelope_and_payload_of_production() -> None:
    [entry] = entries(lambda log: log.started(attempt()))
    assert entry["jsonPayload"] == {
        "@type": "type.googleapis.com/google.cloud.scheduler.logging.AttemptStarted",
        "jobName": NAME,
        "scheduledTime": "2026-05-08T01:00:00Z",
        "targetType": "HTTP",
        "url": "https://svc.example/run",
    }
    assert (
        entry["logName"] == "projects/demo-project/logs/cloudscheduler.googleapis.com%2Fexecutions"
    )
    assert entry["resource"] == {
        "type": "cloud_scheduler_job",
        "labels": {"job_id": "nightly", "location": "us-central1", "project_id": "demo-project"},
    }
    assert entry["severity"] == "INFO"
    assert entry["timestamp"] == entry["receiveTimestamp"] == "2026-05-08T01:00:00Z"
    assert "httpRequest" not in entry


def test_successful_attempt_finished_has_no_status_key() -> None:
    [entry] = entries(lambda log: log.finished(attempt()))
    payload = entry["jsonPayload"]
    assert payload["@type"].endswith("AttemptFinished")  # type: ignore[index,union-attr]
    assert "status" not in payload  # type: ignore[operator]
    assert "scheduledTime" not in payload  # type: ignore[operator]
    assert payload["debugInfo"] == "URL_CRAWLED. Original HTTP response code number = 200"  # type: ignore[index]
    assert entry["httpRequest"] == {"status": 200}
    assert entry["severity"] == "INFO"
    assert entry["timestamp"] == "2026-05-08T01:00:00.250000Z"


def test_failed_attempt_finished_is_an_error_with_the_code_name() -> None:
    failed = attempt(
        response_status=404,
        code="NOT_FOUND",
        debug_info="URL_ERROR-ERROR_NOT_FOUND. Original HTTP response code number = 404",
    )
    [entry] = entries(lambda log: log.finished(failed))
    assert entry["jsonPayload"]["status"] == "NOT_FOUND"  # type: ignore[index]
    assert entry["severity"] == "ERROR"
    assert entry["httpRequest"] == {"status": 404}


def test_no_http_request_when_the_target_never_answered() -> None:
    lost = attempt(response_status=None, code="UNAVAILABLE", debug_info="x")
    [entry] = entries(lambda log: log.finished(lost))
    assert "httpRequest" not in entry


def test_insert_ids_are_unique() -> None:
    found = entries(lambda log: [log.started(attempt()), log.finished(attempt())])
    assert len({e["insertId"] for e in found}) == 2


class TestTextFormat:
    def lines(self, *attempts: Attempt) -> list[str]:
        stream = io.StringIO()
        log = AttemptLog(stream, format="text")
        for one in attempts:
            log.started(one)
            log.finished(one)
        return stream.getvalue().splitlines()

    def test_one_line_per_attempt_with_time_job_attempt_outcome_and_latency(self) -> None:
        assert self.lines(
            attempt(schedule_time=None),
            attempt(
                attempt=2,
                response_status=None,
                code="UNAVAILABLE",
                debug_info="URL_UNREACHABLE-UNREACHABLE_CONNECTION_ERROR. Connection refused",
                schedule_time=None,
            ),
        ) == [
            "2026-05-08T01:00:00Z  nightly  attempt 1  OK (HTTP 200)  250 ms",
            "2026-05-08T01:00:00Z  nightly  attempt 2  UNAVAILABLE    250 ms  reason: "
            "URL_UNREACHABLE-UNREACHABLE_CONNECTION_ERROR. Connection refused — emulator's hint: "
            "nothing listens at svc.example: start the target there, or fix the job's URI",
        ]  # (trial 182: where nothing listened was not said)

    def test_the_schedule_time_and_the_services_answer(self) -> None:
        failed = attempt(
            response_status=500,
            code="INTERNAL",
            response_excerpt='{"error": "the ledger is locked"}\n',
            schedule_time="2026-05-08T03:00:00+02:00",  # the header, in the job's time zone
            nominal=T0,
        )
        assert self.lines(attempt(), failed) == [
            "2026-05-08T01:00:00Z  nightly  attempt 1  OK (HTTP 200)  250 ms  "
            "scheduled 2026-05-08T01:00:00Z",
            "2026-05-08T01:00:00Z  nightly  attempt 1  INTERNAL (HTTP 500)  250 ms  "
            'scheduled 2026-05-08T03:00:00+02:00  reason: {"error": "the ledger is locked"}',
        ]

    def test_columns_align_on_the_widest_cell_written_so_far(self) -> None:
        long = "projects/my-project/locations/us-central1/jobs/nightly-ledger-export"
        lines = self.lines(
            attempt(schedule_time=None),
            attempt(job=long, end_time=T0 + timedelta(seconds=12), schedule_time=None),
            attempt(schedule_time=None),
        )
        assert lines[1:] == [
            "2026-05-08T01:00:00Z  nightly-ledger-export  attempt 1  OK (HTTP 200)  12000 ms",
            "2026-05-08T01:00:00Z  nightly                attempt 1  OK (HTTP 200)    250 ms",
        ]

    def test_a_forced_run_says_the_header_it_sent_as_the_views_do(self) -> None:
        """A trial's log said ``scheduled <the request's instant> (forced)``; ``attempts``
        said ``forced, sent 2027-01-01T00:00:00Z``."""
        forced = attempt(forced=True, schedule_time="2027-01-01T00:00:00Z", nominal=T0)
        assert self.lines(forced)[0].endswith("250 ms  forced, sent 2027-01-01T00:00:00Z")

    def test_a_forced_run_that_sent_no_schedule_time_says_only_forced(self) -> None:
        """Trial 52: an ``every 24 hours`` job's forced run (no ScheduleTime header) logged
        ``forced, sent <its run's instant>``, where ``runs`` said ``forced``."""
        forced = attempt(forced=True, schedule_time=None, nominal=T0)
        assert self.lines(forced)[0].endswith("250 ms  forced")

    def test_forced_and_injected_attempts_say_so(self) -> None:
        assert self.lines(attempt(forced=True, injected=True, schedule_time=None)) == [
            "2026-05-08T01:00:00Z  nightly  attempt 1  OK (HTTP 200)  250 ms  forced  (injected)"
        ]

    def test_an_unknown_format_is_refused(self) -> None:
        with pytest.raises(ValueError, match="log format 'xml' is not one of json, text"):
            AttemptLog(io.StringIO(), format="xml")


class TestLinesAreTheEntriesJsonDumps:
    """The log writes its lines without building dicts; they are the sorted dumps of them."""

    @pytest.mark.parametrize(
        "fields",
        [
            {},
            {"response_status": None, "code": "UNAVAILABLE", "debug_info": "x"},
            {"response_status": 404, "code": "NOT_FOUND", "debug_info": 'quote " é \n'},
            {"id": 2**40, "end_time": None, "code": None},
            {
                "job": "projects/project-1/locations/eu/jobs/ünï",
                "request": {"url": 'http://h/ä?q="1"'},
            },
            {"request": {"pubsubTopic": "projects/my-project/topics/tick"}},
            {"request": {}},
            {"start_time": T0 + timedelta(microseconds=7)},
        ],
    )
    @pytest.mark.parametrize("kind", ["HTTP", "PUBSUB", "APP_ENGINE_HTTP"])
    def test_same_text_as_json_dumps_sorted(self, fields: dict[str, object], kind: str) -> None:
        one = attempt(**fields)
        stream = io.StringIO()
        log = AttemptLog(stream)
        for _ in range(2):  # the second time from the per-job cache
            log.started(one, kind)
            log.finished(one, kind)
        expected = [
            json.dumps(log.started_entry(one, kind), sort_keys=True),
            json.dumps(log.finished_entry(one, kind), sort_keys=True),
        ] * 2
        assert stream.getvalue().splitlines() == expected


class FullDisk(io.StringIO):
    """A stream on a full disk."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_a_log_whose_reader_went_away_is_given_up_once_not_a_line_an_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Trial 107: ``start … | jq`` with jq gone wrote one stderr line for every entry lost."""
    from scheduler_emulator import Emulator, ManualClock, WsgiTransport
    from tests.support import RecordingTarget, nightly_job

    class GonePipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    clock = ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
    transport = WsgiTransport(RecordingTarget())
    emulator = Emulator(clock, transport=transport, attempt_log=AttemptLog(GonePipe()))
    emulator.create_job(nightly_job(schedule="* * * * *"))
    emulator.advance(timedelta(minutes=5))
    assert [a.code for a in emulator.attempts()] == ["OK"] * 5  # the attempts go on
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [
        "job nightly: AttemptStarted not logged: [Errno 32] Broken pipe",
        "the execution log's reader went away: no attempt is logged now",
    ]
    emulator.close()


class TestBatchedWrites:
    """``flush_interval``: the daemon on a system clock writes lines in batches."""

    def test_lines_are_written_in_order_within_the_interval(self) -> None:
        stream = io.StringIO()
        log = AttemptLog(stream, flush_interval=0.05)
        for number in range(1, 201):
            log.started(attempt(id=number))
            log.finished(attempt(id=number))
        expected = [f"{n:012x}{kind}" for n in range(1, 201) for kind in "sf"]

        def written() -> list[object]:
            return [json.loads(line)["insertId"] for line in stream.getvalue().splitlines()]

        assert wait_for(lambda: len(written()) == 400, bound_seconds=5)
        assert written() == expected
        log.close()

    def test_close_writes_what_is_queued_and_later_lines_are_written_at_once(self) -> None:
        stream = io.StringIO()
        log = AttemptLog(stream, flush_interval=60.0)  # the writer would wait a minute
        log.started(attempt(id=1))
        log.close()
        assert len(stream.getvalue().splitlines()) == 1
        log.finished(attempt(id=1))
        assert len(stream.getvalue().splitlines()) == 2

    def test_without_an_interval_each_line_is_there_when_the_call_returns(self) -> None:
        stream = io.StringIO()
        log = AttemptLog(stream)
        log.started(attempt(id=1))
        assert len(stream.getvalue().splitlines()) == 1

    def test_a_stream_that_fails_makes_later_lines_fail_in_their_caller(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        log = AttemptLog(FullDisk(), flush_interval=0.01)
        log.started(attempt(id=1))  # queued; the writer thread meets the error, and says so
        assert wait_for(lambda: log._writer is not None and not log._writer.is_alive(), 5)
        assert "execution log lines not written: [Errno 28] No space left" in caplog.text
        with pytest.raises(OSError, match="No space left"):
            log.finished(attempt(id=1))
        assert not log._queued  # nothing kept for a stream that cannot take it

    def test_closing_on_a_stream_that_fails_reports_the_lost_lines_and_returns(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A trial: a daemon logging to /dev/full exited 2 with a bare error when stopped."""
        log = AttemptLog(FullDisk(), flush_interval=60)
        log.started(attempt(id=1))  # queued for a minute: close writes it
        log.close()
        assert "execution log lines not written: [Errno 28] No space left" in caplog.text

    def test_a_cloud_run_executions_line_the_stream_refuses_is_reported_not_raised(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The line is written on the execution's own thread, which must go on to end."""
        record = {"name": "j/executions/export-x7k2p", "job": "j/export", "state": "SUCCEEDED",
                  "createTime": "2026-12-06T02:00:00Z", "taskCount": 1, "succeededCount": 1,
                  "taskAttempts": []}  # fmt: skip
        AttemptLog(FullDisk(), "text").execution_ended(record)
        assert "execution log lines not written: [Errno 28] No space left" in caplog.text

    @pytest.mark.parametrize("interval", [0, -1.0, float("nan")])
    def test_a_non_positive_interval_is_refused(self, interval: float) -> None:
        with pytest.raises(ValueError, match="flush_interval"):
            AttemptLog(io.StringIO(), flush_interval=interval)
