"""Bad input is a 4xx naming the field and the value (or exit 2 with one line), never a 500, a
traceback, a hang or a memory blow-up (issue 11, part A)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator
from scheduler_emulator.domain.codec import job_from_json, show_value
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.server.server import create_app
from scheduler_emulator.tools.cli import main
from tests.support import nightly_job

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
JSON = {"Content-Type": "application/json"}


def full_job(**overrides: Any) -> dict[str, Any]:
    """The nightly job with its full name, as CreateJob takes it."""
    return nightly_job(**overrides) | {
        "name": "projects/my-project/locations/us-central1/jobs/nightly"
    }


@pytest.fixture
def client(emulator: Emulator) -> Client:
    return Client(create_app(emulator))


def post(client: Client, path: str, text: str) -> Any:
    """POST ``text`` as it is (JSON escapes such as ``\\ud800`` reach the server unchanged)."""
    return client.post(path, data=text.encode(), headers=JSON)


def assert_invalid(response: Any, field: str, shown: str) -> None:
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.json["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    [violation] = error["details"][0]["fieldViolations"]
    assert violation["field"] == field
    assert shown in violation["description"]


class TestLoneSurrogates:
    @pytest.mark.parametrize(
        ("job", "field"),
        [
            pytest.param({"description": "\ud800"}, "description", id="description"),
            pytest.param(
                {"httpTarget": {"uri": "http://a.test/", "headers": {"X-A": "\ud800"}}},
                "httpTarget.headers.X-A",
                id="header-value",
            ),
            pytest.param(
                {"httpTarget": {"uri": "http://a.test/", "headers": {"X-\udc00": "v"}}},
                "httpTarget.headers.X-\\udc00",
                id="header-name",
            ),
            pytest.param(
                {"httpTarget": {"uri": "http://a.test/\ud800"}}, "httpTarget.uri", id="uri"
            ),
        ],
    )
    def test_create_refuses_a_lone_surrogate_naming_the_field(
        self, client: Client, job: dict[str, Any], field: str
    ) -> None:
        body = json.dumps(full_job(**job))  # ensure_ascii: the surrogate travels as \ud800
        assert "\\ud800" in body or "\\udc00" in body
        assert_invalid(post(client, JOBS, body), field, "\\u")

    def test_the_library_parser_refuses_one_too(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            job_from_json(
                full_job(name="projects/my-project/locations/l/jobs/j", description="\ud800")
            )
        assert caught.value.field == "description"
        assert "lone surrogate" in caught.value.violations[0].description

    def test_an_admin_body_with_one_is_refused(self, client: Client) -> None:
        assert_invalid(post(client, "/_emulator/clock:moveTo", '{"time": "\\ud800"}'), "time", "")


class TestNumbersAndTokens:
    def test_a_5000_digit_retry_count_is_invalid_argument(self, client: Client) -> None:
        body = json.dumps(full_job(retryConfig={"retryCount": "9" * 5000}))
        assert_invalid(post(client, JOBS, body), "retryConfig.retryCount", "32-bit integer")

    @pytest.mark.parametrize("token", ["²", "9" * 5000, "-1", "1e3"])
    def test_a_page_token_that_is_not_ours_is_invalid_argument(
        self, client: Client, token: str
    ) -> None:
        response = client.get(JOBS, query_string={"pageToken": token})
        assert response.status_code == 400
        assert response.json["error"]["details"][0]["fieldViolations"][0]["field"] == "pageToken"


class TestClockInput:
    @pytest.mark.parametrize(
        "seconds", ["Infinity", "-Infinity", "NaN", "1e20", "1e12", "315576000000"]
    )
    def test_advance_by_a_non_finite_or_too_far_amount_is_refused(
        self, client: Client, seconds: str
    ) -> None:
        response = post(client, "/_emulator/clock:advance", f'{{"seconds": {seconds}}}')
        assert_invalid(response, "seconds", "")
        assert client.get("/_emulator/clock").json["now"] == "2026-09-24T01:59:00Z"

    @pytest.mark.parametrize(
        "time", ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-01:00", "9999-12-31T12:00:00+01:00"]
    )
    def test_move_to_past_the_last_date_is_refused(self, client: Client, time: str) -> None:
        response = client.post("/_emulator/clock:moveTo", json={"time": time})
        assert_invalid(response, "time", "")


class TestMessagesStaySmall:
    def test_show_value_does_not_serialise_a_self_repeating_value(self) -> None:
        value: Any = ["lol"] * 10
        for _ in range(9):  # 10^9 strings if written out, as a YAML alias bomb builds
            value = [value] * 10
        tracemalloc.start()
        try:
            text = show_value(value)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(text) <= 80 and text.endswith("…")
        assert peak < 1_000_000

    def test_show_value_escapes_lone_surrogates(self) -> None:
        assert show_value("a\ud800") == '"a\\ud800"'


BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + BOMB


class TestJobsFilesAtStart:
    @pytest.mark.parametrize(
        ("name", "text", "reason"),
        [
            pytest.param("bomb.yaml", BOMB, "expands to more than", id="alias-bomb"),
            pytest.param("deep.yaml", "- " * 3000 + "x\n", "nested deeper", id="deep-yaml"),
            pytest.param("deep.json", "[" * 100_000 + "]" * 100_000, "nested", id="deep-json"),
            pytest.param(
                "surrogate.json",
                '[{"name": "a", "description": "\\ud800", "schedule": "0 2 * * *", '
                '"httpTarget": {"uri": "http://a.test/"}}]',
                'description must be valid Unicode text (no lone surrogate); got "\\ud800"',
                id="surrogate-json",
            ),
            pytest.param(
                "surrogate.yaml",
                'name: a\nschedule: "0 2 * * *"\nhttpTarget: {uri: "http://a.test/\\ud800"}\n',
                'httpTarget.uri must be valid Unicode text (no lone surrogate); got "http://a.t',
                id="surrogate-yaml",
            ),
        ],
    )
    def test_start_exits_2_with_one_line(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        name: str,
        text: str,
        reason: str,
    ) -> None:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        tracemalloc.start()
        try:
            code = main(["start", "--in-memory", "--port", "0", "--jobs", str(path)])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        err = capsys.readouterr().err
        assert code == 2
        assert err.count("\n") == 1 and err.startswith(f"error: {path}: ")
        assert reason in err
        assert peak < 200_000_000
