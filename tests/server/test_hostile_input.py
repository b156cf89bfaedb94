"""Hostile input, round three: fault-plan numbers, URIs that cannot be sent, huge numbers and
durations in files, huge jobs files, and the small ones (repeated Origin / Content-Type, an
empty admin token, a 414 page, duplicate JSON keys, the --in-memory stop message).

Every case asserts the status or exit code, a message naming the field or file and the value,
and that no traceback reaches stderr."""

from __future__ import annotations

import json
import math
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.core.faults import FaultPlan, FaultRule
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.server.server import create_app
from scheduler_emulator.tools.fault_file import load_fault_file
from scheduler_emulator.tools.jobs_file import load_jobs_file
from tests.daemon import running_daemon, serving
from tests.support import RecordingTarget, case_table, nightly_job, run_command

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
FAULTS = "/_emulator/faults"


@pytest.fixture
def client(emulator: Emulator) -> Client:
    return Client(create_app(emulator))


def full_job(**overrides: Any) -> dict[str, Any]:
    """The nightly job with its full name, as CreateJob takes it."""
    return nightly_job(**overrides) | {"name": JOBS[4:] + "/nightly"}


def post_raw(client: Client, path: str, text: str) -> Any:
    return client.post(path, data=text, content_type="application/json")


def error_of(response: Any) -> dict[str, Any]:
    error: dict[str, Any] = response.json["error"]
    return error


def run_cli(
    *args: str, capsys: pytest.CaptureFixture[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``scheduler-emulator ARGS`` as a subprocess, or with ``capsys`` in this process (the
    cases beside the one subprocess of their family)."""
    code, out, err = run_command(capsys, *args)
    return subprocess.CompletedProcess(list(args), code, out, err)


def assert_clean_exit_2(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


# ------------------------------------------------------------------------ 1. fault-plan numbers


class TestFaultPlanNumbers:
    @case_table(__file__, "unbounded_fault_numbers")
    def test_an_unbounded_number_is_refused_and_the_plan_stays_json(
        self, client: Client, body: str, field: str, shown: str
    ) -> None:
        response = post_raw(client, FAULTS, body)
        assert response.status_code == 400
        message = error_of(response)["message"]
        assert field in message and shown in message
        listed = client.get(FAULTS)
        assert listed.status_code == 200
        plan = json.loads(listed.get_data(as_text=True))  # strict JSON: no Infinity, no NaN
        assert plan["rules"] == []

    def test_the_bounds_themselves_are_accepted(self, client: Client) -> None:
        for rule in (
            {"action": "delay", "seconds": 86400},
            {"action": "deadline", "seconds": 1800},
            {"action": "duplicate", "count": 100},
            {"action": "duplicate", "count": 10, "concurrent": True},
        ):
            assert client.post(FAULTS, json=rule).status_code == 200, rule

    @pytest.mark.parametrize(
        "fields",
        [
            {"action": "delay", "seconds": math.inf},
            {"action": "delay", "seconds": math.nan},
            {"action": "duplicate", "count": 10**12},
            {"action": "duplicate", "count": 11, "concurrent": True},
            {"action": "lost_ack", "limit": 10**30},
        ],
    )
    def test_the_python_api_has_the_same_bounds(self, fields: dict[str, Any]) -> None:
        with pytest.raises(InvalidArgument):
            FaultPlan().add(**fields)
        with pytest.raises(InvalidArgument):
            FaultRule(**fields)

    @pytest.mark.parametrize(
        ("text", "field"),
        [
            ("seed: HUGE\nrules: []\n", "seed"),
            ("rules:\n  - {action: delay, job: a, seconds: HUGE}\n", "rules[0].seconds"),
            ("rules:\n  - {action: deadline, job: a, seconds: HUGE.5}\n", "rules[0].seconds"),
        ],
    )
    def test_a_huge_number_in_a_fault_file_exits_2_naming_the_file_and_field(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, field: str
    ) -> None:
        path = tmp_path / "faults.yaml"
        path.write_text(text.replace("HUGE", "9" * 5000))
        with pytest.raises(InvalidArgument, match=re.escape(field)) as caught:
            load_fault_file(path)
        assert str(path) in caught.value.message and "set_int_max_str_digits" not in str(
            caught.value
        )
        here = None if text.startswith("seed") else capsys  # the seed's as a subprocess
        result = run_cli("start", "--in-memory", "--port", "0", "--faults", str(path), capsys=here)
        assert_clean_exit_2(result, str(path), field)
        assert "set_int_max_str_digits" not in result.stderr


# ----------------------------------------------------------------------- 2. URIs that cannot go


class TestUris:
    @pytest.mark.parametrize(
        ("uri", "shown"),
        [
            ("http://a.test/a\r\nX-Evil: 1", "\\r\\n"),
            ("http://a.test/a\tb", "\\t"),
            ("http://a.test/a\x00b", "\\u0000"),
            ("http://a.test/a\x7fb", "\\u007f"),
        ],
    )
    def test_a_control_character_is_refused_at_create(
        self, client: Client, uri: str, shown: str
    ) -> None:
        response = client.post(JOBS, json=full_job(httpTarget={"uri": uri}))
        assert response.status_code == 400
        error = error_of(response)
        assert "httpTarget.uri" in error["message"] and shown in error["message"]
        assert client.get(JOBS).json == {}

    def test_user_information_is_refused_without_echoing_the_password(self, client: Client) -> None:
        response = client.post(
            JOBS, json=full_job(httpTarget={"uri": "http://user:s3cret@a.test/x"})
        )
        assert response.status_code == 400
        text = response.get_data(as_text=True)
        assert "httpTarget.uri" in text and "user:***@a.test" in text
        assert "s3cret" not in text
        assert client.get(JOBS).json == {}

    def test_a_space_and_non_ascii_text_are_sent_percent_encoded(self, clock: ManualClock) -> None:
        target = RecordingTarget()
        with serving(target) as base:
            emulator = Emulator(clock)
            try:
                client = Client(create_app(emulator))
                uri = base + "/a b/\u2603?q=x y"
                created = client.post(JOBS, json=full_job(httpTarget={"uri": uri}))
                assert created.status_code == 200
                assert created.json["httpTarget"]["uri"] == uri  # stored as given
                assert client.post(JOBS + "/nightly:run").status_code == 200
                clock.advance(0)  # :run answers when accepted; a clock move waits for it
                (received,) = target.wait_for(1)
                (attempt,) = emulator.attempts()
            finally:
                emulator.close()
        path = received.path.encode("latin-1").decode("utf-8")  # WSGI's bytes-as-latin-1
        assert path == "/a b/\u2603" and received.query == "q=x%20y"
        assert attempt.response_status == 200
        assert attempt.request["url"].endswith("/a%20b/%E2%98%83?q=x%20y")

    def test_a_jobs_file_with_a_line_break_in_a_uri_exits_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "jobs.json"
        path.write_text(json.dumps([nightly_job(httpTarget={"uri": "http://a.test/\r\nX: 1"})]))
        result = run_cli("start", "--in-memory", "--port", "0", "--jobs", str(path), capsys=capsys)
        assert_clean_exit_2(result, str(path), "httpTarget.uri", "control characters")


# ------------------------------------------------------------------- 3. huge numbers, durations


class TestHugeNumbers:
    def test_a_4301_digit_retry_count_in_a_jobs_file_exits_2(self, tmp_path: Path) -> None:
        path = tmp_path / "jobs.yaml"
        path.write_text(
            "- name: a\n  schedule: '0 2 * * *'\n  httpTarget: {uri: 'http://a.test/'}\n"
            "  retryConfig: {retryCount: " + "7" * 4301 + "}\n"
        )
        result = run_cli("start", "--in-memory", "--port", "0", "--jobs", str(path))
        assert_clean_exit_2(result, str(path), "retryConfig.retryCount", "4301 digits")
        assert "set_int_max_str_digits" not in result.stderr

    @pytest.mark.parametrize(
        ("text", "where", "shown"),
        [
            (
                '[{"name": "a", "retryConfig": {"retryCount": ' + "9" * 5000 + "}}]",
                "retryCount",
                "5000 digits",
            ),
            (
                "- name: a\n  retryConfig: {retryCount: 99999999999999999999}\n",
                "retryCount",
                "99999999999999999999",
            ),
            ("- name: a\n  x: .inf\n", 'job 1 ("a"): x is not a finite number', "inf"),
            ('[{"name": "a", "x": NaN}]', 'job 1 ("a"): x is not', "nan"),
            ('{"jobs": [{"name": "a", "x": 1e999}]}', "jobs[0].x", "got 1e999"),
        ],
    )
    def test_a_number_out_of_range_names_its_path(
        self, tmp_path: Path, text: str, where: str, shown: str
    ) -> None:
        path = tmp_path / "jobs.txt"
        path.write_text(text)
        with pytest.raises(Exception) as caught:
            load_jobs_file(path, project="my-project", location="l")
        message = str(caught.value)
        assert type(caught.value).__name__ == "ConfigurationError"
        assert message.startswith(f"{path}: ") and where in message and shown in message

    def test_a_scenario_with_a_huge_integer_exits_2(self, tmp_path: Path) -> None:
        path = tmp_path / "scenario.yaml"
        path.write_text("steps:\n  - advance: " + "9" * 5000 + "\n")
        result = run_cli("replay", str(path))
        assert_clean_exit_2(result, str(path), "steps[0].advance", "5000 digits")

    @pytest.mark.parametrize("step", ['"999999999d"', "1e300", '"99999999999999999999w"'])
    def test_a_scenario_advancing_beyond_100_years_exits_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], step: str
    ) -> None:
        path = tmp_path / "scenario.yaml"
        path.write_text(f"steps:\n  - advance: {step}\n")
        result = run_cli("replay", str(path), capsys=capsys)
        assert_clean_exit_2(result, str(path), "steps[0].advance", "100 years")

    def test_a_huge_integer_in_a_rest_body_is_a_400_without_python_internals(
        self, client: Client
    ) -> None:
        body = '{"name": "x", "schedule": "0 2 * * *", "retryConfig": {"retryCount": %s}}'
        response = post_raw(client, JOBS, body % ("9" * 5000))
        assert response.status_code == 400
        message = error_of(response)["message"]
        assert "retryConfig.retryCount" in message and "5000 digits" in message
        assert "set_int_max_str_digits" not in message


# ---------------------------------------------------------------------------- 4. huge jobs files


#: Runs the CLI and prints its own peak RSS (KiB) and CPU seconds on the last line of stderr.
#: The peak is Linux's ``VmHWM``, not ``ru_maxrss``: that survives ``execve`` (getrusage(2)), so
#: it reports the forking pytest worker's size when that is larger (387 MB after a few hundred
#: tests under ``-n 2``), whatever the CLI used.
MEASURED_CLI = (
    "import resource, sys\n"
    "from scheduler_emulator.tools.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "use = resource.getrusage(resource.RUSAGE_SELF)\n"
    "with open('/proc/self/status') as status:\n"
    "    hwm = [line.split()[1] for line in status if line.startswith('VmHWM:')]\n"
    "print(hwm[0] if hwm else use.ru_maxrss, use.ru_utime + use.ru_stime, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def measured_start(*args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """``scheduler-emulator start --in-memory --port 0 ARGS``, expected to exit by itself.

    :return: the result (without the measurement line), its peak RSS in MB, its CPU seconds.
    """
    result = subprocess.run(
        [sys.executable, "-c", MEASURED_CLI, "start", "--in-memory", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    *lines, measured = result.stderr.strip().splitlines()
    peak_kib, cpu_seconds = measured.split()
    result.stderr = "\n".join(lines) + "\n"
    return result, int(peak_kib) / 1024, float(cpu_seconds)


class TestHugeJobsFiles:
    def test_dev_zero_exits_2_at_once_naming_the_limit_and_the_option(self) -> None:
        result, peak_mb, cpu_seconds = measured_start("--jobs", "/dev/zero")
        assert_clean_exit_2(result, "/dev/zero", "8388608 bytes", "--max-jobs-file-bytes")
        assert peak_mb < 200
        # 0.4 s on an idle machine, interpreter start included; CPU time, since a shared CI
        # machine stretches the wall-clock time of any process
        assert cpu_seconds < 2

    def test_a_16_mb_file_of_200000_plain_jobs_is_refused_at_once(self, tmp_path: Path) -> None:
        path = tmp_path / "big.yaml"
        entry = '- name: job-{:06d}\n  schedule: "*/5 * * * *"\n  httpTarget: {{uri: "http://a.test/x"}}\n'
        with path.open("w") as out:
            for index in range(200_000):
                out.write(entry.format(index))
        assert path.stat().st_size > 16_000_000
        result, peak_mb, cpu_seconds = measured_start("--jobs", str(path))
        assert_clean_exit_2(result, str(path), "limit of 8388608 bytes", "--max-jobs-file-bytes")
        assert "alias" not in result.stderr
        assert cpu_seconds < 2 and peak_mb < 200

    def test_the_job_count_limit_names_its_option(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "jobs.json"
        path.write_text(json.dumps([nightly_job(name=f"j{i}") for i in range(3)]))
        result = run_cli(
            *("start", "--in-memory", "--port", "0", "--jobs", str(path)),
            *("--max-jobs-per-file", "2"),
            capsys=capsys,
        )
        assert_clean_exit_2(
            result, str(path), "holds more jobs than the limit of 2", "--max-jobs-per-file"
        )

    def test_a_larger_limit_lets_a_larger_file_load(self, tmp_path: Path) -> None:
        path = tmp_path / "jobs.json"
        path.write_text(json.dumps([nightly_job(name=f"j{i}") for i in range(3)]))
        size = path.stat().st_size
        with pytest.raises(Exception, match=f"limit of {size - 1} bytes"):
            load_jobs_file(path, project="my-project", location="l", max_bytes=size - 1)
        assert len(load_jobs_file(path, project="my-project", location="l", max_bytes=size)) == 3

    @pytest.mark.slow
    @pytest.mark.timeout(240)
    def test_plain_yaml_parses_in_time_linear_in_its_size(self, tmp_path: Path) -> None:
        from scheduler_emulator.tools.documents import load_document

        entry = '- name: job-{:06d}\n  schedule: "*/5 * * * *"\n  httpTarget: {{uri: "http://a.test/x"}}\n'
        load_document(entry.format(0), "warm-up")
        timings = []
        for count in (4_000, 16_000):
            text = "".join(entry.format(i) for i in range(count))
            runs = []
            for _ in range(2):  # CPU time, the better of two: other processes do not count
                started = time.process_time()
                assert len(load_document(text, "x")) == count
                runs.append(time.process_time() - started)
            timings.append(min(runs))
        # four times the jobs: about four times the time (never the quadratic sixteen)
        assert timings[1] < 10 * max(timings[0], 0.05)

    def test_an_alias_free_file_is_never_said_to_expand_through_aliases(
        self, tmp_path: Path
    ) -> None:
        from scheduler_emulator.tools.documents import MAX_NODES, load_document

        text = "".join(f"- [{i}, {i}, {i}]\n" for i in range(MAX_NODES // 3))
        assert len(load_document(text, "x")) == MAX_NODES // 3


# ------------------------------------------------------------------------------- 9. small ones


def raw_request(port: int, head: str, body: bytes = b"") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode("latin-1") + body)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


class TestSmallOnes:
    def test_repeated_origin_content_type_and_length_headers_are_refused(
        self, tmp_path: Path
    ) -> None:
        body = json.dumps(full_job()).encode()
        with running_daemon("--in-memory") as daemon:
            _, port = daemon.host_port
            base = f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            length = f"Content-Length: {len(body)}\r\n"
            origin = raw_request(
                port,
                base
                + "Origin: http://127.0.0.1\r\nOrigin: http://evil.test\r\n"
                + "Content-Type: application/json\r\n"
                + length
                + "\r\n",
                body,
            )
            content_type = raw_request(
                port,
                base
                + "Content-Type: text/plain\r\nContent-Type: application/json\r\n"
                + length
                + "\r\n",
                body,
            )
            json_type = "Content-Type: application/json\r\n"
            # trial 176: two lengths, the last one won; a length that is no number read as none
            lengths = raw_request(
                port, base + json_type + f"Content-Length: 5\r\n{length}\r\n", body
            )
            word = raw_request(port, base + json_type + "Content-Length: abc\r\n\r\n", body)
            digits = f"Content-Length: {'1' * 4301}\r\n\r\n"  # (trial 181: past int()'s limit)
            huge = raw_request(port, base + json_type + digits, body)
            both = raw_request(  # (trial 177: a proxy may read the other one)
                port, base + json_type + length + "Transfer-Encoding: chunked\r\n\r\n", body
            )
            gzip = raw_request(  # (trial 181: read as chunked, or as no body)
                port, base + json_type + "Transfer-Encoding: gzip, chunked\r\n\r\n", body
            )
            listed = daemon.get(JOBS)
        assert gzip.startswith(b"HTTP/1.1 501"), gzip
        assert b'Transfer-Encoding \\"gzip, chunked\\" is not supported' in gzip, gzip
        assert origin.startswith(b"HTTP/1.1 403") and b"repeats the Origin header" in origin
        assert content_type.startswith(b"HTTP/1.1 400")
        assert b"repeats the Content-Type header" in content_type
        assert lengths.startswith(b"HTTP/1.1 400"), lengths
        assert b"repeats the Content-Length header" in lengths
        assert word.startswith(b"HTTP/1.1 400"), word
        assert both.startswith(b"HTTP/1.1 400") and b"both Content-Length and Transfer" in both
        assert b'whole number of bytes (at most 18 digits); got \\"abc\\".' in word, word
        assert huge.startswith(b"HTTP/1.1 400") and b"at most 18 digits); got" in huge
        assert len(huge) < 3000, huge[:300]  # (its 4,301 digits were sent back twice)
        assert listed == {}

    def test_a_414_is_the_json_error_envelope(self) -> None:
        with running_daemon("--in-memory") as daemon:
            _, port = daemon.host_port
            answer = raw_request(port, f"GET /{'a' * 70_000} HTTP/1.1\r\nHost: x\r\n\r\n")
            version = raw_request(port, "GET / HTTP/2.0\r\nHost: x\r\n\r\n")  # (trial 176)
            spaced = raw_request(port, "GET /_emulator/faults HTTP/1.1\r\nHost : x\r\n\r\n")
            lower = raw_request(port, "get /_emulator/faults HTTP/1.1\r\nHost: x\r\n\r\n")
            bare = raw_request(port, "GET /_emulator/faults HTTP/1.1\nHost: 127.0.0.1\n\n")
            no_host = raw_request(port, "GET /_emulator/faults HTTP/1.1\r\n\r\n")  # (trial 181)
            old_line = raw_request(port, "GET /_emulator/faults\r\n\r\n")
            nul = raw_request(
                port, "GET /_emulator/faults HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\0b\r\n\r\n"
            )
            health = (
                "GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            leading = raw_request(port, "\r\n" + health)  # (trial 181: closed, no answer)
            post = "POST /_emulator/faults HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            post += "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}\r\n"
            pipelined = raw_request(port, post + health)  # (an old client's CRLF after a body)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 414") and b"application/json" in head
        assert json.loads(body)["error"]["code"] == 414
        head, _, body = version.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), version  # a client's slip, not our 505
        assert json.loads(body)["error"] == {
            "code": 400, "message": "Invalid HTTP version (2.0).", "status": "INVALID_ARGUMENT"
        }  # fmt: skip
        # (trial 177: both were served, the first with the headers after it dropped)
        assert spaced.startswith(b"HTTP/1.1 400") and b'header line \\"Host : x\\"' in spaced
        assert lower.startswith(b"HTTP/1.1 400") and b'Unsupported method \\"get\\"' in lower
        assert no_host.startswith(b"HTTP/1.1 400") and b"needs a Host header" in no_host
        assert old_line.startswith(b"HTTP/1.1 400") and b"HTTP/0.9 request line" in old_line
        assert nul.startswith(b"HTTP/1.1 400") and b"holds a NUL character" in nul
        assert bare.startswith(b"HTTP/1.1 200") and b'"rules"' in bare  # at once, not in 10 s
        assert leading.startswith(b"HTTP/1.1 200"), leading
        assert pipelined.count(b"HTTP/1.1 ") == 2 and b'"ok"' in pipelined, pipelined

    def test_an_empty_admin_token_is_refused(self) -> None:
        result = run_cli("start", "--in-memory", "--port", "0", "--admin-token", "")
        assert_clean_exit_2(result, "--admin-token", "empty token")

    def test_duplicate_json_keys_are_refused(self, client: Client) -> None:
        body = '{"name": "a", "schedule": "0 2 * * *", "schedule": "0 3 * * *"}'
        response = post_raw(client, JOBS, body)
        assert response.status_code == 400
        assert 'Duplicate field "schedule"' in error_of(response)["message"]
        assert client.get(JOBS).json == {}

    def test_sigterm_with_in_memory_says_nothing_is_kept(self) -> None:
        with running_daemon("--in-memory") as daemon:
            daemon.process.send_signal(signal.SIGTERM)
            daemon.process.wait(30)
            assert daemon.process.stderr is not None
            err = daemon.process.stderr.read()
        assert daemon.process.returncode == 0
        assert "nothing was kept (--in-memory)" in err
        assert "retry config never" not in err and "Traceback" not in err


def test_a_huge_value_is_not_sent_back_whole(client: Client, emulator: Emulator) -> None:
    """A trial's 100,000-character update-mask path came back whole (over gRPC a 300 KB trailer
    the client refused, RESOURCE_EXHAUSTED instead of the INVALID_ARGUMENT), and so did a 60 KB
    location and path in their 404s."""
    emulator.create_job(nightly_job())
    for response, status in (
        (client.patch(f"{JOBS}/nightly?updateMask={'a' * 50_000}", json={}), 400),
        (client.get(f"/v1/projects/my-project/locations/{'a' * 60_000}"), 404),
        (client.get("/" + "a" * 60_000), 404),
    ):
        assert response.status_code == status
        assert len(response.data) < 2_000, response.data[:200]
    # trial 181: a 1 MB schedule or time zone came back whole, twice; a 4,000-character filter
    for job in (full_job(schedule="x" * 1_000_000), full_job(timeZone="y" * 1_000_000)):
        response = client.post(JOBS, json=job)
        assert response.status_code == 400 and len(response.data) < 5_000, response.data[:200]
    filtered = client.get(f"/v1/projects/my-project/locations?filter={'-' * 4000}a=b")
    assert filtered.status_code == 400 and len(filtered.data) < 5_000
    assert (
        "'yyyyyyyy"
        in client.post(JOBS, json=full_job(timeZone="y" * 100)).json["error"]["details"][0][
            "fieldViolations"
        ][0]["description"]
    )


def test_a_calendar_edge_and_a_deep_field_mask_are_400s_not_500s(client: Client) -> None:
    """Trial 181: the timeline's default window before end=0001-01-01 overflowed, and a field
    mask 1,000 parentheses deep ran out of stack: both answered 500 INTERNAL."""
    for end in ("0001-01-01T00:00:00Z", "0001-01-01T00:30:00Z"):
        answer = client.get(f"/_emulator/timeline?end={end}")
        assert answer.status_code in (200, 400) and "INTERNAL" not in answer.text, answer.text
    deep = client.get(f"{JOBS}?fields={'a(' * 1000}{')' * 1000}")
    assert deep.status_code == 400
    assert "parentheses nested deeper than 32" in error_of(deep)["message"]
    assert client.get(f"{JOBS}?fields={'a(' * 31}b{')' * 31}").status_code == 200
    # trial 181: a parameter these take none of was ignored; a 23-digit id "not a whole number"
    for path in ("/_emulator/clock?x=1", "/_emulator/config?x=1"):
        assert 'takes no parameter "x"' in error_of(client.get(path))["message"]
    long_id = error_of(client.get("/_emulator/attempts/" + "9" * 23))["message"]
    assert "a whole number of at most 18 digits" in long_id


@pytest.mark.timeout(60)
def test_a_chunked_body_sent_with_its_head_is_read_at_once() -> None:
    """A trial's chunked POST (curl -H 'Transfer-Encoding: chunked') waited 10 s and got a
    vague 400: the bytes that came with the head were kept by the connection front, and the
    worker reading the rest waited for them."""
    body = json.dumps(full_job()).encode()
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    with running_daemon("--in-memory") as daemon:
        _, port = daemon.host_port
        started = time.monotonic()
        answer = raw_request(
            port,
            f"POST {JOBS} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            chunked,
        )
        took = time.monotonic() - started
        # trial 181: a chunk extension (valid) was refused; a bad or huge size said nothing
        head = (
            f"POST {JOBS}:x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        extended = raw_request(
            port, head.replace(":x", "/nightly:pause"), b"2;a=b\r\n{}\r\n0\r\n\r\n"
        )
        bad = raw_request(port, head.replace(":x", ""), b"zz\r\n{}\r\n0\r\n\r\n")
        started = time.monotonic()
        huge = raw_request(port, head.replace(":x", ""), b"FFFFFFFF\r\n{}")
        huge_took = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert took < 5, took
    assert extended.startswith(b"HTTP/1.1 200") and b'"PAUSED"' in extended, extended[:300]
    assert bad.startswith(b"HTTP/1.1 400") and b'Invalid chunk size line \\"zz' in bad, bad
    assert huge.startswith(b"HTTP/1.1 400") and b"payload size exceeds" in huge, huge[:300]
    assert huge_took < 5, huge_took
