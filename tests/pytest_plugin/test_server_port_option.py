"""The ``cloud_scheduler_server_port`` ini option fixes the live daemon's port (trial 89: a
service started outside the test needed to know where the daemon listens)."""

from __future__ import annotations

import socket

import pytest

from tests.support import free_port

pytest_plugins = ["pytester"]


@pytest.mark.timeout(120)
def test_the_live_daemon_listens_on_the_ini_options_port(pytester: pytest.Pytester) -> None:
    port = free_port()
    pytester.makeini(f"[pytest]\ncloud_scheduler_server_port = {port}\n")
    pytester.makepyfile(
        f"""
        def test_port(cloud_scheduler_server):
            assert cloud_scheduler_server.url == "http://127.0.0.1:{port}"
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.timeout(120)
def test_a_port_that_is_not_one_fails_naming_the_option(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncloud_scheduler_server_port = 80a\n")
    pytester.makepyfile("def test_port(cloud_scheduler_server):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cloud_scheduler_server_port = '80a': pass a port, 1-65535*"])


@pytest.mark.timeout(120)
def test_a_port_in_use_fails_naming_the_option(pytester: pytest.Pytester) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        pytester.makeini(f"[pytest]\ncloud_scheduler_server_port = {port}\n")
        pytester.makepyfile("def test_port(cloud_scheduler_server):\n    pass\n")
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"*cloud_scheduler_server_port = {port}: *Address already in use*"]
    )
