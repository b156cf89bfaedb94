"""The ``cloud_scheduler`` fixture cannot reach production by accident, and its marker's
options are checked, through ``pytester``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

pytest_plugins = ["pytester"]

NO_NETWORK = """
import pytest

from scheduler_emulator import HttpTransport


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    sent = []

    def refuse(self, hop, *args, **kwargs):
        sent.append(hop.url)
        raise AssertionError(f"a network call to {hop.url}")

    monkeypatch.setattr(HttpTransport, "_follow", refuse)  # the HTTP transport's only way out
    return sent
"""


def test_a_job_for_a_production_url_fails_without_a_network_call(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(NO_NETWORK)
    pytester.makepyfile(
        """
        from datetime import timedelta


        def test_production(cloud_scheduler, no_network):
            cloud_scheduler.mount("http://orders.test", lambda environ, start_response: [])
            cloud_scheduler.create_job(
                name="nightly", schedule="0 2 * * *",
                http_target={"uri": "https://orders-abc123-uc.a.run.app/_triggers/timer/nightly"},
            )
            cloud_scheduler.advance(timedelta(days=1))
            [attempt] = cloud_scheduler.assert_attempted("nightly", count=1, code="UNAVAILABLE")
            assert no_network == []
            assert attempt.response_status is None
            assert "https://orders-abc123-uc.a.run.app is neither mounted nor loopback" in (
                attempt.debug_info
            )
            assert 'cloud_scheduler.mount("https://orders-abc123-uc.a.run.app", app)' in (
                attempt.debug_info
            )
            assert "(mounted: http://orders.test)" in attempt.debug_info
            assert "allow_network=True" in attempt.debug_info
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_allow_network_on_the_marker_or_the_fixture_sends_the_request(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(NO_NETWORK)
    pytester.makepyfile(
        """
        from datetime import timedelta

        import pytest

        JOB = dict(
            name="nightly", schedule="0 2 * * *",
            http_target={"uri": "https://orders-abc123-uc.a.run.app/_triggers/timer/nightly"},
        )


        @pytest.mark.cloud_scheduler(allow_network=True)
        def test_marker(cloud_scheduler, no_network):
            assert cloud_scheduler.allow_network
            cloud_scheduler.create_job(**JOB)
            cloud_scheduler.advance(timedelta(days=1))
            assert no_network == ["https://orders-abc123-uc.a.run.app/_triggers/timer/nightly"]


        def test_fixture(cloud_scheduler, no_network):
            cloud_scheduler.allow_network = True
            cloud_scheduler.create_job(**JOB)
            cloud_scheduler.advance(timedelta(days=1))
            assert len(no_network) == 1
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_loopback_origins_are_reached_over_http(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from datetime import timedelta


        def test_loopback(cloud_scheduler):
            cloud_scheduler.create_job(
                name="nightly", schedule="0 2 * * *",
                http_target={"uri": cloud_scheduler.url + "/_emulator/health"},
            )
            cloud_scheduler.advance(timedelta(days=1))
            cloud_scheduler.assert_attempted("nightly", count=1)
            [attempt] = cloud_scheduler.attempts("nightly")
            assert attempt.response_status is not None  # a real answer came back
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/x",
        "http://127.8.9.1/x",
        "http://localhost:1/x",
        "http://api.localhost/x",
        "http://[::1]:8000/x",
    ],
)
def test_these_origins_are_loopback(url: str) -> None:
    from pytest_plugin.scheduler import is_loopback

    assert is_loopback(url)


@pytest.mark.parametrize(
    "url", ["https://orders-abc123-uc.a.run.app/", "http://10.0.0.1/", "http://localhost.evil.com/"]
)
def test_these_origins_are_not_loopback(url: str) -> None:
    from pytest_plugin.scheduler import is_loopback

    assert not is_loopback(url)


def test_the_marker_takes_an_rfc_3339_start(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from datetime import UTC, datetime

        import pytest


        @pytest.mark.cloud_scheduler(start="2026-09-20T00:00:00Z")
        def test_zulu(cloud_scheduler):
            assert cloud_scheduler.now() == datetime(2026, 9, 20, tzinfo=UTC)


        @pytest.mark.cloud_scheduler(start="2026-09-20T02:00:00+02:00")
        def test_offset(cloud_scheduler):
            assert cloud_scheduler.now() == datetime(2026, 9, 20, tzinfo=UTC)
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_modules_marker_and_a_tests_own_combine(pytester: pytest.Pytester) -> None:
    """Trial 145: a module's ``pytestmark`` marker was dropped when the test had one of its
    own; now both apply, the test's winning an option both set."""
    pytester.makepyfile(
        """
        from datetime import UTC, datetime

        import pytest

        pytestmark = pytest.mark.cloud_scheduler(dst_policy="vixie", start="2020-01-01T00:00:00Z")


        @pytest.mark.cloud_scheduler(start="2026-10-31T12:00:00Z")
        def test_both(cloud_scheduler):
            assert cloud_scheduler.now() == datetime(2026, 10, 31, 12, tzinfo=UTC)
            assert cloud_scheduler.emulator.options.dst_policy == "vixie"
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        pytest.param(
            "start=datetime(2026, 9, 20)",
            "*@pytest.mark.cloud_scheduler(start=datetime.datetime(2026, 9, 20, 0, 0)): the "
            "datetime is naive; pass an aware one*",
            id="naive",
        ),
        pytest.param(
            'start="2026-09-24"',  # the form's example once (a trial read two)
            "*@pytest.mark.cloud_scheduler(start='2026-09-24'): not an RFC 3339 timestamp with "
            'an offset: expected RFC 3339 such as "2026-05-07T05:46:25Z" or '
            '"2026-05-07T07:46:25.5+02:00"',
            id="bad-string",
        ),
        pytest.param(
            'start="2026-09-20T00:00:00"',
            "*@pytest.mark.cloud_scheduler(start='2026-09-20T00:00:00'): not an RFC 3339*",
            id="no-offset",
        ),
        pytest.param(
            "start=1758326400",
            "*start=1758326400): start is a int; pass an aware datetime or an RFC 3339*",
            id="number",
        ),
        pytest.param(
            "begin='2026-09-20T00:00:00Z'",
            "*@pytest.mark.cloud_scheduler got unknown option(s) begin; it takes start, "
            "allow_network, publisher, topics, app_engine_urls, header_case, dst_policy.*",
            id="unknown-option",
        ),
        pytest.param(
            "dst_policy='vixy'",  # named with the marker (a trial's did not name it)
            "*@pytest.mark.cloud_scheduler(dst_policy='vixy'): pass 'absolute' or 'vixie'.*",
            id="dst-policy",
        ),
        pytest.param(
            "allow_network='yes'",
            "*@pytest.mark.cloud_scheduler(allow_network='yes'): pass True or False.*",
            id="allow-network-not-bool",
        ),
        pytest.param(  # trial 97: ignored, the clock at the default start
            '"2026-09-24T00:00:00Z"',
            "*@pytest.mark.cloud_scheduler takes its options by keyword, not "
            "'2026-09-24T00:00:00Z': write @pytest.mark.cloud_scheduler("
            "start='2026-09-24T00:00:00Z').*",
            id="positional",
        ),
    ],
)
def test_a_bad_marker_value_is_an_error_naming_the_marker_and_the_value(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    pytester.makepyfile(
        f"""
        from datetime import datetime

        import pytest


        @pytest.mark.cloud_scheduler({marker})
        def test_it(cloud_scheduler):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])
    result.stdout.no_fnmatch_line("*AttributeError*")


_BOTH = ["2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"]


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(_BOTH, marks=pytest.mark.cloud_scheduler(start="2026-10-31T12:00:00Z")),
        pytest.param(
            [_BOTH[0], _BOTH[2]],
            marks=pytest.mark.cloud_scheduler(start="2026-10-31T12:00:00Z", dst_policy="vixie"),
            id="vixie",
        ),
    ],
)
def test_the_marker_sets_the_dst_policy(cloud_scheduler: Any, sent: list[str]) -> None:
    """A trial: the daemon and ``Emulator`` take ``dst_policy``, the fixture's marker did not.
    01:30 in New York comes twice on 1 November 2026 (clocks go back at 02:00 EDT): the
    default policy fires at both, vixie's at the first only."""
    cloud_scheduler.create_job(
        name="j", schedule="30 1 * * *", time_zone="America/New_York",
        http_target={"uri": "http://127.0.0.1:9/j"},
    )  # fmt: skip
    cloud_scheduler.advance(timedelta(days=2))
    assert [attempt.schedule_time for attempt in cloud_scheduler.attempts("j")] == sent


@pytest.mark.cloud_scheduler(start="2026-09-24T02:58:00Z", topics=["heartbeat"])
def test_the_markers_topics_keep_the_in_process_publisher_on_the_tests_clock(
    cloud_scheduler: Any,
) -> None:
    """Trial 153: the docs' ``publisher=InProcessPublisher(clock, topics=…)`` could not reach
    the fixture's clock (its messages were stamped 2026-01-01) nor push (no transport)."""
    pushed: list[bytes] = []

    def endpoint(environ: Any, start_response: Any) -> list[bytes]:
        pushed.append(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])))
        start_response("204 No Content", [])
        return []

    cloud_scheduler.mount("http://svc.test", endpoint)
    cloud_scheduler.push("heartbeat", to="http://svc.test/push")
    for topic in ("heartbeat", "elsewhere"):
        cloud_scheduler.create_job(
            name=topic,
            schedule="*/5 * * * *",
            pubsub_target={"topic_name": f"projects/my-project/topics/{topic}", "data": "aGk="},
        )
    cloud_scheduler.advance(timedelta(minutes=5))
    [message] = cloud_scheduler.published("heartbeat")
    assert message.publish_time == "2026-09-24T03:00:00Z" and len(pushed) == 1
    assert [a.code for a in cloud_scheduler.attempts("elsewhere")] == ["NOT_FOUND"]


def test_a_refused_job_is_said_at_the_tests_line_without_the_emulators_frames(
    pytester: pytest.Pytester,
) -> None:
    """Trials 212, 215: a misspelt time zone printed 8 to 30 lines of the emulator's frames
    (its docstrings and comments too) before the message."""
    pytester.makepyfile(
        """
        def test_bad_zone(cloud_scheduler):
            cloud_scheduler.create_job(name="n", schedule="0 2 * * *", time_zone="Europe/Londn",
                                       http_target={"uri": "http://app.test/n"})
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*InvalidArgument:*did you mean 'Europe/London'?*"])
    result.stdout.no_fnmatch_line("*scheduler_emulator/*.py*")  # no frame of the emulator's
    result.stdout.no_fnmatch_line("*pytest_plugin/*.py*")
    result.stdout.no_fnmatch_line("*def resolve_time_zone*")
