"""Attempts are paged and retained: the history is read a page at a time and cannot grow without
bound (issue: ``/_emulator/attempts`` built the whole history in memory)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from werkzeug.test import Client

from pytest_plugin.scheduler import CloudScheduler
from scheduler_emulator import Emulator, ManualClock, WsgiTransport
from scheduler_emulator.domain.attempts import Attempt, Run
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.domain.resources import RetryConfig
from scheduler_emulator.runtime.storage.data_file import Row
from scheduler_emulator.runtime.storage.read_model import run_state, runs_page
from scheduler_emulator.runtime.storage.store import Store
from scheduler_emulator.server.server import create_app
from scheduler_emulator.tools.cli import build_parser
from tests.daemon import running_daemon
from tests.server.test_bad_input import JOBS
from tests.support import RecordingTarget, nightly_job

START = datetime(2026, 9, 24, 0, 0, 30, tzinfo=UTC)
JOB_A = "projects/my-project/locations/us-central1/jobs/a"


@pytest.fixture
def busy(target: RecordingTarget) -> Emulator:
    emulator = Emulator(ManualClock(START), transport=WsgiTransport(target))
    emulator.create_job(nightly_job(name="a", schedule="* * * * *", retryConfig={}))
    emulator.create_job(nightly_job(name="b", schedule="*/2 * * * *", retryConfig={}))
    emulator.advance(timedelta(minutes=10))  # a: 10 attempts, b: 5
    yield emulator
    emulator.close()


def test_pages_walk_the_whole_history_in_start_order(busy: Emulator) -> None:
    seen, token = [], ""
    while True:
        page, token = busy.attempts_page(page_size=4, page_token=token)
        assert len(page) <= 4
        seen.extend(page)
        if not token:
            break
    assert [a.id for a in seen] == [a.id for a in busy.attempts()]
    assert len(seen) == 15


def test_filters_by_job_run_and_time_window(busy: Emulator) -> None:
    page, token = busy.attempts_page("b")
    assert token == "" and {a.job_id for a in page} == {"b"} and len(page) == 5
    [one] = busy.attempts_page(run_id=page[0].run_id)[0]
    assert one.id == page[0].id
    window, _ = busy.attempts_page(
        "a", start_after=START + timedelta(minutes=3), start_before=START + timedelta(minutes=5)
    )
    assert [a.schedule_time for a in window] == ["2026-09-24T00:04:00Z", "2026-09-24T00:05:00Z"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"page_size": 0}, "pageSize"),
        ({"page_size": 1001}, "pageSize"),
        ({"page_token": "²"}, "pageToken"),
        ({"page_token": "9" * 5000}, "pageToken"),
        ({"page_token": "-1"}, "pageToken"),
    ],
)
def test_bad_paging_input_names_the_field(busy: Emulator, fields: dict, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        busy.attempts_page(**fields)
    assert info.value.violations[0].field == field


def test_retention_keeps_the_newest_attempts_and_those_in_flight(target: RecordingTarget) -> None:
    store = Store(":memory:", retain_attempts=50)
    emulator = Emulator(ManualClock(START), store=store, transport=WsgiTransport(target))
    emulator.create_job(nightly_job(name="a", schedule="* * * * *", retryConfig={}))
    emulator.advance(timedelta(minutes=2500))  # 2,500 attempts, retention every 1,000
    kept = emulator.attempts()
    assert len(kept) <= 50 + 1000
    assert kept[-1].schedule_time == "2026-09-25T17:40:00Z"  # the newest is always there
    assert len(target.requests) == 2500
    emulator.close()


def fill_answered(store: Store, count: int, first_run: int = 1) -> None:
    """Record ``count`` finished attempts whose target answered 4 KiB, in one batch."""
    with store.batch():
        for run_id in range(first_run, first_run + count):
            attempt = Attempt(0, JOB_A, run_id, 1, None, START, {"method": "POST"})
            store.add_attempt(attempt)
            attempt.end_time, attempt.code, attempt.response_excerpt = START, "INTERNAL", "x" * 4096
            store.finish_attempt(attempt)


def test_the_database_stays_within_retain_megabytes(tmp_path: Path) -> None:
    """4 KiB answers fill about 5 MB per 1,000 attempts: 8,000 would take 40 MB; the bound keeps
    the file within 10 MB plus what one trim interval (1,000 attempts) adds."""
    store = Store(tmp_path / "db", retain_megabytes=10)
    fill_answered(store, 8_000)
    store.close()
    assert (tmp_path / "db").stat().st_size <= 16_000_000
    kept = Store(tmp_path / "db", retain_megabytes=10)
    ids = [a.id for a in kept.attempts()]
    assert ids[-1] == 8_000 and ids[0] > 1_000  # the oldest dropped first
    kept.close()


def test_a_lower_bound_trims_an_existing_history_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", retain_megabytes=None)
    fill_answered(store, 3_000)
    store.close()
    smaller = Store(tmp_path / "db", retain_megabytes=5)
    [(pages, free)] = smaller.query("SELECT * FROM pragma_page_count, pragma_freelist_count")
    assert (pages - free) * 4096 <= 5_000_000
    assert smaller.attempts()[-1].id == 3_000
    smaller.close()


def test_runs_go_with_their_attempts_under_the_byte_bound(tmp_path: Path) -> None:
    """Trial 107: the bound dropped attempts only, so the runs table grew past it (30 MB for a
    1 MB bound) and every run whose attempts were gone read "gave up", 0 tries."""
    target = RecordingTarget(body=b"x" * 4096)
    store = Store(tmp_path / "db", retain_megabytes=1)
    emulator = Emulator(ManualClock(START), store=store, transport=WsgiTransport(target))
    for name in "abcde":
        emulator.create_job(nightly_job(name=name, schedule="* * * * *", retryConfig={}))
    emulator.advance(timedelta(minutes=500))  # 2,500 attempts of 4 KiB answers: trimmed
    attempts = emulator.attempts()
    [(runs,)] = store.query("SELECT COUNT(*) FROM runs")
    assert len(attempts) < 1_500 and runs <= len(attempts) + 5  # (+ runs going on)
    page, _ = runs_page(store, page_size=1_000, now=emulator.now(), config=emulator.job_config)
    assert len(page) == runs and all(run["attempts"] for run in page)
    assert not [run for run in page if run["state"] == "gave up"]
    emulator.close()


@pytest.mark.parametrize("bound", [{"retain_attempts": 5}, {"retain_megabytes": 1}])
def test_a_trim_drops_finished_runs_whole_and_keeps_a_run_still_going(
    tmp_path: Path, bound: dict[str, int]
) -> None:
    """Trial 117: a trim left runs whose attempts were gone ("0/1 gave up") or in part ("1/4
    gave up … started 61 s late" for a run of 4 tries that started on time)."""
    store = Store(tmp_path / "db", retain_megabytes=None)

    def attempt(run_id: int, number: int) -> None:
        made = store.add_attempt(Attempt(0, JOB_A, run_id, number, None, START, {}))
        made.end_time, made.code, made.response_excerpt = START, "INTERNAL", "x" * 4096
        store.finish_attempt(made)

    store.add_run(Run(1, JOB_A, None, START, attempts=1))  # still going: a retry is due
    attempt(1, 1)
    for run_id in range(2, 400):  # a 4-try run's first tries among the oldest attempts
        store.add_run(Run(run_id, JOB_A, None, START))
        for number in (1, 2, 3, 4) if run_id == 300 else (1,):
            attempt(run_id, number)
        store.save_run(Run(run_id, JOB_A, None, START, attempts=1, finished=True))
    attempt(300, 5)  # … and its last try among the newest
    store.close()
    trimmed = Store(tmp_path / "db", **bound)
    kept = trimmed.query("SELECT run_id, COUNT(*) FROM attempts GROUP BY run_id")
    assert kept[0] == (1, 1) and len(kept) < 399
    assert dict(kept).get(300, 5) == 5  # whole, or not at all
    [(runs,)] = trimmed.query("SELECT COUNT(*) FROM runs")
    assert runs == len(kept)  # no run without its attempts
    trimmed.close()


def test_in_flight_attempts_are_kept_whatever_the_bound() -> None:
    store = Store(":memory:", retain_megabytes=1)
    with store.batch():
        for run_id in range(1, 1001):  # in flight, with a large request each
            store.add_attempt(Attempt(0, JOB_A, run_id, 1, None, START, {"body": "y" * 4096}))
    assert len(store.attempts(unfinished=True)) == 1000
    store.close()


# ------------------------------------------------------------------ GET /_emulator/attempts


@pytest.fixture
def client(busy: Emulator) -> Client:
    return Client(create_app(busy))


def test_the_endpoint_pages_with_next_page_tokens(client: Client, busy: Emulator) -> None:
    first = client.get("/_emulator/attempts?pageSize=4").json
    assert len(first["attempts"]) == 4 and first["nextPageToken"]
    seen, query = list(first["attempts"]), {"pageSize": 4, "pageToken": first["nextPageToken"]}
    while True:
        answer = client.get("/_emulator/attempts", query_string=query).json
        seen.extend(answer["attempts"])
        if "nextPageToken" not in answer:
            break
        query["pageToken"] = answer["nextPageToken"]
    assert [a["runId"] for a in seen] == [a.run_id for a in busy.attempts()]


def test_the_default_page_is_100_and_the_largest_1000(client: Client, busy: Emulator) -> None:
    busy.advance(timedelta(minutes=100))  # a: 110 attempts, b: 55
    assert len(client.get("/_emulator/attempts").json["attempts"]) == 100
    assert len(client.get("/_emulator/attempts?pageSize=0").json["attempts"]) == 100
    whole = client.get("/_emulator/attempts?pageSize=1000").json
    assert len(whole["attempts"]) == 165 and "nextPageToken" not in whole


def test_the_endpoint_filters_by_job_run_and_start_time(client: Client, busy: Emulator) -> None:
    b = client.get("/_emulator/attempts?job=b").json["attempts"]
    assert {a["job"].rsplit("/", 1)[1] for a in b} == {"b"} and len(b) == 5
    [one] = client.get(f"/_emulator/attempts?run={b[0]['runId']}").json["attempts"]
    assert one == b[0]
    window = client.get(
        "/_emulator/attempts",
        query_string={
            "job": "a",
            "startAfter": "2026-09-24T00:03:30Z",
            "startBefore": "2026-09-24T02:05:30+02:00",
        },
    ).json["attempts"]
    assert [a["scheduleTime"] for a in window] == ["2026-09-24T00:04:00Z", "2026-09-24T00:05:00Z"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"pageSize": "1001"}, "pageSize"),
        ({"pageSize": "-1"}, "pageSize"),
        ({"pageSize": "ten"}, "pageSize"),
        ({"pageSize": "9" * 5000}, "pageSize"),
        ({"pageToken": "abc"}, "pageToken"),
        ({"pageToken": "9" * 5000}, "pageToken"),
        ({"run": "0"}, "run"),
        ({"run": "x"}, "run"),
        ({"startAfter": "yesterday"}, "startAfter"),
        ({"startBefore": "2026-09-24T00:00:00"}, "startBefore"),  # no offset
    ],
)
def test_bad_query_values_are_400_naming_the_parameter(
    client: Client, query: dict[str, str], field: str
) -> None:
    response = client.get("/_emulator/attempts", query_string=query)
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.json["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["fieldViolations"][0]["field"] == field
    assert field in error["message"]  # the message names it too, not only the details


def test_an_unknown_job_is_still_404(client: Client) -> None:
    response = client.get("/_emulator/attempts?job=nope")
    assert (response.status_code, response.json["error"]["status"]) == (404, "NOT_FOUND")


# ------------------------------------------------------------------ the fixtures


def test_cloud_scheduler_pages_and_attempts_is_the_whole_history() -> None:
    scheduler = CloudScheduler(START)
    try:
        scheduler.mount("http://orders.test", RecordingTarget())
        scheduler.create_job(
            name="a", schedule="* * * * *", http_target={"uri": "http://orders.test/a"}
        )
        scheduler.advance(timedelta(minutes=150))
        page, token = scheduler.attempts_page("a", page_size=100)
        rest, last = scheduler.attempts_page("a", page_size=100, page_token=token)
        assert (len(page), len(rest), last) == (100, 50, "")
        assert len(scheduler.attempts("a")) == 150
    finally:
        scheduler.close()


def test_the_live_daemon_pages_and_keeps_retain_attempts() -> None:
    with running_daemon(
        "--in-memory", "--clock", "manual", "--start", "2026-09-24T00:00:30Z",
        "--retain-attempts", "10",
    ) as daemon:  # fmt: skip
        job = nightly_job(
            name=JOBS.removeprefix("/v1/") + "/a", schedule="* * * * *", retryConfig={}
        )
        job["httpTarget"]["uri"] = "http://127.0.0.1:9/refused"  # fails at once: UNAVAILABLE
        response = daemon.session.post(daemon.url + JOBS, json=job, timeout=30)
        assert response.status_code == 200, response.text
        daemon.advance(timedelta(minutes=1500))  # trimmed at the 1,000th attempt
        page, token = daemon.attempts_page("a", page_size=200)
        assert len(page) == 200 and token
        kept = daemon.attempts("a")
        assert 10 <= len(kept) <= 10 + 1000
        assert kept[-1]["scheduleTime"] == "2026-09-25T01:00:00Z"  # the newest is kept
        window, _ = daemon.attempts_page(
            "a", start_after=datetime(2026, 9, 25, 0, 59, tzinfo=UTC), run_id=page[0]["runId"]
        )
        assert window == []
        with pytest.raises(AssertionError, match="pageSize"):
            daemon.attempts_page(page_size=1001)


def test_the_live_daemon_reads_every_page_of_skipped_times() -> None:
    with running_daemon(
        "--in-memory", "--clock", "manual", "--start", "2026-09-24T00:00:30Z"
    ) as daemon:  # fmt: skip
        # Fails at once, then waits an hour for each of 5 retries: each run lasts about 5 h,
        # and every minute meanwhile is skipped (still running).
        retry = {"retryCount": 5, "minBackoffDuration": "3600s", "maxDoublings": 0}
        job = nightly_job(
            name=JOBS.removeprefix("/v1/") + "/a", schedule="* * * * *", retryConfig=retry
        )
        job["httpTarget"]["uri"] = "http://127.0.0.1:9/refused"
        response = daemon.session.post(daemon.url + JOBS, json=job, timeout=30)
        assert response.status_code == 200, response.text
        daemon.advance(timedelta(hours=24))
        answer = daemon._admin.get("/_emulator/skipped")
        first = answer["skipped"]
        assert len(first) == 100 and answer["nextPageToken"]  # the default page
        skipped = daemon.skipped("a")
        assert len(skipped) > 1000  # more than one page of 1000
        times = [s["scheduleTime"] for s in skipped]
        assert times == sorted(set(times))  # each once, in order
        assert times[:100] == [s["scheduleTime"] for s in first]


def test_retain_attempts_is_0_or_a_positive_number() -> None:
    parser = build_parser()
    assert parser.parse_args(["start"]).retain_attempts == 100_000
    assert parser.parse_args(["start", "--retain-attempts", "0"]).retain_attempts == 0
    for bad in ("-1", "1.5", "many"):
        with pytest.raises(SystemExit) as info:
            parser.parse_args(["start", "--retain-attempts", bad])
        assert info.value.code == 2


def test_retain_megabytes_is_a_positive_number() -> None:
    parser = build_parser()
    assert parser.parse_args(["start"]).retain_megabytes == 200
    assert parser.parse_args(["start", "--retain-megabytes", "50"]).retain_megabytes == 50
    for bad in ("0", "-1", "1.5", "many"):
        with pytest.raises(SystemExit) as info:
            parser.parse_args(["start", "--retain-megabytes", bad])
        assert info.value.code == 2


@pytest.mark.parametrize(
    ("retry", "most"),
    [
        (RetryConfig(), 1),  # no retries: one attempt (the runs table showed "1", not "1/1")
        (RetryConfig(retry_count=3), 4),
        (RetryConfig(retry_count=3, max_retry_duration=timedelta(minutes=5)), None),
        (RetryConfig(max_retry_duration=timedelta(minutes=5)), None),  # the duration bounds it
    ],
)
def test_a_runs_most_attempts_follow_its_retry_config(retry: RetryConfig, most: int | None) -> None:
    job = SimpleNamespace(retry_config=retry)
    row = (1, JOB_A, None, None, 1, None, "2026-09-24T00:01:00+00:00", None, None, 0, 0)
    ended = {"attempt": 1, "code": "OK", "endTime": "2026-09-24T00:01:01+00:00"}
    state = run_state(Row("emulator.db", "runs", JOB_A), row, [ended], lambda name: job)  # type: ignore[arg-type,return-value]
    assert (state["state"], state["maxAttempts"]) == ("succeeded", most)
    # a run that earned a retry beyond its config (a restart, a lost ack): one more, while going
    failed = {"attempt": 1, "code": "UNAVAILABLE", "endTime": "2026-09-24T00:01:01+00:00"}
    going = (*row[:4], 0, "2026-09-24T00:01:30+00:00", *row[6:9], 1, 0)
    state = run_state(Row("emulator.db", "runs", JOB_A), going, [failed], lambda name: job)  # type: ignore[arg-type,return-value]
    assert (state["state"], state["maxAttempts"]) == (
        "retrying",
        None if most is None else most + 1,
    )
    # App Engine 503s, not counted against the retry count, add to it (trial 186)
    uncounted = (*going[:10], 2)
    state = run_state(Row("emulator.db", "runs", JOB_A), uncounted, [failed], lambda name: job)  # type: ignore[arg-type,return-value]
    assert state["maxAttempts"] == (None if most is None else most + 3)
