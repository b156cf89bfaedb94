"""The run-once guard's parts that need no shared store: decisions, keys, arguments, SQLite.

The pure claim decision as a table; the key; what the constructor and the decorators refuse;
SQLite specifics (memory, WAL, the busy timeout, forgetting expired records); the lazy imports.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_plugin.facades import FunctionTimers
from scheduler_emulator import ManualClock
from scheduler_emulator.service import (
    ClaimOutcome,
    FirestoreRunStore,
    MissingRunHeadersError,
    RunInProgressError,
    RunOnceGuard,
    RunRecord,
    RunRefusedError,
    RunStatus,
    RunStore,
    ScheduledRun,
    SqliteRunStore,
    TimerRequest,
    TimerRouter,
)
from scheduler_emulator.service.errors import TargetError, TimerClockError
from scheduler_emulator.service.guard_stores import Claim, decide_claim
from scheduler_emulator.wire import NaiveDatetimeError

from .guard_support import SCHEDULE_TIME, scheduler_headers

NOW = datetime(2026, 9, 24, 2, 0, 5, tzinfo=UTC)
LEASE = timedelta(minutes=5)


def record(status: RunStatus, lease_left: timedelta) -> RunRecord:
    """A record whose lease runs out ``lease_left`` after :data:`NOW`."""
    return RunRecord(status, "a" * 32, NOW + lease_left, NOW + timedelta(days=1))


class TestDecideClaim:
    @pytest.mark.parametrize(
        ("existing", "outcome"),
        [
            pytest.param(None, ClaimOutcome.CLAIMED, id="no-record"),
            pytest.param(
                record(RunStatus.COMPLETED, LEASE), ClaimOutcome.COMPLETED, id="completed"
            ),
            pytest.param(
                record(RunStatus.COMPLETED, -LEASE),
                ClaimOutcome.COMPLETED,
                id="completed-lease-over",
            ),
            pytest.param(
                record(RunStatus.IN_PROGRESS, LEASE), ClaimOutcome.IN_PROGRESS, id="live-lease"
            ),
            pytest.param(
                record(RunStatus.IN_PROGRESS, timedelta(microseconds=1)),
                ClaimOutcome.IN_PROGRESS,
                id="lease-one-microsecond-left",
            ),
            pytest.param(
                record(RunStatus.IN_PROGRESS, timedelta(0)),
                ClaimOutcome.CLAIMED,
                id="lease-expires-now",
            ),
            pytest.param(
                record(RunStatus.IN_PROGRESS, -LEASE), ClaimOutcome.CLAIMED, id="lease-expired"
            ),
        ],
    )
    def test_the_claim_decision_follows_status_and_lease(
        self, existing: RunRecord | None, outcome: ClaimOutcome
    ) -> None:
        assert decide_claim(existing, NOW) is outcome


class TestScheduledRun:
    def test_the_key_is_the_sha256_hex_of_job_slash_schedule_time(self) -> None:
        run = ScheduledRun("nightly", SCHEDULE_TIME)

        assert run.text == f"nightly/{SCHEDULE_TIME}"
        assert run.key == hashlib.sha256(f"nightly/{SCHEDULE_TIME}".encode()).hexdigest()
        assert len(run.key) == 64

    def test_the_scope_prefixes_the_hashed_text(self) -> None:
        run = ScheduledRun("nightly", SCHEDULE_TIME, "my-project/us-central1")

        assert run.text == f"my-project/us-central1/nightly/{SCHEDULE_TIME}"
        assert str(run) == f"Job 'nightly' (my-project/us-central1) run {SCHEDULE_TIME}"

    def test_the_raw_schedule_time_is_hashed_as_sent(self) -> None:
        plain = ScheduledRun("nightly", "2026-09-24T02:00:00Z")
        with_millis = ScheduledRun("nightly", "2026-09-24T02:00:00.000Z")

        assert plain.key != with_millis.key

    def test_headers_may_come_as_pairs(self) -> None:
        pairs = list(scheduler_headers("projects/my-project/locations/l/jobs/nightly").items())

        assert ScheduledRun.from_headers(pairs) == ScheduledRun("nightly", SCHEDULE_TIME)

    def test_both_missing_headers_are_named(self) -> None:
        with pytest.raises(MissingRunHeadersError) as refused:
            ScheduledRun.from_headers({})

        assert str(refused.value).startswith(
            "The X-CloudScheduler-JobName and X-CloudScheduler-ScheduleTime headers are missing"
        )
        assert isinstance(refused.value, TargetError)


class TestGuardArguments:
    def test_the_default_store_is_sqlite_in_memory(self) -> None:
        guard = RunOnceGuard()

        assert isinstance(guard.store, SqliteRunStore) and guard.store.in_memory
        assert (guard.lease, guard.retention) == (timedelta(minutes=5), timedelta(days=1))

    def test_scope_loses_the_slashes_at_its_ends(self) -> None:
        guard = RunOnceGuard(scope="/my-project/us-central1/")

        assert guard.scope == "my-project/us-central1"

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            pytest.param({"store": object()}, TypeError, "is not a run store", id="store"),
            pytest.param({"lease": 300}, TypeError, "pass a timedelta", id="lease-number"),
            pytest.param({"lease": timedelta(0)}, ValueError, "not positive", id="lease-zero"),
            pytest.param(
                {"lease": timedelta(hours=2), "retention": timedelta(hours=1)},
                ValueError,
                "shorter than lease",
                id="retention-under-lease",
            ),
            pytest.param({"scope": " / "}, ValueError, "blank", id="blank-scope"),
        ],
    )
    def test_bad_arguments_are_refused_saying_what_to_pass(
        self, kwargs: dict[str, Any], error: type[Exception], match: str
    ) -> None:
        with pytest.raises(error, match=match):
            RunOnceGuard(**kwargs)

    def test_a_clock_returning_a_naive_datetime_is_an_error(self) -> None:
        guard = RunOnceGuard(clock=lambda: datetime(2026, 9, 24, 2, 0))

        with pytest.raises(
            NaiveDatetimeError, match=r"clock returned 2026-09-24T02:00:00 is naive"
        ):
            guard.claim(scheduler_headers())

    def test_a_clock_returning_no_datetime_is_an_error(self) -> None:
        guard = RunOnceGuard(clock=lambda: "02:00")  # type: ignore[arg-type,return-value]

        with pytest.raises(TimerClockError, match=r"aware datetime, such as datetime.now\(UTC\)"):
            guard.claim(scheduler_headers())

    def test_a_clock_in_another_zone_is_read_as_utc(self) -> None:
        pacific = timezone(timedelta(hours=-7))
        guard = RunOnceGuard(clock=lambda: datetime(2026, 9, 23, 19, 0, 5, tzinfo=pacific))

        attempt = guard.claim(scheduler_headers())

        assert attempt.claim.record.lease_expires == NOW + LEASE
        assert attempt.claim.record.lease_expires.tzinfo is UTC

    def test_the_base_refusal_answers_its_status_as_a_problem(self) -> None:
        response = RunRefusedError("refused").response()

        assert (response.status, response.body) == (
            400,
            b'{"title":"Bad Request","status":400,"detail":"refused"}',
        )


class BrokenFinish:
    """A store whose claims work and whose finishes fail (Firestore down after the work)."""

    def __init__(self) -> None:
        self.inner = SqliteRunStore()

    def claim(self, key: str, record: RunRecord, now: datetime) -> Any:
        return self.inner.claim(key, record, now)

    def finish(self, key: str, attempt_id: str, *, succeeded: bool) -> bool:
        raise OSError("the store is unavailable")

    def get(self, key: str) -> RunRecord | None:
        return self.inner.get(key)


class TestFinishing:
    def test_a_store_failure_after_successful_work_is_logged_not_raised(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        guard = RunOnceGuard(BrokenFinish())

        result = guard.run(scheduler_headers(), lambda: "done")

        assert (result.ran, result.value) == (True, "done")
        [error] = [r for r in caplog.records if r.levelname == "ERROR"]
        assert "completed in attempt" in error.getMessage()
        assert "could not record that" in error.getMessage()
        assert error.exc_info is not None and isinstance(error.exc_info[1], OSError)

    def test_a_store_failure_after_failed_work_re_raises_the_works_exception(self) -> None:
        guard = RunOnceGuard(BrokenFinish())
        boom = ValueError("the work failed")

        def work() -> None:
            raise boom

        with pytest.raises(ValueError) as raised:
            guard.run(scheduler_headers(), work)

        assert raised.value is boom

    def test_a_success_test_that_raises_releases_the_claim(self) -> None:
        guard = RunOnceGuard()

        def judge(value: object) -> bool:
            raise KeyError("no status")

        with pytest.raises(KeyError):
            guard.run(scheduler_headers(), lambda: "done", succeeded=judge)

        assert guard.store.get(guard.run_for(scheduler_headers()).key) is None


class TestOnceDecorator:
    def test_the_guarded_handler_wraps_the_original(self) -> None:
        guard = RunOnceGuard()

        def nightly() -> None: ...

        assert guard.once(nightly).__wrapped__ is nightly

    def test_the_injected_request_does_not_reach_the_handler(self) -> None:
        guard = RunOnceGuard()
        router = guard.install(TimerRouter())
        seen: list[dict[str, Any]] = []

        @router.timer("nightly")
        @guard.once
        def nightly(**extra: Any) -> None:
            seen.append(extra)

        router.invoke("nightly", request=TimerRequest(headers=scheduler_headers()))

        assert seen == [{}]
        assert router.timers["nightly"].request_param == "run_once_request"

    def test_an_optional_timer_request_parameter_is_the_guards_source(self) -> None:
        guard = RunOnceGuard()
        router = TimerRouter()
        seen: list[TimerRequest | None] = []

        @router.timer("nightly")
        @guard.once
        def nightly(request: TimerRequest | None = None) -> None:
            seen.append(request)

        request = TimerRequest(headers=scheduler_headers())
        router.invoke("nightly", request=request)

        assert seen == [request]
        assert router.timers["nightly"].request_param == "request"

    def test_a_positional_only_timer_request_is_found(self) -> None:
        guard = RunOnceGuard()
        router = TimerRouter()
        runs: list[str] = []

        @router.timer("nightly")
        @guard.once
        def nightly(request: TimerRequest, /) -> None:
            runs.append(request.job_name or "")

        request = TimerRequest(headers=scheduler_headers())
        router.invoke("nightly", request=request)
        router.invoke("nightly", request=request)

        assert runs == ["nightly"]

    def test_a_callable_object_can_be_guarded(self) -> None:
        guard = RunOnceGuard()
        router = guard.install(TimerRouter())

        class Sweep:
            def __init__(self) -> None:
                self.orders: list[dict[str, Any]] = []

            def __call__(self, order: dict[str, Any]) -> None:
                self.orders.append(order)

        sweep = Sweep()
        router.timer("nightly")(guard.once(sweep))
        request = TimerRequest(headers=scheduler_headers())

        router.invoke("nightly", {"sku": "A"}, request)
        router.invoke("nightly", {"sku": "A"}, request)

        assert sweep.orders == [{"sku": "A"}]
        assert router.timers["nightly"].payload_param == "order"

    def test_a_coroutine_handler_gets_a_coroutine_guard(self) -> None:
        async def nightly() -> None: ...

        assert inspect.iscoroutinefunction(RunOnceGuard().once(nightly))

    def test_a_class_is_refused(self) -> None:
        with pytest.raises(TypeError, match="function or method"):
            RunOnceGuard().once(dict)

    def test_a_guard_stacked_above_the_routers_decorator_is_refused(self) -> None:
        """Trial 89: ``@guard.once`` above ``@router.timer`` wrapped a handler the router had
        registered already, so every duplicate ran the work again, silently."""
        guard = RunOnceGuard()
        router = guard.install(TimerRouter())

        with pytest.raises(TypeError, match=r"stack @guard.once under @router.timer\('cleanup'\)"):

            @guard.once
            @router.timer("cleanup")
            def cleanup() -> None: ...

    def test_a_parameter_that_takes_the_injected_name_is_refused(self) -> None:
        def nightly(run_once_request: str) -> None: ...

        with pytest.raises(TypeError, match="'run_once_request'"):
            RunOnceGuard().once(nightly)

    def test_the_function_style_facade_needs_the_headers_a_guard_reads(self) -> None:
        guard = RunOnceGuard()
        router = guard.install(TimerRouter())

        @router.timer("nightly")
        @guard.once
        def nightly() -> None: ...

        with pytest.raises(MissingRunHeadersError):
            FunctionTimers(router).nightly()

    def test_a_refusal_in_function_style_is_a_409_error(self) -> None:
        guard = RunOnceGuard()
        router = TimerRouter()

        @router.timer("nightly")
        @guard.once
        def nightly() -> None: ...

        guard.claim(scheduler_headers())
        with pytest.raises(RunInProgressError) as refused:
            router.invoke("nightly", request=TimerRequest(headers=scheduler_headers()))

        assert refused.value.status == 409


class TestSqliteStore:
    def test_an_in_memory_store_serves_threads_claiming_at_once(self) -> None:
        store = SqliteRunStore()
        guard = RunOnceGuard(store, clock=lambda: NOW)
        start = threading.Barrier(8, timeout=30)
        outcomes: list[ClaimOutcome] = []
        lock = threading.Lock()

        def claim() -> None:
            start.wait()
            outcome = guard.claim(scheduler_headers()).outcome
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=claim) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        assert sorted(o.value for o in outcomes) == ["claimed"] + ["in_progress"] * 7

    def test_an_in_memory_store_made_before_a_fork_serves_the_child(self) -> None:
        """Trial 168: gunicorn (functions-framework) imports the app, then forks its worker;
        the worker's fresh ":memory:" database had no table, and every claim failed."""
        guard = RunOnceGuard(SqliteRunStore(), clock=lambda: NOW)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: claim, say how it went, and leave at once
            try:
                said = guard.claim(scheduler_headers()).outcome.value
            except BaseException as exc:
                said = repr(exc)
            os.write(write, said.encode()[:500])
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as answer:
            said = answer.read().decode()
        os.waitpid(pid, 0)
        assert said == "claimed"
        assert guard.claim(scheduler_headers()).outcome.value == "claimed"  # the parent's own

    def test_a_file_store_uses_the_wal_journal(self, tmp_path: Path) -> None:
        SqliteRunStore(tmp_path / "runs.sqlite3").close()

        with sqlite3.connect(tmp_path / "runs.sqlite3") as connection:
            assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)

    def test_a_missing_directory_is_named_in_the_error(self, tmp_path: Path) -> None:
        path = tmp_path / "orders" / "runs.db"

        with pytest.raises(sqlite3.OperationalError) as failed:
            SqliteRunStore(path)

        assert str(failed.value) == (
            f"SqliteRunStore cannot open {str(path)!r}: the directory {tmp_path / 'orders'} does "
            "not exist; create it (os.makedirs) before the store, or use "
            "SqliteRunStore(':memory:') for one process."
        )

    def test_a_directory_given_as_the_path_is_named_in_the_error(self, tmp_path: Path) -> None:
        with pytest.raises(sqlite3.OperationalError, match="it is a directory"):
            SqliteRunStore(tmp_path)

    def test_records_outlive_the_store_object(self, tmp_path: Path) -> None:
        path = tmp_path / "runs.sqlite3"
        with SqliteRunStore(path) as first:
            RunOnceGuard(first, clock=lambda: NOW).run(scheduler_headers(), lambda: None)

        with SqliteRunStore(path) as second:
            result = RunOnceGuard(second, clock=lambda: NOW).run(scheduler_headers(), lambda: 1)

        assert result.ran is False

    def test_records_past_expire_at_are_forgotten_at_the_next_claim(self) -> None:
        clock = ManualClock(NOW)
        store = SqliteRunStore()
        guard = RunOnceGuard(store, retention=timedelta(hours=1), clock=clock.now)
        old = guard.run(scheduler_headers(), lambda: None).attempt.run.key
        clock.advance(timedelta(hours=1))

        guard.claim(scheduler_headers(schedule_time="2026-09-24T03:00:00Z"))

        assert store.get(old) is None

    def test_a_transaction_waits_for_another_process_only_up_to_the_busy_timeout(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "runs.sqlite3"
        store = SqliteRunStore(path, busy_timeout=timedelta(milliseconds=100))
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                RunOnceGuard(store).claim(scheduler_headers())
        finally:
            other.execute("ROLLBACK")
            other.close()

        assert RunOnceGuard(store).claim(scheduler_headers()).outcome is ClaimOutcome.CLAIMED

    def test_a_row_that_is_not_a_guard_record_is_reported(self, tmp_path: Path) -> None:
        path = tmp_path / "runs.sqlite3"
        store = SqliteRunStore(path)
        with sqlite3.connect(path) as connection:
            connection.execute(
                "INSERT INTO scheduler_runs VALUES ('k', 'in_progress', 'a', 'soon', 'later', '')"
            )

        with pytest.raises(ValueError, match="is not a run-once guard record"):
            store.get("k")

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            pytest.param({"table": "runs; DROP TABLE x"}, "Table name", id="table"),
            pytest.param({"busy_timeout": timedelta(0)}, "busy_timeout", id="busy-timeout"),
        ],
    )
    def test_bad_arguments_are_refused(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            SqliteRunStore(**kwargs)

    def test_the_stores_satisfy_the_protocol(self) -> None:
        assert isinstance(SqliteRunStore(), RunStore)
        assert issubclass(FirestoreRunStore, RunStore)


def printed_by_python(code: str) -> str:
    """What a fresh interpreter prints running ``code`` (stripped); it must exit 0."""
    said = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return said.stdout.strip()


class TestFirestoreStore:
    def test_the_default_collection_is_scheduler_runs_keyed_by_run_key(
        self, firestore_client: Any
    ) -> None:
        scope = f"test-{uuid.uuid4().hex}"  # the collection is shared by the session's tests
        guard = RunOnceGuard(FirestoreRunStore(firestore_client), scope=scope)

        key = guard.run(scheduler_headers(), lambda: None).attempt.run.key

        document = firestore_client.collection("scheduler_runs").document(key).get()
        assert document.exists
        assert document.to_dict()["status"] == "completed"

    def test_a_firestore_that_does_not_answer_is_named_not_a_rollback(self) -> None:
        """A trial's unreachable emulator failed the claim with google-cloud-firestore's
        ``ValueError: The transaction has no transaction ID, so it cannot be rolled back.``
        (the rollback after the begin failed); the begin's own failure names the host."""
        firestore = pytest.importorskip("google.cloud.firestore")
        from google.api_core.exceptions import RetryError
        from google.auth.credentials import AnonymousCredentials

        refused = (
            "Timeout of 60.0s exceeded, last exception: 503 ipv4:127.0.0.1:9: Connection refused"
        )

        class Unreachable:  # the client's API, as after 60 s of retries against a closed port
            def begin_transaction(self, **request: Any) -> Any:
                raise RetryError(refused, None)

        client = firestore.Client(project="p", credentials=AnonymousCredentials())
        client._firestore_api_internal = Unreachable()
        with pytest.raises(RetryError) as failed:
            FirestoreRunStore(client).claim("key", record(RunStatus.IN_PROGRESS, LEASE), NOW)
        assert refused in str(failed.value)

    def test_without_the_package_the_store_says_which_extra_to_install(self) -> None:
        code = (
            "import sys; sys.modules['google.cloud.firestore'] = None\n"
            "import scheduler_emulator.service as target\n"
            "try:\n"
            "    target.FirestoreRunStore()\n"
            "except ImportError as exc:\n"
            "    print(exc)\n"
        )

        assert printed_by_python(code) == (
            "FirestoreRunStore needs google-cloud-firestore: "
            "pip install 'cloud-scheduler-emulator[firestore]'."
        )


def test_importing_the_target_package_loads_no_web_framework_database_or_engine() -> None:
    code = (
        "import sys, scheduler_emulator.service\n"
        "heavy = ('werkzeug', 'flask', 'sqlite3', '_sqlite3', 'google')\n"
        "engine = ('scheduler_emulator.runtime._engine', 'scheduler_emulator.runtime._emulator')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in engine))\n"
    )

    assert printed_by_python(code) == "[]"


class TestFirestoreContention:
    """Attempts claiming one run at the same moment can make a Firestore transaction conflict
    until its tries run out; the record another attempt wrote then decides the answer."""

    class _Snapshot:
        def __init__(self, fields: dict[str, Any] | None) -> None:
            self.exists = fields is not None
            self._fields = fields

        def to_dict(self) -> dict[str, Any] | None:
            return self._fields

    class _Document:
        path = "scheduler-runs/key"

        def __init__(self, fields: dict[str, Any] | None) -> None:
            self.fields = fields

        def get(self, transaction: Any = None) -> Any:
            return TestFirestoreContention._Snapshot(self.fields)

    def store(
        self, fields: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch, rounds: int = 10**9
    ) -> Any:
        """A store on one document holding ``fields``, whose first ``rounds`` transactions
        conflict until their tries run out (the rest commit, claiming); ``self.rounds`` counts
        the transactions run."""
        pytest.importorskip("google.cloud.firestore")
        from scheduler_emulator.service.guard_stores import FirestoreRunStore

        store = FirestoreRunStore(client=object(), contention_timeout=0.5)
        document = self._Document(fields)
        monkeypatch.setattr(store, "_ref", lambda key: document)
        self.rounds = 0

        def conflicting(function: Any, *args: Any) -> Any:
            self.rounds += 1
            if self.rounds <= rounds:
                raise ValueError("Failed to commit transaction in 5 attempts.")
            return Claim(ClaimOutcome.CLAIMED, record(RunStatus.IN_PROGRESS, LEASE))

        monkeypatch.setattr(store, "_in_transaction", conflicting)
        return store

    def test_a_live_lease_written_meanwhile_is_a_409(self, monkeypatch: pytest.MonkeyPatch) -> None:
        held = record(RunStatus.IN_PROGRESS, LEASE)
        store = self.store(held.as_fields(), monkeypatch)
        claim = store.claim("key", record(RunStatus.IN_PROGRESS, LEASE), NOW)
        assert claim.outcome is decide_claim(held, NOW) and claim.record == held

    def test_without_such_a_record_the_claim_backs_off_and_tries_again(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        store = self.store(None, monkeypatch, rounds=3)
        claim = store.claim("key", record(RunStatus.IN_PROGRESS, LEASE), NOW)
        assert claim.outcome is ClaimOutcome.CLAIMED and self.rounds == 4

    def test_a_conflict_that_outlasts_the_contention_timeout_is_raised(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        store = self.store(None, monkeypatch)
        started = time.monotonic()
        with pytest.raises(ValueError, match="Failed to commit transaction"):
            store.claim("key", record(RunStatus.IN_PROGRESS, LEASE), NOW)
        assert self.rounds > 1 and time.monotonic() - started < 0.5 + 2.0
