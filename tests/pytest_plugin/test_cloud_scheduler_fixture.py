"""The ``cloud_scheduler`` and ``cloud_scheduler_server`` fixtures, through ``pytester``."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest

from scheduler_emulator import InvalidArgument
from tests.support import TARGET, wait_for

pytest_plugins = ["pytester"]

TARGET_APP = '''
import datetime
import time


class Target:
    """Records the ScheduleTime header and the time the app saw; answers ``status``."""

    def __init__(self, status=200):
        self.status = status
        self.seen = []

    def __call__(self, environ, start_response):
        self.seen.append((
            environ.get("HTTP_X_CLOUDSCHEDULER_SCHEDULETIME"),
            datetime.datetime.now(datetime.timezone.utc),
            time.time(),
        ))
        status = self.status(len(self.seen)) if callable(self.status) else self.status
        start_response(f"{status} X", [])
        return [b""]
'''


def test_a_week_of_nightly_runs_through_a_mounted_app(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(target=TARGET_APP)
    pytester.makepyfile(
        """
        from datetime import UTC, datetime, timedelta

        import pytest
        from target import Target


        @pytest.mark.cloud_scheduler(start=datetime(2026, 9, 24, tzinfo=UTC))
        def test_week(cloud_scheduler):
            app = Target()
            cloud_scheduler.mount("http://orders.test", app)
            cloud_scheduler.create_job(
                name="nightly", schedule="0 2 * * *",
                http_target={"uri": "http://orders.test/_triggers/timer/nightly"},
            )
            cloud_scheduler.advance(timedelta(days=7))
            cloud_scheduler.assert_attempted("nightly", count=7, code="OK")
            assert [s[0] for s in app.seen] == [
                f"2026-09-{d}T02:00:00Z" for d in range(24, 31)
            ]
            # the app saw the virtual instant, through datetime and time alike
            assert app.seen[0][1] == datetime(2026, 9, 24, 2, tzinfo=UTC)
            assert app.seen[0][2] == datetime(2026, 9, 24, 2, tzinfo=UTC).timestamp()
            # outside deliveries the test sees real time again
            assert datetime.now(UTC).year >= 2026 and datetime.now(UTC) != app.seen[-1][1]
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_retries_follow_the_backoff_and_assert_attempted_counts_them(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(target=TARGET_APP)
    pytester.makepyfile(
        """
        from datetime import timedelta

        from target import Target


        def test_retries(cloud_scheduler):
            app = Target(status=lambda n: 500 if n <= 2 else 200)
            cloud_scheduler.mount("http://orders.test", app)
            cloud_scheduler.create_job({
                "name": "nightly", "schedule": "0 2 * * *",
                "httpTarget": {"uri": "http://orders.test/_triggers/timer/nightly"},
                "retryConfig": {"retryCount": 3},
            })
            cloud_scheduler.advance(timedelta(hours=3))
            failed = cloud_scheduler.assert_attempted("nightly", count=2, code="INTERNAL")
            ok = cloud_scheduler.assert_attempted("nightly", count=1, code="OK")
            starts = [a.start_time.strftime("%H:%M:%S") for a in failed + ok]
            assert starts == ["02:00:00", "02:00:05", "02:00:15"]
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_assert_attempted_lists_what_did_not_match(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(target=TARGET_APP)
    pytester.makepyfile(
        """
        from datetime import timedelta

        from target import Target


        def test_mismatch(cloud_scheduler):
            cloud_scheduler.mount("http://orders.test", Target(status=404))
            cloud_scheduler.create_job(
                name="nightly", schedule="0 2 * * *",
                http_target={"uri": "http://orders.test/x"},
            )
            cloud_scheduler.advance(timedelta(days=1))
            cloud_scheduler.assert_attempted("nightly", count=1, code="OK")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*expected 1 attempt(s) of job 'nightly' with code=OK, found 0 (of 1 attempts;*",
            "*not matching:*",
            "*attempt 1 of run id 1 at 2026-01-01T02:00:00Z (ScheduleTime 2026-01-01T02:00:00Z)"
            " -> NOT_FOUND (404): code NOT_FOUND, not OK*",
        ]
    )


def test_an_app_that_raises_is_named_in_the_failure_with_its_traceback_logged(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        from datetime import timedelta

        from starlette.applications import Starlette
        from starlette.routing import Route


        def wsgi(environ, start_response):
            raise KeyError("DB_URL")


        async def nightly(request):
            raise LookupError("no tenant 42")


        asgi = Starlette(routes=[Route("/x", nightly, methods=["POST"])])


        def test_raises(cloud_scheduler):
            cloud_scheduler.mount("http://wsgi.test", wsgi)
            cloud_scheduler.mount("http://asgi.test", asgi)
            for name in ("wsgi", "asgi"):
                cloud_scheduler.create_job(
                    name=name, schedule="0 2 * * *", http_target={"uri": f"http://{name}.test/x"},
                    retry_config={"retryCount": 0},
                )
            cloud_scheduler.advance(timedelta(days=1))
            [wsgi_attempt] = cloud_scheduler.attempts("wsgi")
            assert wsgi_attempt.debug_info.endswith(". The app raised KeyError: 'DB_URL'")
            cloud_scheduler.assert_attempted("asgi", code="OK")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*-> INTERNAL (500): code INTERNAL, not OK*",
            "*= 500. The app raised LookupError: no tenant 42*",
            "*Captured log call*",
            "*the app mounted for http://asgi.test/x raised*",
            "*LookupError: no tenant 42*",
        ]
    )


def test_each_test_gets_a_fresh_emulator(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_one(cloud_scheduler):
            cloud_scheduler.create_job(name="a", schedule="* * * * *",
                                       http_target={"uri": "http://x.test/"})

        def test_two(cloud_scheduler):
            assert cloud_scheduler.emulator.list_jobs() == []
            assert cloud_scheduler.now().isoformat() == "2026-01-01T00:00:00+00:00"
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_live_server_is_reset_between_tests_and_serves_the_api(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        from datetime import UTC, datetime

        import pytest
        import requests

        JOBS = "/v1/projects/my-project/locations/us-central1/jobs"

        def test_one(cloud_scheduler_server):
            body = {"name": "projects/my-project/locations/us-central1/jobs/a",
                    "schedule": "0 2 * * *", "httpTarget": {"uri": "http://127.0.0.1:9/"}}
            assert requests.post(cloud_scheduler_server.url + JOBS, json=body).status_code == 200
            cloud_scheduler_server.advance(3 * 3600)
            assert len(cloud_scheduler_server.attempts("a")) == 1

        def test_two(cloud_scheduler_server):
            assert requests.get(cloud_scheduler_server.url + JOBS).json() == {}
            env = cloud_scheduler_server.env
            assert env["CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDSCHEDULER"] == (
                cloud_scheduler_server.url + "/"
            )
            assert env["CLOUDSDK_AUTH_DISABLE_CREDENTIALS"] == "true"

        @pytest.mark.cloud_scheduler(start="2026-09-24T00:00:00Z")  # (trial 152: ignored)
        def test_three(cloud_scheduler_server):
            assert cloud_scheduler_server.now() == datetime(2026, 9, 24, tzinfo=UTC)

        def test_four(cloud_scheduler_server):
            assert cloud_scheduler_server.now() == datetime(2026, 1, 1, tzinfo=UTC)

        @pytest.mark.cloud_scheduler(app_engine_urls="http://127.0.0.1:9", dst_policy="vixie")
        def test_five(cloud_scheduler_server):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "default::UserWarning")
    result.assert_outcomes(passed=5, warnings=1)
    result.stdout.fnmatch_lines(  # (trial 157; trial 169: "(allow_network, dst_policy=…)")
        [
            "*cloud_scheduler(app_engine_urls=…, dst_policy=…) applies to the in-process*"
            "give the daemon its flags (--app-engine-url, --dst-policy…)*"
        ]
    )
    # (trial 169: the summary showed our comment; trial 173: a clone's path may hold "trial")
    assert not re.search(r"\btrials? \d", result.stdout.str())


def test_the_live_servers_client_takes_each_transport_and_the_async_client(
    pytester: pytest.Pytester,
) -> None:
    """Trial 140: ``.client()`` gave only the REST client; a gRPC or an async one needed the
    host read out of ``.env``."""
    pytester.makepyfile(
        """
        import asyncio

        PARENT = "projects/my-project/locations/us-central1"

        def test_clients(cloud_scheduler_server):
            job = {"name": PARENT + "/jobs/a", "schedule": "0 2 * * *",
                   "http_target": {"uri": "http://127.0.0.1:9/"}}
            cloud_scheduler_server.client("grpc").create_job(parent=PARENT, job=job)
            assert cloud_scheduler_server.client().get_job(name=job["name"]).schedule == "0 2 * * *"

            async def names():
                jobs = await cloud_scheduler_server.client(async_=True).list_jobs(parent=PARENT)
                return [j.name async for j in jobs]

            assert asyncio.run(names()) == [job["name"]]
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_module_level_guard_starts_each_test_afresh(pytester: pytest.Pytester) -> None:
    """Each test's emulator fires the same scheduled times; a guard kept at module level (its
    default store in memory) must not take them for runs the test before already ran."""
    pytester.makepyfile(
        """
        from datetime import timedelta

        import pytest
        from flask import Flask
        from scheduler_emulator.service import RunOnceGuard, TimerRouter

        router = TimerRouter()
        guard = RunOnceGuard()
        guard.install(router)
        ran = []


        @router.timer("nightly")
        @guard.once
        def nightly():
            ran.append(1)


        app = Flask(__name__)
        router.init_app(app)


        @pytest.mark.parametrize("test", [1, 2, 3])
        def test_nightly(cloud_scheduler, test):
            cloud_scheduler.mount("http://svc.test", app)
            cloud_scheduler.create_job(
                name="nightly", schedule="0 2 * * *",
                http_target={"uri": "http://svc.test/_triggers/timer/nightly"},
            )
            before = len(ran)
            cloud_scheduler.advance(timedelta(days=1))
            assert len(ran) == before + 1
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_load_jobs_creates_a_jobs_files_jobs_and_names_a_bad_field(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".yaml",
        jobs="""
        - name: nightly
          schedule: "0 2 * * *"
          httpTarget: {uri: "http://svc.test/_triggers/timer/nightly"}
        """,
        bad="""
        - name: nightly
          schedule: "0 2 * * *"
          retryConfig: {retryCount: 9}
          httpTarget: {uri: "http://svc.test/_triggers/timer/nightly"}
        """,
    )
    pytester.makepyfile(
        """
        from datetime import timedelta

        import pytest
        from scheduler_emulator import ConfigurationError


        def ok(environ, start_response):
            start_response("200 OK", [])
            return [b""]


        def test_load(cloud_scheduler):
            cloud_scheduler.mount("http://svc.test", ok)
            [job] = cloud_scheduler.load_jobs("jobs.yaml")
            assert job.name == "projects/my-project/locations/us-central1/jobs/nightly"
            cloud_scheduler.advance(timedelta(days=1))
            cloud_scheduler.assert_attempted("nightly", count=1, code="OK")
            with pytest.raises(ConfigurationError, match="retryConfig.retryCount"):
                cloud_scheduler.load_jobs("bad.yaml")
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_live_scheduler_of_your_own_on_a_port_you_choose_stops_with_its_block() -> None:
    from pytest_plugin import LiveScheduler
    from tests.support import free_port

    port = free_port()
    with LiveScheduler("--in-memory", "--port", str(port)) as daemon:
        assert daemon.url == f"http://127.0.0.1:{port}"
        assert daemon.process.poll() is None
    # stopped as by SIGTERM (its Cloud Run tasks stopped, its store closed), not killed
    assert daemon.process.returncode == 0


def test_a_live_schedulers_output_keeps_its_newest_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session-long daemon's execution log (a JSON line an attempt) was kept whole."""
    from pytest_plugin import live

    monkeypatch.setattr(live, "OUTPUT_LINES", 3)
    with live.LiveScheduler("--in-memory", "--clock", "manual") as daemon:
        daemon.create_job(name="tick", schedule="* * * * *", http_target={"uri": "http://x.test/"})
        daemon.advance(10 * 60)  # ten attempts, a log line each
        wait_for(lambda: len(daemon.output) == 3 and '"tick"' in daemon.output[-1], 10)
        assert daemon.first_line not in daemon.output  # the oldest went first
        assert daemon._lines.qsize() <= 2  # what only the startup reads is not kept (ten lines)


def test_the_helpers_are_listed_before_first_use_and_import_on_it() -> None:
    import pytest_plugin

    listed = dir(pytest_plugin)
    assert {*pytest_plugin.__all__} <= {*listed}
    for name in pytest_plugin.__all__:
        assert getattr(pytest_plugin, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        pytest_plugin.Nope  # noqa: B018


def test_a_live_daemons_reset_empties_this_processs_in_memory_guard_stores(
    cloud_scheduler_server: Any,
) -> None:
    """The docs' own-daemon recipe resets a ``LiveScheduler`` per test: its ``reset`` forgets
    the guard's runs too, as the fixtures do (trial 30: the next test's runs, at the same
    instants, were answered as done)."""
    from datetime import UTC, datetime, timedelta

    from scheduler_emulator.service import SqliteRunStore
    from scheduler_emulator.service.guard_stores import RunRecord, RunStatus

    store, now = SqliteRunStore(), datetime(2026, 1, 1, tzinfo=UTC)
    later = now + timedelta(days=1)
    store.claim("run-1", RunRecord(RunStatus.IN_PROGRESS, "a1", later, later), now)
    assert store.get("run-1") is not None
    cloud_scheduler_server.reset()
    assert store.get("run-1") is None


def test_the_live_fixture_creates_and_runs_jobs_and_its_reset_drops_fault_rules(
    cloud_scheduler_server: Any,
) -> None:
    """A trial: a test moved from ``cloud_scheduler`` to ``cloud_scheduler_server`` met
    ``AttributeError: … no attribute 'create_job'`` with no pointer, and a fault rule one test
    added stayed for the tests after it (the daemon's reset keeps fault rules)."""
    daemon = cloud_scheduler_server
    job = daemon.create_job(
        name="a", schedule="0 2 * * *", http_target={"uri": "http://127.0.0.1:9/"}
    )
    assert job["name"] == "projects/my-project/locations/us-central1/jobs/a"
    assert job["state"] == "ENABLED" and job["scheduleTime"] == "2026-01-01T02:00:00Z"
    rule = {"action": "connection_error", "job": "a"}
    daemon.session.post(daemon.url + "/_emulator/faults", json=rule).raise_for_status()
    assert daemon.run_job("a")["name"] == job["name"]
    daemon.advance(0)
    assert [(a.attempt, a.injected) for a in daemon.attempts("a")] == [(1, True)]
    daemon.reset()
    assert daemon.session.get(daemon.url + "/_emulator/faults").json()["rules"] == []
    with pytest.raises(AttributeError, match=r"^LiveScheduler has no mount: .*\.create_job"):
        daemon.mount("http://svc.test", object())
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        daemon.nope  # noqa: B018
    # refused as the in-process fixture refuses it (a trial's was float()'s bare TypeError)
    from scheduler_emulator import ClockError

    with pytest.raises(ClockError, match=r"^advance takes a timedelta .*got datetime\.datetime"):
        daemon.advance(datetime(2026, 9, 25))
    with pytest.raises(ClockError, match=r"^cannot advance a ManualClock by -5 seconds"):
        daemon.advance(-5)


def test_load_faults_adds_a_plan_files_rules_and_warns_of_one_that_never_acts(
    cloud_scheduler: Any, tmp_path: Any
) -> None:
    """Trial 145: the fixture had no way to read the plan file ``start --faults`` takes, and a
    rule that never acts went unsaid (the daemon warns of it)."""
    plan = tmp_path / "faults.yaml"
    plan.write_text(
        "seed: 7\nrules:\n"
        "  - {action: duplicate}\n"
        "  - {action: duplicate, job: nightly, run: 2, concurrent: true}\n"
        "  - {action: lost_ack, job: nightly, attempt: 1}\n"
    )
    cloud_scheduler.faults.add(action="delay", job="other", seconds=1)

    with pytest.warns(UserWarning, match=r"faults.yaml: rules\[2\] \(duplicate\) never acts"):
        loaded = cloud_scheduler.load_faults(plan)

    assert loaded is cloud_scheduler.faults
    assert (loaded.seed, [rule.action for rule in loaded.rules]) == (
        7,
        ["delay", "duplicate", "duplicate", "lost_ack"],
    )
    plan.write_text("rules:\n  - {action: nope}\n")
    with pytest.raises(InvalidArgument, match=r"faults.yaml: .*action"):
        cloud_scheduler.load_faults(plan)
    cloud_scheduler.create_job(name="nightly", schedule="0 2 * * *", http_target={"uri": TARGET})
    cloud_scheduler.faults.clear()
    plan.write_text("rules:\n  - {action: lost_ack, job: nightlly}\n")  # (trial 155: unsaid)
    with pytest.warns(UserWarning, match=r"names job 'nightlly', which no job is \(job IDs: "):
        cloud_scheduler.load_faults(plan)
