"""The cloud_scheduler fixture's header spelling: the marker's header_case= and the
cloud_scheduler_header_case ini option (the marker wins), and a clear failure for a bad one."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

pytest_plugins = ["pytester"]


def test_from_the_ini(cloud_scheduler):
    assert cloud_scheduler.emulator.options.header_case == "canonical"


@pytest.mark.cloud_scheduler(header_case="lower")
def test_the_marker_wins(cloud_scheduler):
    assert cloud_scheduler.emulator.options.header_case == "lower"
"""


def test_the_ini_option_and_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncloud_scheduler_header_case = canonical\n")
    pytester.makepyfile(SUITE)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_default_is_google(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_default(cloud_scheduler):
            assert cloud_scheduler.emulator.options.header_case == "google"
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_bad_spelling_fails_the_test_naming_the_choices(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest


        @pytest.mark.cloud_scheduler(header_case="UPPER")
        def test_bad(cloud_scheduler):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*header_case='UPPER'*pass one of google, lower, canonical*"])
