"""Nobody but the user drives the daemon, and no client can hold it (issue 11, parts B and C):
Host and Origin checks, JSON-only bodies, the admin token, the non-loopback warning, scenario
apps loaded without calls, body and connection limits on a real socket."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from werkzeug.test import Client

from scheduler_emulator import Emulator
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.server.connections import Limits
from scheduler_emulator.server.server import create_app, serve
from scheduler_emulator.tools.cli import main
from scheduler_emulator.tools.scenario import load_app
from tests.daemon import serving_in_thread
from tests.server.test_bad_input import JOBS, full_job
from tests.support import read_all


def error(response: Any) -> dict[str, Any]:
    return response.json["error"]


class TestHostAndOrigin:
    @pytest.fixture
    def client(self, emulator: Emulator) -> Client:
        return Client(create_app(emulator, host="127.0.0.1"))

    @pytest.mark.parametrize(  # on any port: a container's mapped port (trial 111), a proxy's
        "host", ["127.0.0.1:8095", "localhost:18095", "[::1]:8095", "localhost", "127.0.0.2:80"]
    )
    def test_loopback_hosts_on_the_bound_port_are_served(self, client: Client, host: str) -> None:
        response = client.get("/_emulator/attempts", headers={"Host": host})
        assert response.status_code == 200

    @pytest.mark.parametrize("host", ["attacker.example:8095", "attacker.example", "10.0.0.5:8095"])
    def test_a_foreign_host_cannot_read_attempts_dns_rebinding(
        self, client: Client, host: str
    ) -> None:
        response = client.get("/_emulator/attempts", headers={"Host": host})
        assert response.status_code == 403
        assert error(response)["status"] == "PERMISSION_DENIED"
        assert "DNS rebinding" in error(response)["message"]
        assert host.split(":")[0] in error(response)["message"]

    def test_a_name_given_with_allowed_host_is_served_in_any_case(self, emulator: Emulator) -> None:
        """Trial 110: a docker-compose service's name was refused over REST (not over gRPC,
        which a browser cannot call), whatever the admin token."""
        client = Client(create_app(emulator, allowed_hosts=["scheduler"]))
        assert client.get(JOBS, headers={"Host": "Scheduler:8095"}).status_code == 200
        refused = client.get(JOBS, headers={"Host": "other:8095"})
        assert refused.status_code == 403
        assert "start it with --allowed-host NAME" in error(refused)["message"]
        origin = {"Origin": "http://scheduler:18095", "Host": "scheduler:18095"}  # its dashboard
        assert client.post(f"{JOBS}/nope:pause", headers=origin).status_code == 404
        origin["Origin"] = "http://other:18095"
        assert client.post(f"{JOBS}/nope:pause", headers=origin).status_code == 403
        assert client.get(JOBS, headers={"Host": "scheduler.:18095"}).status_code == 200  # a FQDN

    def test_the_dashboard_acts_under_the_machines_address_it_was_opened_by(
        self, emulator: Emulator
    ) -> None:
        """Trial 113: bound to 0.0.0.0, the dashboard was shown at the LAN address, and each of
        its buttons was refused: its Origin was neither loopback nor an allowed name."""
        client = Client(create_app(emulator, host="0.0.0.0"))
        page = {"Host": "192.0.2.2:9951", "Origin": "http://192.0.2.2:9951"}
        assert client.post(f"{JOBS}/nope:pause", headers=page).status_code == 404
        page["Origin"] = "http://192.0.2.9:9951"  # another machine's page
        assert client.post(f"{JOBS}/nope:pause", headers=page).status_code == 403

    def test_public_keys_may_be_read_under_any_name(self, client: Client) -> None:
        response = client.get("/_emulator/oidc/certs", headers={"Host": "scheduler:8095"})
        assert response.status_code == 200

    @pytest.mark.parametrize(
        "origin", ["https://attacker.example", "null", "http://127.0.0.1.attacker.example"]
    )
    def test_a_cross_site_post_is_refused(self, client: Client, origin: str) -> None:
        for path in ("/_emulator/reset", JOBS):
            response = client.post(
                path, json=full_job(), headers={"Host": "127.0.0.1:8095", "Origin": origin}
            )
            assert response.status_code == 403, path
            assert "Origin" in error(response)["message"] and origin in error(response)["message"]

    def test_a_loopback_origin_may_post(self, client: Client) -> None:
        headers = {"Host": "127.0.0.1:8095", "Origin": "http://localhost:3000"}
        assert client.post(JOBS, json=full_job(), headers=headers).status_code == 200

    def test_a_wildcard_bind_accepts_the_machines_addresses(self, emulator: Emulator) -> None:
        client = Client(create_app(emulator, host="0.0.0.0"))
        assert client.get(JOBS, headers={"Host": "192.168.1.20:8095"}).status_code == 200
        assert client.get(JOBS, headers={"Host": "rebind.example:8095"}).status_code == 403


class TestJsonOnly:
    @pytest.mark.parametrize(
        "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
    )
    @pytest.mark.parametrize("path", ["/_emulator/reset", JOBS])
    def test_a_simple_cross_site_body_is_refused_with_415(
        self, emulator: Emulator, content_type: str, path: str
    ) -> None:
        emulator.create_job(full_job())
        response = Client(create_app(emulator)).post(
            path, data=b'{"clockTime": null}', content_type=content_type
        )
        assert response.status_code == 415
        assert error(response)["status"] == "INVALID_ARGUMENT"
        assert "Content-Type: application/json" in error(response)["message"]
        assert content_type in error(response)["message"]
        assert len(emulator.list_jobs()) == 1  # the reset did not happen

    def test_a_compressed_body_is_refused_naming_its_encoding(self, emulator: Emulator) -> None:
        """Trial 134: a gzip body was read as JSON and refused as "not UTF-8: byte 0x8b"."""
        body = gzip.compress(json.dumps(full_job()).encode())
        response = Client(create_app(emulator)).post(
            JOBS, data=body, content_type="application/json", headers={"Content-Encoding": "gzip"}
        )
        assert response.status_code == 415
        assert error(response)["message"] == (
            'The body must be sent uncompressed; got Content-Encoding "gzip".'
        )
        assert emulator.list_jobs() == []

    def test_json_and_empty_bodies_are_accepted(self, emulator: Emulator) -> None:
        client = Client(create_app(emulator))
        assert client.post(JOBS, json=full_job()).status_code == 200
        pause = JOBS + "/nightly:pause"
        assert client.post(pause, data=b"").status_code == 200  # curl -X POST: no Content-Type

    def test_an_empty_text_plain_post_is_refused_too(self, emulator: Emulator) -> None:
        client = Client(create_app(emulator))
        assert client.post(JOBS, json=full_job()).status_code == 200
        pause = JOBS + "/nightly:pause"
        assert client.post(pause, data=b"", content_type="text/plain").status_code == 415
        assert emulator.get_job("nightly").state.name == "ENABLED"


class TestAdminToken:
    @pytest.fixture
    def client(self, emulator: Emulator) -> Client:
        return Client(create_app(emulator, admin_token="s3cret"))

    @pytest.mark.parametrize("auth", [None, "Bearer wrong", "s3cret", "Bearer s3cret "])
    def test_admin_endpoints_need_the_token(self, client: Client, auth: str | None) -> None:
        headers = {} if auth is None else {"Authorization": auth}
        response = client.post("/_emulator/reset", json={}, headers=headers)
        assert response.status_code == 401
        assert "--admin-token" in error(response)["message"]
        refused = error(response)["message"].startswith("The admin token given was refused: ")
        assert refused == (auth is not None)  # (trial 81: a wrong token read as none)
        assert client.get("/_emulator/attempts", headers=headers).status_code == 401

    @pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])  # (trial 176)
    def test_the_token_opens_them(self, client: Client, scheme: str) -> None:
        headers = {"Authorization": f"{scheme} s3cret"}
        assert client.post("/_emulator/reset", json={}, headers=headers).status_code == 200

    def test_health_keys_and_the_api_stay_open(self, client: Client) -> None:
        assert client.get("/_emulator/health").status_code == 200
        assert client.get("/_emulator/oidc/certs").status_code == 200
        assert client.get(JOBS).status_code == 200


class TestStartCommand:
    def test_a_non_loopback_host_warns_on_stderr(self) -> None:
        process = subprocess.Popen(
            [sys.executable, "-m", "scheduler_emulator", "start", "--host", "0.0.0.0",
             "--port", "0", "--in-memory", "--allowed-host", "Scheduler"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            line = process.stdout.readline() if process.stdout else ""
            assert "listening on http://0.0.0.0:" in line
            port = line.split("http://0.0.0.0:", 1)[1].split()[0]
            named = requests.get(
                f"http://127.0.0.1:{port}{JOBS}", headers={"Host": f"scheduler:{port}"}, timeout=30
            )
            assert named.status_code == 200
        finally:
            process.terminate()
            _, err = process.communicate(timeout=30)
        assert err.startswith("warning: listening on 0.0.0.0, which is not a loopback address")
        assert "Set --admin-token to protect /_emulator/ (not the v1 API)." in err

    def test_loopback_does_not_warn(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = str(tmp_path / "missing.yaml")
        assert main(["start", "--in-memory", "--jobs", missing]) == 2
        assert "warning" not in capsys.readouterr().err

    def test_the_token_comes_from_the_environment_unless_the_flag_gives_one(self) -> None:
        from scheduler_emulator.tools.cli import admin_token, build_parser

        environ = {"SCHEDULER_EMULATOR_ADMIN_TOKEN": "from-env"}
        assert admin_token(build_parser().parse_args(["start"]).admin_token, environ) == "from-env"
        args = build_parser().parse_args(["start", "--admin-token", "flag"])
        assert admin_token(args.admin_token, environ) == "flag"


APP_MODULE = """
import os

def app(environ, start_response):
    start_response("200 OK", [])
    return [b""]

def create_app():
    return app

def needs_args(x):
    return app

getcwd = os.getcwd
"""


class TestScenarioApps:
    @pytest.fixture
    def folder(self, tmp_path: Path) -> Path:
        (tmp_path / "scenario_security_app.py").write_text(APP_MODULE)
        return tmp_path

    @pytest.mark.parametrize("spec", ["scenario_security_app:app", "scenario_security_app.py:app"])
    def test_an_app_object_loads(self, folder: Path, spec: str) -> None:
        assert callable(load_app(spec, folder))

    def test_a_factory_without_arguments_is_called(self, folder: Path) -> None:
        assert load_app("scenario_security_app:create_app()", folder).__name__ == "app"

    @pytest.mark.parametrize(
        "spec",
        [
            'os:system("id")',
            "os:system('touch /tmp/owned')",
            "scenario_security_app:create_app(guard=True)",
            "scenario_security_app:needs_args(1)",
            "builtins:exec('import os')",
        ],
    )
    def test_a_call_with_arguments_is_refused_naming_the_key_and_value(
        self, folder: Path, spec: str
    ) -> None:
        with pytest.raises(ConfigurationError) as caught:
            load_app(spec, folder)
        message = str(caught.value)
        assert message.startswith("target.app: ")
        assert "calls a function with arguments" in message
        assert spec[:20] in message.replace('\\"', '"')

    @pytest.mark.parametrize(
        "spec", ["os:getcwd()", "os:abort()", "scenario_security_app:getcwd()"]
    )
    def test_only_a_function_of_the_module_itself_may_be_called(
        self, folder: Path, spec: str
    ) -> None:
        with pytest.raises(ConfigurationError, match="not a function defined in"):
            load_app(spec, folder)


@pytest.fixture
def live(emulator: Emulator) -> Iterator[tuple[str, int]]:
    """The daemon's server on a free port: 0.5 s idle, 2 s a request."""
    limits = Limits(http_idle_timeout=0.5, request_timeout=2.0)
    with serving_in_thread(serve(emulator, "127.0.0.1", 0, limits=limits)) as url:
        yield "127.0.0.1", int(url.rsplit(":", 1)[1])


def connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=10)
    return sock


class TestServerLimits:
    @pytest.mark.parametrize("expect", ["", "Expect: 100-continue\r\n"])
    def test_a_100_mb_body_is_refused_400_without_being_read_or_invited(
        self, live: tuple[str, int], expect: str
    ) -> None:
        """Google's front end answers a body past its limit 400 INVALID_ARGUMENT ("Request
        payload size exceeds the limit"); a client that asked first gets no 100 Continue."""
        with connect(live) as sock:
            sock.sendall(
                f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1:{live[1]}\r\n{expect}"
                "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n".encode()
                + (b"" if expect else b"{" * 1000)
            )
            answer = read_all(sock)  # the server answers and closes, not waiting for 100 MB
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400")
        error = json.loads(body)["error"]
        assert error["status"] == "INVALID_ARGUMENT"
        assert error["message"].startswith(
            "Request payload size exceeds the limit: 2097152 bytes (this request's body is "
            "100000000 bytes; a job is at most 1 MB)."
        )

    def test_a_cloud_run_run_request_past_the_limit_is_refused_unread(
        self, live: tuple[str, int]
    ) -> None:
        """Trial 96: a 20 MB ``jobs/J:run`` body was read whole and ran (every task's argument
        list too long); the Cloud Run Admin API's paths keep every body's limit."""
        path = "/v2/projects/my-project/locations/us-central1/jobs/export:run"
        with connect(live) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{live[1]}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n".encode()
                + b"{" * 1000
            )
            answer = read_all(sock)  # the server answers and closes, not waiting for 100 MB
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), head
        assert json.loads(body)["error"]["message"] == (
            "Request payload size exceeds the limit: 2097152 bytes (this request's body is "
            "100000000 bytes)."
        )

    @pytest.mark.parametrize("padding", [b" " * 2_200_000, b'"' + b"x" * 2_200_000])
    def test_a_chunked_body_past_the_limit_is_refused_not_cut_and_parsed(
        self, live: tuple[str, int], padding: bytes
    ) -> None:
        """Trial 92: a body sent chunked (a Go client streaming its JSON) was cut at 2 MiB and
        parsed: a valid job padded with spaces was created, a long string was "unterminated"."""
        body = b'{"name": "projects/my-project/locations/us-central1/jobs/padded", ' + padding
        with connect(live) as sock:
            sock.sendall(
                f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1:{live[1]}\r\nConnection: close\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
                + f"{len(body):x}\r\n".encode()
                + body
                + b"\r\n0\r\n\r\n"
            )
            head, _, answer = read_all(sock).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), head
        assert json.loads(answer)["error"]["message"] == (
            "Request payload size exceeds the limit: 2097152 bytes (a job is at most 1 MB)."
        )

    def test_a_body_past_the_limit_elsewhere_names_no_job_and_closes_once(
        self, live: tuple[str, int]
    ) -> None:
        with connect(live) as sock:
            sock.sendall(
                f"POST /_emulator/clock:advance HTTP/1.1\r\nHost: 127.0.0.1:{live[1]}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n".encode()
            )
            head, _, body = read_all(sock).partition(b"\r\n\r\n")
        assert head.lower().count(b"connection: close") == 1
        error = json.loads(body)["error"]
        assert error["message"] == (
            "Request payload size exceeds the limit: 2097152 bytes (this request's body is "
            "100000000 bytes)."
        )
        assert "details" not in error

    def test_a_body_within_the_limit_is_invited_with_one_100_continue(
        self, live: tuple[str, int]
    ) -> None:
        """werkzeug writes the interim answer and http.server would have written another."""
        body = b'{"name": "x"}'
        with connect(live) as sock:
            sock.sendall(
                f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1:{live[1]}\r\nConnection: close\r\n"
                "Expect: 100-continue\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
            )
            interim = sock.recv(25)
            sock.sendall(body)
            answer = read_all(sock)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        assert answer.startswith(b"HTTP/1.1 400") and b"100 Continue" not in answer

    def test_a_half_sent_request_is_answered_408_after_the_timeout(
        self, live: tuple[str, int]
    ) -> None:
        with connect(live) as sock:
            sock.sendall(f"GET {JOBS} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
            answer = read_all(sock)  # closed by the server well before our 10 s
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"DEADLINE_EXCEEDED" in answer

    def test_more_than_100_request_headers_are_refused(self, live: tuple[str, int]) -> None:
        with connect(live) as sock:
            headers = "".join(f"X-H{i}: v\r\n" for i in range(150))
            sock.sendall(
                f"GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode()
            )
            assert read_all(sock).startswith(b"HTTP/1.1 431")
