"""One loopback rule (``wire.is_loopback``) for the daemon's host checks and the plugin's guard."""

from __future__ import annotations

import pytest

from pytest_plugin import scheduler as plugin
from scheduler_emulator.server import server
from scheduler_emulator.wire import is_loopback

LOOPBACK = ["localhost", "LOCALHOST.", "localhost.localdomain", "api.localhost", "127.8.9.1", "::1"]
NOT_LOOPBACK = ["localhost.evil.com", "10.0.0.1", "example.com", "", "0.0.0.0"]


def test_the_daemon_and_the_plugin_share_one_rule() -> None:
    assert server.is_loopback is is_loopback
    assert plugin.is_loopback is is_loopback


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts_and_their_urls(host: str) -> None:
    netloc = f"[{host}]" if ":" in host else host
    assert is_loopback(host)
    assert is_loopback(f"http://{netloc}:8000/run")


@pytest.mark.parametrize("host", NOT_LOOPBACK)
def test_other_hosts_and_their_urls(host: str) -> None:
    assert not is_loopback(host)
    assert not is_loopback(f"http://{host}/run")
