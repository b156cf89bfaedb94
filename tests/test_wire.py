"""One loopback rule (``wire.is_loopback``) for the daemon's host checks and the plugin's guard."""

from __future__ import annotations

import pytest

from pytest_plugin import scheduler as plugin
from scheduler_emulator import clients
from scheduler_emulator.server import server
from scheduler_emulator.wire import check_host_port, is_loopback

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


@pytest.mark.parametrize("value", ["localhost:8085", "127.0.0.1:1", "[::1]:65535", "h.example:80"])
def test_host_port_is_accepted(value: str) -> None:
    assert check_host_port(value, "--x", "localhost:1") == value


@pytest.mark.parametrize(
    "value",
    ["nocolon", ":8085", "[]:8085", "h:", "h:８０", "http://h:80", "h/p:80", "h:0", "h:65536"],
)
def test_what_is_not_host_port_is_refused_naming_the_field_and_the_value(value: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_host_port(value, "--x", "localhost:1")
    scheme = " (no http://)" if "://" in value else ""
    wanted = f"--x must be HOST:PORT{scheme}, such as localhost:1; got {value!r}."
    if value in ("h:0", "h:65536"):  # (a trial's 127.0.0.1:99999 read "must be HOST:PORT")
        wanted = f"--x: the port must be 1 to 65535; got {value!r}."
    assert str(caught.value) == wanted


def test_the_clients_check_the_emulator_host_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(clients.EMULATOR_HOST_VARIABLE, "http://127.0.0.1:8095")
    with pytest.raises(ValueError, match=r"^\$CLOUD_SCHEDULER_EMULATOR_HOST must be HOST:PORT \("):
        clients.emulator_host()
    with pytest.raises(ValueError, match="^host must be HOST:PORT, such as 127.0.0.1:8095"):
        clients.emulator_host("127.0.0.1")
    assert clients.emulator_host(" 127.0.0.1:8095 ") == "127.0.0.1:8095"
