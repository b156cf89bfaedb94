"""The read model under /_emulator/, attempt records that say why, the dashboard's files and
its safety, the terminal views and the replay report (no browser: see
test_dashboard_browser.py for the page in Chromium)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from scheduler_emulator import Attempt, Emulator, HttpTransport, ManualClock, WsgiTransport
from scheduler_emulator.domain.attempts import RESPONSE_EXCERPT_BYTES, SkippedRun, iso
from scheduler_emulator.runtime.storage import read_model
from scheduler_emulator.server.server import create_app
from scheduler_emulator.tools import views
from scheduler_emulator.tools.replay import replay_scenario
from tests.daemon import serving
from tests.support import TARGET, RecordingTarget, nightly_job

ROOT = Path(__file__).resolve().parents[3]
JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
CLEANUP = {"uri": TARGET.replace("/nightly", "/cleanup"), "httpMethod": "POST"}


def answering(status: int, body: bytes, content_type: str = "text/plain") -> Callable[..., Any]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response(f"{status} X", [("Content-Type", content_type)])
        return [body]

    return app


class TestAttemptRecordsSayWhy:
    def test_an_in_process_answer_is_kept_with_its_content_type(self, clock: ManualClock) -> None:
        app = answering(503, b'{"error": "the ledger is locked"}', "application/json")
        with Emulator(clock, transport=WsgiTransport(app)) as emulator:
            emulator.create_job(nightly_job(retryConfig={"retryCount": 0}))
            emulator.advance(timedelta(minutes=1))
            [attempt] = emulator.attempts()
        assert attempt.response_excerpt == '{"error": "the ledger is locked"}'
        assert attempt.response_content_type == "application/json"
        assert attempt.nominal == datetime(2026, 9, 24, 2, tzinfo=UTC)
        assert attempt.to_json()["nominalTime"] == "2026-09-24T02:00:00Z"

    def test_over_http_only_the_first_4_kib_is_kept(
        self, clock: ManualClock, http_transport: HttpTransport
    ) -> None:
        body = ("é" * 3000).encode()  # 6000 bytes: cut inside a character
        with serving(answering(500, body)) as base:  # type: ignore[arg-type]
            emulator = Emulator(clock, transport=http_transport)
            uri = base + "/_triggers/timer/nightly"
            emulator.create_job(nightly_job(httpTarget={"uri": uri}, retryConfig={}))
            emulator.advance(timedelta(minutes=1))
            [attempt] = emulator.attempts()
            emulator.close()
        assert attempt.response_status == 500
        assert attempt.response_content_type == "text/plain"
        assert len(attempt.response_excerpt.encode()) <= RESPONSE_EXCERPT_BYTES + 2
        assert attempt.response_excerpt.startswith("é" * 2000)

    def test_a_job_posting_to_another_timer_route_is_told_so(self, clock: ManualClock) -> None:
        route = TARGET.replace("/nightly", "/cleanup")
        with Emulator(clock, transport=WsgiTransport(answering(500, b""))) as emulator:
            emulator.create_job(nightly_job(httpTarget={"uri": route}, retryConfig={}))
            emulator.advance(timedelta(minutes=1))
            [attempt] = emulator.attempts()
        assert "timer route 'cleanup' is not the job's name 'nightly'" in attempt.hint
        assert attempt.to_json()["hint"] == attempt.hint

    def test_the_hint_sits_beside_the_services_own_answer(self, clock: ManualClock) -> None:
        route = TARGET.replace("/nightly", "/cleanup")
        answer = b"no such timer: cleanup"
        with Emulator(clock, transport=WsgiTransport(answering(500, answer))) as emulator:
            emulator.create_job(nightly_job(httpTarget={"uri": route}, retryConfig={}))
            emulator.advance(timedelta(minutes=1))
            [attempt] = emulator.attempts()
        reason = attempt.to_json()["reason"]
        assert reason.startswith("no such timer: cleanup — emulator's hint: timer route 'cleanup'")

    def test_an_empty_500_from_the_jobs_own_timer_route_suggests_a_missing_handler(
        self, clock: ManualClock
    ) -> None:
        with Emulator(clock, transport=WsgiTransport(answering(500, b""))) as emulator:
            emulator.create_job(nightly_job(name="cleanup", httpTarget=CLEANUP, retryConfig={}))
            emulator.advance(timedelta(minutes=1))
            [attempt] = emulator.attempts()
        assert attempt.request["url"].endswith("/_triggers/timer/cleanup")
        assert "no handler is registered for the route" in attempt.hint
        assert "'cleanup'" in attempt.hint and "may" in attempt.hint

    @pytest.mark.parametrize(
        ("status", "body"), [(500, b"boom: the ledger is locked"), (503, b""), (200, b"")]
    )
    def test_no_handler_hint_only_for_an_empty_500(
        self, clock: ManualClock, status: int, body: bytes
    ) -> None:
        with Emulator(clock, transport=WsgiTransport(answering(status, body))) as emulator:
            emulator.create_job(nightly_job(name="cleanup", httpTarget=CLEANUP, retryConfig={}))
            emulator.advance(timedelta(minutes=1))
            [attempt] = emulator.attempts()
        assert attempt.hint == ""


@pytest.fixture
def client(emulator: Emulator) -> Client:
    return Client(create_app(emulator))


def flaky(received: Any) -> int:
    """503 for every nightly attempt, 200 for the others."""
    return 200 if received.headers.get("X-Cloudscheduler-Jobname") == "weekly" else 503


class TestReadModel:
    @pytest.fixture
    def day(self, emulator: Emulator, target: RecordingTarget) -> Emulator:
        target.status = flaky
        emulator.create_job(nightly_job(retryConfig={"retryCount": 1}))
        emulator.create_job(
            nightly_job(name="weekly", schedule="30 9 * * mon-fri", description="Grüße ☃")
        )
        emulator.create_job(nightly_job(name="paused", schedule="*/15 * * * *"))
        emulator.pause_job("paused")
        emulator.advance(timedelta(days=1))
        return emulator

    def test_jobs_read_their_schedule_in_english_with_next_fire_times(
        self, day: Emulator, client: Client
    ) -> None:
        rows = {row["id"]: row for row in client.get("/_emulator/jobs").json["jobs"]}
        assert rows["nightly"]["scheduleText"] == "at 02:00, every day"
        assert rows["weekly"]["scheduleText"] == "at 09:30, Monday to Friday"
        assert (rows["weekly"]["description"], rows["nightly"]["description"]) == ("Grüße ☃", "")
        assert rows["nightly"]["nextFireTimes"] == [
            f"2026-09-{d}T02:00:00Z" for d in (25, 26, 27, 28, 29)
        ]
        assert rows["nightly"]["lastAttempt"]["code"] == "UNAVAILABLE"
        assert rows["weekly"]["lastAttempt"]["code"] == "OK"
        assert rows["paused"]["nextFireTimes"] == [] and rows["paused"]["state"] == "PAUSED"
        paused = client.get("/_emulator/jobs?state=PAUSED").json
        assert [r["id"] for r in paused["jobs"]] == ["paused"] and paused["totalSize"] == 1
        assert [r["id"] for r in client.get("/_emulator/jobs?name=EEK").json["jobs"]] == ["weekly"]
        page = client.get("/_emulator/jobs?pageSize=2").json
        assert len(page["jobs"]) == 2 and page["nextPageToken"] == "2"
        assert client.get("/_emulator/jobs?fireTimes=2").json["jobs"][0]["nextFireTimes"] == [
            "2026-09-25T02:00:00Z",
            "2026-09-26T02:00:00Z",
        ]

    def test_the_timeline_holds_the_window_only_with_runs_and_their_retries(
        self, day: Emulator, client: Client
    ) -> None:
        answer = client.get(
            "/_emulator/timeline?start=2026-09-24T01:00:00Z&end=2026-09-24T12:00:00Z"
        ).json
        assert answer["now"] == "2026-09-25T01:59:00Z" and answer["clock"] == "manual"
        lanes = {lane["id"]: lane for lane in answer["lanes"]}
        [run] = lanes["nightly"]["runs"]
        assert [(a["attempt"], a["code"]) for a in run["attempts"]] == [
            (1, "UNAVAILABLE"),
            (2, "UNAVAILABLE"),
        ]
        assert run["nominalTime"] == "2026-09-24T02:00:00Z"
        assert [len(r["attempts"]) for r in lanes["weekly"]["runs"]] == [1]
        later = client.get(
            "/_emulator/timeline?start=2026-09-24T12:00:00Z&end=2026-09-24T13:00:00Z"
        ).json
        assert all(not lane["runs"] for lane in later["lanes"])

    def test_a_window_holding_too_many_attempts_is_refused_naming_it(
        self, day: Emulator, client: Client, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Trial 176: a timeline of the whole history took 43 MB a request, six at once 800 MB
        of the daemon's memory."""
        from scheduler_emulator.runtime.storage import read_model

        monkeypatch.setattr(read_model, "TIMELINE_ATTEMPTS_MAX", 2)  # the day made 3
        window = "start=2026-09-24T01:00:00Z&end=2026-09-24T12:00:00Z"
        answer = client.get(f"/_emulator/timeline?{window}")
        assert answer.status_code == 400, answer.json
        assert answer.json["error"]["message"] == (
            "the window 2026-09-24T01:00:00Z to 2026-09-24T12:00:00Z holds 3 attempts of these 3 "
            "jobs, more than the 2 a timeline answers: narrow it (start, end) or ask for fewer "
            "lanes (pageSize)."
        )
        assert client.get(f"/_emulator/timeline?{window}&name=weekly").status_code == 200

    def test_skipped_times_are_in_their_lane(self, day: Emulator, client: Client) -> None:
        nominal = datetime(2026, 9, 24, 10, tzinfo=UTC)
        job = day.job_name("nightly")
        day.store.add_skipped(SkippedRun(job, "2026-09-24T10:00:00Z", nominal, nominal))
        answer = client.get(
            "/_emulator/timeline?start=2026-09-24T09:00:00Z&end=2026-09-24T11:00:00Z&name=night"
        ).json
        [lane] = answer["lanes"]
        assert lane["skipped"] == [
            {
                "nominalTime": "2026-09-24T10:00:00Z",
                "scheduleTime": "2026-09-24T10:00:00Z",
                "reason": "RUN_STILL_GOING",
            }
        ]

    def test_runs_and_attempts_newest_first(self, day: Emulator, client: Client) -> None:
        runs = client.get("/_emulator/runs").json["runs"]
        assert [r["nominalTime"] for r in runs] == [
            "2026-09-24T09:30:00Z",
            "2026-09-24T02:00:00Z",
        ]
        only = client.get("/_emulator/runs?job=nightly&pageSize=1").json
        assert len(only["runs"]) == 1 and "nextPageToken" not in only
        first = client.get("/_emulator/attempts?order=newest&pageSize=2").json
        assert [a["job"].rsplit("/", 1)[1] for a in first["attempts"]] == ["weekly", "nightly"]
        rest = client.get(
            f"/_emulator/attempts?order=newest&pageToken={first['nextPageToken']}"
        ).json
        assert [a["attempt"] for a in rest["attempts"]] == [1]
        one = client.get(f"/_emulator/attempts/{first['attempts'][0]['id']}").json
        assert one == first["attempts"][0]

    @pytest.mark.parametrize(
        ("path", "field"),
        [
            ("/_emulator/attempts/x7", "id"),
            ("/_emulator/attempts?order=sideways", "order"),
            ("/_emulator/timeline?start=2026-09-25T00:00:00Z&end=2026-09-24T00:00:00Z", "start"),
            ("/_emulator/timeline?end=yesterday", "end"),
            ("/_emulator/jobs?state=DELETED", "state"),
            ("/_emulator/jobs?fireTimes=500", "fireTimes"),
            ("/_emulator/runs?scheduledAfter=soon", "scheduledAfter"),
            ("/_emulator/jobs?pageToken=abc", "pageToken"),
        ],
    )
    def test_bad_parameters_are_named(self, client: Client, path: str, field: str) -> None:
        response = client.get(path)
        assert response.status_code == 400
        assert field in response.json["error"]["message"]

    def test_an_unknown_attempt_is_404(self, client: Client) -> None:
        response = client.get("/_emulator/attempts/99")
        assert response.status_code == 404 and "99" in response.json["error"]["message"]

    def test_a_window_query_uses_the_index(self, emulator: Emulator) -> None:
        plan = emulator.store.query(
            "EXPLAIN QUERY PLAN SELECT id FROM attempts WHERE job = ? AND start_time >= ? "
            "AND start_time < ?",
            ("j", "a", "b"),
        )
        assert "attempts_job_start" in " ".join(str(row) for row in plan)
        plan = emulator.store.query(
            "EXPLAIN QUERY PLAN SELECT id FROM attempts WHERE start_time >= ? AND start_time < ?",
            ("a", "b"),
        )
        assert "attempts_start" in " ".join(str(row) for row in plan)


class TestDashboardSafety:
    ACTIONS = [
        ("POST", JOBS + "/nightly:run"),
        ("POST", JOBS + "/nightly:pause"),
        ("POST", JOBS + "/nightly:resume"),
        ("DELETE", JOBS + "/nightly"),
        ("POST", "/_emulator/clock:advance"),
        ("POST", "/_emulator/clock:moveTo"),
        ("POST", "/_emulator/reset"),
        ("POST", "/_emulator/faults"),
        ("DELETE", "/_emulator/faults"),
    ]

    @pytest.mark.parametrize(("method", "path"), ACTIONS)
    def test_a_cross_origin_request_is_refused(
        self, emulator: Emulator, client: Client, method: str, path: str
    ) -> None:
        emulator.create_job(nightly_job())
        response = client.open(
            path, method=method, json={}, headers={"Origin": "https://evil.example"}
        )
        assert response.status_code == 403
        assert emulator.get_job("nightly").state.name == "ENABLED"

    @pytest.mark.parametrize(("method", "path"), [a for a in ACTIONS if a[0] == "POST"])
    @pytest.mark.parametrize("body", [b"", b"{}"])
    def test_a_text_plain_post_is_refused(
        self, emulator: Emulator, client: Client, method: str, path: str, body: bytes
    ) -> None:
        emulator.create_job(nightly_job())
        response = client.post(path, data=body, content_type="text/plain")
        assert response.status_code == 415
        assert emulator.get_job("nightly").state.name == "ENABLED"
        assert emulator.now() == datetime(2026, 9, 24, 1, 59, tzinfo=UTC)
        assert not emulator.attempts()

    def test_the_page_is_served_and_framing_is_refused(self, client: Client) -> None:
        for path in ("/", "/_emulator/ui/"):
            page = client.get(path)
            assert page.status_code == 200 and page.mimetype == "text/html"
            assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
            assert b'data-testid="timeline"' in page.data
            assert b'data-testid="timeline-loading">Loading' in page.data  # before the first draw
        assert client.get("/_emulator/ui/timeline.js").mimetype == "text/javascript"
        assert client.get("/_emulator/ui/secrets.txt").status_code == 404
        moved = client.get("/_emulator/ui")  # a redirect, not an error envelope of code 308
        assert moved.status_code == 308 and moved.headers["Location"].endswith("/_emulator/ui/")

    def test_with_an_admin_token_the_page_loads_and_its_data_needs_the_token(
        self, emulator: Emulator
    ) -> None:
        client = Client(create_app(emulator, admin_token="s3cret"))
        assert client.get("/_emulator/ui/").status_code == 200
        assert client.get("/_emulator/ui/dashboard.js").status_code == 200
        assert client.get("/_emulator/timeline").status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        assert client.get("/_emulator/timeline", headers=headers).status_code == 200


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    path = tmp_path_factory.mktemp("report") / "r.html"
    out = io.StringIO()
    code = replay_scenario(
        ROOT / "examples" / "orders" / "scenarios" / "duplicates.yaml", out, report_file=path
    )
    assert code == 1
    yield path.read_text(encoding="utf-8"), out.getvalue()


class TestReplayReport:
    def test_it_loads_nothing_from_anywhere(self, report: tuple[str, str]) -> None:
        page = _Tags()
        page.feed(report[0])
        for tag, attrs in page.tags:
            assert "src" not in attrs and "href" not in attrs, (tag, attrs)
        assert "http://" not in report[0].replace("http://orders.test", "").replace(
            "http://www.w3.org/2000/svg", ""
        )

    def test_it_shows_the_duplicates_and_the_unmet_expectation(
        self, report: tuple[str, str]
    ) -> None:
        page = _Tags()
        page.feed(report[0])
        rows = [a for t, a in page.tags if a.get("data-testid") == "duplicate-row"]
        assert len(rows) == 2
        text = " ".join(page.text)
        assert "unmet nightly: probe.sweeps == runs (observed 4; runs = 2)" in " ".join(
            text.split()
        )
        assert "2 duplicate deliveries" in text
        assert "Report written to" in report[1]

    def test_it_shows_the_steps_the_fault_rules_and_the_probe_line_the_terminal_prints(
        self, report: tuple[str, str]
    ) -> None:
        page = _Tags()
        page.feed(report[0])
        text = " ".join(" ".join(page.text).split())
        [probe] = [line for line in report[1].splitlines() if line.startswith("Probe ")]
        assert probe in text and "sweeps = 4" in probe
        assert "move_to 2026-09-24T03:00:00Z" in text and "move_to 2026-09-25T02:03:06Z" in text
        assert "Fault rules (seed 7):" in text
        assert '{"action": "lost_ack", "job": "nightly", "run": 1, "attempt": 1}' in text

    def test_the_table_marks_injected_copies_only(self, clock: ManualClock) -> None:
        with Emulator(clock, transport=WsgiTransport(RecordingTarget())) as emulator:
            emulator.faults.add(action="duplicate", job="nightly", count=1)
            emulator.create_job(nightly_job())
            emulator.advance(timedelta(minutes=1))
            marked = [a.injected for a in emulator.attempts()]
        assert marked == [False, True]

    def test_report_is_for_scenarios_only(self, tmp_path: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "scheduler_emulator", "replay", "--attempts", "a.json",
             "--target", "http://127.0.0.1:9", "--report", str(tmp_path / "r.html")],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 2
        assert "--report applies to scenarios" in done.stderr


class TestTheReadModelTellsTheTruth:
    """An attempt reads as in flight until the clock passes its recorded end; duplicate
    deliveries are marked; next fire times are schedule times only."""

    @pytest.fixture
    def delayed(self, emulator: Emulator) -> Emulator:
        emulator.faults.add(action="delay", seconds=150)
        emulator.create_job(nightly_job(retryConfig={}))
        emulator.advance(timedelta(minutes=1))  # 02:00: sent, its answer is due at 02:02:30
        return emulator

    def test_a_last_attempt_in_flight_reads_at_its_own_start(self, emulator: Emulator) -> None:
        """A trial's ``jobs`` showed an in-flight attempt at the instant it was recorded, and
        ``attempts`` at the later one it left the threaded driver's queue at (its start)."""
        job = replace(
            emulator.create_job(nightly_job()),
            last_attempt_time=datetime(2026, 12, 4, 1, 57, 0, 177, tzinfo=UTC),
        )
        left = datetime(2026, 12, 4, 1, 57, 0, 502, tzinfo=UTC)
        going = Attempt(1, job.name, 1, 1, None, left, {"method": "POST", "url": "http://x/"})
        assert read_model.job_row(job, 1, last=going)["lastAttempt"]["time"] == iso(left)
        assert read_model.job_row(job, 1)["lastAttempt"]["time"] == iso(job.last_attempt_time)

    def test_an_attempt_ending_after_now_is_in_flight_everywhere(
        self, delayed: Emulator, client: Client
    ) -> None:
        [listed] = client.get("/_emulator/attempts").json["attempts"]
        assert (listed["code"], listed["endTime"], listed["responseStatus"]) == (None, None, None)
        [newest] = client.get("/_emulator/attempts?order=newest").json["attempts"]
        assert newest == listed == client.get(f"/_emulator/attempts/{listed['id']}").json
        [lane] = client.get("/_emulator/timeline").json["lanes"]
        [drawn] = lane["runs"][0]["attempts"]
        assert (drawn["code"], drawn["endTime"]) == (None, None)
        [run] = client.get("/_emulator/runs").json["runs"]
        assert run["attempts"][0]["code"] is None
        [row] = client.get("/_emulator/jobs").json["jobs"]
        assert (row["lastAttempt"]["code"], row["lastAttempt"]["time"]) == (
            None, listed["startTime"]
        )  # fmt: skip
        delayed.advance(timedelta(seconds=149))
        assert client.get("/_emulator/attempts").json["attempts"][0]["code"] is None
        delayed.advance(timedelta(seconds=1))  # 02:02:30: the answer is in
        [done] = client.get("/_emulator/attempts").json["attempts"]
        assert (done["code"], done["endTime"]) == ("OK", "2026-09-24T02:02:30Z")
        assert client.get("/_emulator/jobs").json["jobs"][0]["lastAttempt"]["code"] == "OK"
        [lane] = client.get("/_emulator/timeline").json["lanes"]
        assert lane["runs"][0]["attempts"][0]["code"] == "OK"

    def test_a_deleted_jobs_pending_retry_ends_its_run(
        self, emulator: Emulator, client: Client, target: RecordingTarget
    ) -> None:
        """A trial's run of a deleted job read "retrying", due in the past, for good."""
        target.status = 500
        emulator.create_job(nightly_job(retryConfig={"retryCount": 3}))
        emulator.advance(timedelta(minutes=1, seconds=1))  # 02:00 failed, retry at 02:00:05
        emulator.delete_job("nightly")
        emulator.advance(timedelta(minutes=1))
        [run] = client.get("/_emulator/runs").json["runs"]
        assert (run["state"], run["gaveUp"], run["nextAttemptTime"]) == (
            "gave up", "job deleted", None
        )  # fmt: skip
        assert client.get("/_emulator/runs?state=in-progress").json["runs"] == []
        assert client.get("/_emulator/runs?state=gave up").json["runs"] == [run]  # as it reads
        assert len(target.requests) == 1

    def test_an_attempt_in_flight_as_its_job_is_deleted_still_completes(
        self, emulator: Emulator, client: Client
    ) -> None:
        emulator.faults.add(action="delay", seconds=30)  # in flight until 02:00:30
        emulator.create_job(nightly_job(retryConfig={"retryCount": 3}))
        emulator.advance(timedelta(minutes=1, seconds=1))
        emulator.delete_job("nightly")
        [going] = client.get("/_emulator/runs").json["runs"]
        assert (going["state"], going["gaveUp"]) == ("in progress", None)
        emulator.advance(timedelta(minutes=1))
        [run] = client.get("/_emulator/runs").json["runs"]
        assert (run["state"], run["gaveUp"], run["attempts"][0]["code"]) == (
            "succeeded", None, "OK"
        )  # fmt: skip

    @pytest.mark.parametrize(
        ("rule", "expected"),
        [
            ({"action": "duplicate", "count": 1}, [False, True]),
            ({"action": "lost_ack", "attempt": 1}, [False, True]),
        ],
        ids=["injected-copy", "after-a-lost-ack"],
    )
    def test_duplicate_deliveries_are_marked(
        self,
        emulator: Emulator,
        client: Client,
        rule: dict[str, Any],
        expected: list[bool],
    ) -> None:
        emulator.faults.add(**rule)
        emulator.create_job(nightly_job(retryConfig={"retryCount": 1}))
        emulator.advance(timedelta(minutes=2))
        [lane] = client.get("/_emulator/timeline").json["lanes"]
        [run] = lane["runs"]
        assert [a["duplicate"] for a in run["attempts"]] == expected
        [listed] = client.get("/_emulator/runs").json["runs"]
        assert [a["duplicate"] for a in listed["attempts"]] == expected

    def test_next_fire_times_are_schedule_times_not_a_pending_retry(
        self, emulator: Emulator, client: Client, target: RecordingTarget
    ) -> None:
        target.status = 503
        emulator.create_job(nightly_job(retryConfig={"retryCount": 3, "minBackoffDuration": "60s"}))
        emulator.advance(timedelta(minutes=1))  # 02:00 failed; a retry is due at 02:01
        assert emulator.get_job("nightly").schedule_time == datetime(2026, 9, 24, 2, 1, tzinfo=UTC)
        [row] = client.get("/_emulator/jobs?fireTimes=2").json["jobs"]
        assert row["nextFireTimes"] == ["2026-09-25T02:00:00Z", "2026-09-26T02:00:00Z"]
        assert row["nextAttemptTime"] == "2026-09-24T02:01:00Z"
        assert views.job_rows([row])[0][5] == "retry 2026-09-24T02:01:00Z"  # the NEXT column
        target.status = 200
        emulator.advance(timedelta(minutes=1))  # the retry succeeded: the next fire time again
        [row] = client.get("/_emulator/jobs").json["jobs"]
        assert row["nextAttemptTime"] is None
        assert views.job_rows([row])[0][5] == "2026-09-25T02:00:00Z"

    def test_a_forced_runs_pending_retry_is_shown_beside_the_next_fire_time(
        self, emulator: Emulator, client: Client, target: RecordingTarget
    ) -> None:
        """A trial: after a failed "Run now", ``jobs`` showed the next fire time while
        ``runs --in-progress`` and the dashboard showed the retry; then (trial 170) the forced
        run's retry hid the next fire time, which goes on beside it."""
        target.status = 503
        emulator.create_job(nightly_job(retryConfig={"retryCount": 3, "minBackoffDuration": "60s"}))
        emulator.run_job("nightly")  # 01:59: failed, its retry is due at 02:00
        [row] = client.get("/_emulator/jobs").json["jobs"]
        assert (row["nextAttemptTime"], row["forcedRunRetryTime"]) == (None, "2026-09-24T02:00:00Z")
        assert views.job_rows([row])[0][5] == (
            "2026-09-24T02:00:00Z; forced run's retry 2026-09-24T02:00:00Z"
        )

    def test_a_finished_run_keeps_the_limits_it_ended_under(
        self, emulator: Emulator, client: Client, target: RecordingTarget
    ) -> None:
        """A trial raised a job's retryCount and its finished runs read '1/3 gave up (job
        paused)': the read model took the limits from the job's current config."""
        target.status = 503
        emulator.create_job(nightly_job(retryConfig={}))
        twice = {"retryCount": 1, "minBackoffDuration": "10s"}
        emulator.create_job(nightly_job(name="twice", retryConfig=twice))
        emulator.move_to(datetime(2026, 9, 24, 2, 1, tzinfo=UTC))  # both 02:00 runs gave up

        def ended() -> list[tuple[str, str, int]]:
            runs = client.get("/_emulator/runs").json["runs"]
            return sorted((r["job"].rsplit("/")[-1], r["gaveUp"], r["maxAttempts"]) for r in runs)

        before = ended()
        assert before == [("nightly", "no retries", 1), ("twice", "retry count", 2)]
        for job in ("nightly", "twice"):
            emulator.update_job(job, {"retryConfig": {"retryCount": 3}}, "retryConfig")
        assert ended() == before
        [lane, _] = client.get("/_emulator/timeline").json["lanes"]
        assert (lane["runs"][0]["gaveUp"], lane["runs"][0]["maxAttempts"]) == ("no retries", 1)

    @pytest.mark.parametrize(("retry", "most"), [({}, 2), ({"retryCount": 3}, 5)])
    def test_a_retry_beyond_the_config_raises_the_most_attempts(
        self, emulator: Emulator, client: Client, retry: dict[str, int], most: int
    ) -> None:
        """A trial's run retried after a restart with no retries configured read '2/1 gave up':
        a retry beyond the config (here a lost acknowledgement's) counts in ``maxAttempts``,
        while it is pending too; and trial 80's read "of at most 5" while it went on and "of at
        most 4" once its second attempt had succeeded, the earned retry not used."""
        emulator.faults.add(action="lost_ack", attempt=1)
        emulator.create_job(nightly_job(retryConfig=retry))

        def run() -> tuple[str, int, int]:
            [listed] = client.get("/_emulator/runs").json["runs"]
            return listed["state"], len(listed["attempts"]), listed["maxAttempts"]

        emulator.move_to(datetime(2026, 9, 24, 2, 0, tzinfo=UTC))
        assert run() == ("retrying", 1, most)
        emulator.move_to(datetime(2026, 9, 24, 2, 1, tzinfo=UTC))
        assert run() == ("succeeded", 2, most)

    def test_a_retry_due_at_the_next_fire_time_is_shown_as_a_retry(
        self, emulator: Emulator, client: Client, target: RecordingTarget
    ) -> None:
        """A trial's every-minute job read as if 10:07 would fire, though its run's retry held
        that minute (10:07 was then recorded as skipped)."""
        target.status = 503
        retry = {"retryCount": 3, "minBackoffDuration": "60s"}
        emulator.create_job(nightly_job(schedule="* * * * *", retryConfig=retry))
        emulator.move_to(datetime(2026, 9, 24, 2, 0, 30, tzinfo=UTC))  # 02:00 failed: retry 02:01
        [row] = client.get("/_emulator/jobs?fireTimes=1").json["jobs"]
        assert (row["nextAttemptTime"], row["nextFireTimes"]) == ("2026-09-24T02:01:00Z", [
            "2026-09-24T02:01:00Z"
        ])  # fmt: skip
        assert views.job_rows([row])[0][5] == "retry 2026-09-24T02:01:00Z"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestTerminalViewsInProcess:
    """``attempts`` and ``skipped`` against the read model served on a local port."""

    @pytest.fixture
    def served(self, clock: ManualClock) -> Iterator[tuple[Emulator, str]]:
        long_answer = ("the ledger is locked by another writer; " * 6).encode()
        with Emulator(clock, transport=WsgiTransport(answering(503, long_answer))) as emulator:
            emulator.create_job(nightly_job(retryConfig={}))
            emulator.advance(timedelta(minutes=1))
            with serving(create_app(emulator)) as base:  # type: ignore[arg-type]
                yield emulator, base.rsplit(":", 1)[1]

    def run(self, out: io.StringIO, port: str, *args: str) -> int:
        from scheduler_emulator.tools import cli, views

        parser = cli.build_parser()
        parsed = parser.parse_args([args[0], "--port", port, *args[1:]])
        command = views.cmd_skipped if args[0] == "skipped" else views.cmd_attempts
        return command(parsed, out)

    def test_reason_wraps_within_120_columns_and_wide_keeps_one_line(
        self, served: tuple[Emulator, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _, port = served
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setenv("TERM", "xterm")
        piped, terminal, wide = io.StringIO(), Terminal(), Terminal()
        assert self.run(piped, port, "attempts") == 0
        assert self.run(terminal, port, "attempts") == 0
        assert self.run(wide, port, "attempts", "--wide") == 0
        answer = " ".join(("the ledger is locked by another writer; " * 6).split())
        cut = answer[:159]  # a reason is at most 160 characters, cut between words; --json has
        full = cut[: cut.rfind(" ")] + "…"  # the answer
        lines = piped.getvalue().splitlines()
        assert max(len(line) for line in lines) <= 120 and len(lines) > 2
        column = lines[0].index("REASON")
        assert all(line[:column].strip() == "" for line in lines[2:])  # under REASON
        shown = "".join(" ".join(line[column:] for line in lines[1:]).split())
        assert shown == "".join(full.split())  # wrapped at spaces or after punctuation
        assert "\033[31mUNAVAILABLE" in terminal.getvalue()  # a failure, red on a terminal
        assert "\033[" not in piped.getvalue()
        [_, one] = wide.getvalue().splitlines()
        assert one.endswith(full)

    def test_a_state_is_red_only_when_it_went_wrong(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Trial 122: every job's ENABLED (and an execution's SUCCEEDED) read red."""
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setenv("TERM", "xterm")
        paint = views.painter(Terminal())
        assert paint is not None
        colours = {word: paint("STATE", word)[:5] for word in (
            "ENABLED", "PAUSED", "SUCCEEDED", "succeeded", "RUNNING", "gave up", "FAILED"
        )}  # fmt: skip
        assert colours == {"ENABLED": "ENABL", "PAUSED": "\033[33m", "SUCCEEDED": "\033[32m",
                           "succeeded": "\033[32m", "RUNNING": "\033[33m", "gave up": "\033[31m",
                           "FAILED": "\033[31m"}  # fmt: skip

    def test_no_color_turns_the_colours_off(
        self, served: tuple[Emulator, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _, port = served
        monkeypatch.setenv("NO_COLOR", "1")
        terminal = Terminal()
        assert self.run(terminal, port, "attempts") == 0
        assert "\033[" not in terminal.getvalue()

    def test_json_prints_one_record_per_line(self, served: tuple[Emulator, str]) -> None:
        _, port = served
        out = io.StringIO()
        assert self.run(out, port, "attempts", "--json") == 0
        [line] = out.getvalue().splitlines()
        record = json.loads(line)
        assert record["code"] == "UNAVAILABLE" and record["responseStatus"] == 503
        assert record["responseExcerpt"].startswith("the ledger is locked")

    def test_skipped_runs_are_listed_with_their_reason(self, served: tuple[Emulator, str]) -> None:
        emulator, port = served
        out = io.StringIO()
        assert self.run(out, port, "skipped") == 0
        assert out.getvalue() == "(no skipped runs)\n"
        nominal = datetime(2026, 9, 24, 10, tzinfo=UTC)
        emulator.store.add_skipped(
            SkippedRun(emulator.job_name("nightly"), "2026-09-24T10:00:00Z", nominal, nominal)
        )
        out = io.StringIO()
        assert self.run(out, port, "skipped", "--job", "nightly") == 0
        header, *lines = out.getvalue().splitlines()  # the REASON may wrap: one row
        row = " ".join(line.strip() for line in lines)
        assert header.split()[:4] == ["SCHEDULED", "JOB", "RECORDED", "AT"]
        assert row.split()[:3] == ["2026-09-24T10:00:00Z", "nightly", "2026-09-24T10:00:00.000Z"]
        assert row.endswith("RUN_STILL_GOING: the previous run was still going")
