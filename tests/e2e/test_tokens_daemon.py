"""Tokens through the live daemon and real clients: google-auth and PyJWT
verify what the daemon sends with the keys it serves; a target checking the wrong audience
answers 401 and the execution log, the attempts and the job's status say UNAUTHENTICATED."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import google.auth.transport.requests
import jwt
import pytest
import requests
import yaml
from google.oauth2 import id_token

from scheduler_emulator import SystemClock
from scheduler_emulator.domain.attempts import iso
from scheduler_emulator.service import TokenError, verify_scheduler_token
from scheduler_emulator.service.auth import InvalidSignatureError, WrongAudienceError
from tests.daemon import MANUAL, Daemon, running_daemon, serving
from tests.support import Received, RecordingTarget

INVOKER = "scheduler-invoker@my-project.iam.gserviceaccount.com"
AUDIENCE = "https://orders-abc123-uc.a.run.app"
JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
AUTH_DEBUG_INFO = "URL_ERROR-ERROR_AUTHENTICATION. Original HTTP response code number = 401"


def job(name: str, uri: str, audience: str | None = None, **extra: Any) -> dict[str, Any]:
    """A job shaped like the Orders example's nightly job (``gcloud scheduler jobs create http
    nightly --oidc-service-account-email=… [--oidc-token-audience=…] --max-retry-attempts=3``)."""
    oidc = {"serviceAccountEmail": INVOKER}
    if audience is not None:
        oidc["audience"] = audience
    return {
        "name": name,
        "schedule": "0 2 * * *",
        "timeZone": "Etc/UTC",
        "httpTarget": {"uri": uri, "httpMethod": "POST", "oidcToken": oidc},
        "retryConfig": {"retryCount": 3},
        **extra,
    }


def write_jobs(path: Path, *jobs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(list(jobs)))
    return str(path)


def token_of(received: Received) -> str:
    scheme, token = received.headers["Authorization"].split(" ", 1)
    assert scheme == "Bearer"
    return token


def google_request() -> google.auth.transport.requests.Request:
    return google.auth.transport.requests.Request()


class TestGoogleAuthAcceptsTheDaemonsTokens:
    def test_seed_job_token_has_its_audience_and_the_whole_uri_without_one(
        self, tmp_path: Path
    ) -> None:
        target = RecordingTarget()
        with serving(target) as base:
            query_uri = f"{base}/_triggers/timer/nightly?x=1"
            jobs = write_jobs(
                tmp_path / "jobs.yaml",
                job("nightly", f"{base}/_triggers/timer/nightly", AUDIENCE),
                job("nightly-query", query_uri),
            )
            # The manual clock is far from now: stamp tokens with real time for google-auth.
            with running_daemon(
                "--jobs", jobs, "--in-memory", *MANUAL, "--token-time", "real"
            ) as daemon:
                assert ", OIDC tokens on real time, in memory" in daemon.first_line  # (trial 75)
                daemon.post("/_emulator/clock:advance", {"seconds": 120})
                by_query = {r.query: token_of(r) for r in target.requests}
                assert set(by_query) == {"", "x=1"}

                seed = id_token.verify_token(
                    by_query[""], google_request(), audience=AUDIENCE, certs_url=daemon.certs_url
                )
                assert (seed["aud"], seed["email"], seed["email_verified"]) == (
                    AUDIENCE,
                    INVOKER,
                    True,
                )
                assert seed["iss"] == "https://accounts.google.com"
                assert seed["exp"] - seed["iat"] == 3600

                whole = id_token.verify_token(
                    by_query["x=1"],
                    google_request(),
                    audience=query_uri,
                    certs_url=daemon.url + "/_emulator/oidc/v1/certs",  # the PEM format too
                )
                assert whole["aud"] == query_uri

                assert daemon.verify_oidc(by_query[""], AUDIENCE)["sub"] == seed["sub"]

    def test_pyjwt_finds_the_key_through_discovery(self, tmp_path: Path) -> None:
        target = RecordingTarget()
        with serving(target) as base:
            jobs = write_jobs(
                tmp_path / "jobs.yaml", job("nightly", f"{base}/_triggers/timer/nightly", AUDIENCE)
            )
            with running_daemon(
                "--jobs", jobs, "--in-memory", *MANUAL, "--token-time", "real"
            ) as daemon:
                daemon.post("/_emulator/clock:advance", {"seconds": 120})
                token = token_of(target.requests[0])
                discovery = daemon.get("/_emulator/oidc/.well-known/openid-configuration")
                assert discovery["jwks_uri"] == daemon.certs_url
                key = jwt.PyJWKClient(discovery["jwks_uri"]).get_signing_key_from_jwt(token)
                claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=AUDIENCE)
                assert claims["email"] == INVOKER

    def test_a_manual_clock_started_now_needs_no_real_token_time(self, tmp_path: Path) -> None:
        target = RecordingTarget()
        started = SystemClock().now().replace(microsecond=0)
        with serving(target) as base:
            jobs = write_jobs(
                tmp_path / "jobs.yaml", job("nightly", f"{base}/_triggers/timer/nightly", AUDIENCE)
            )
            with running_daemon(
                "--jobs", jobs, "--in-memory", "--clock", "manual", "--start", iso(started)
            ) as daemon:
                answer = daemon.post(f"{JOBS}/nightly:run", {})
                assert answer.status_code == 200, answer.text
                claims = id_token.verify_token(
                    token_of(target.wait_for(1)[0]),  # :run answers before the attempt
                    google_request(),
                    audience=AUDIENCE,
                    certs_url=daemon.certs_url,
                )
                assert claims["iat"] == started.timestamp()  # the manual clock did not move


class AudienceChecker:
    """A target that verifies the token for ``audience`` against ``certs_url`` (set once the
    daemon runs) and answers 401 when it does not verify."""

    def __init__(self) -> None:
        self.audience = ""
        self.certs_url = ""
        self.errors: list[TokenError] = []

    def __call__(self, received: Received) -> int:
        try:
            verify_scheduler_token(
                received.headers, audience=self.audience, certs_url=self.certs_url, email=INVOKER
            )
        except TokenError as exc:
            self.errors.append(exc)
            return 401
        return 200


def test_a_target_checking_its_base_url_answers_401_to_the_whole_uri_audience(
    tmp_path: Path,
) -> None:
    checker = AudienceChecker()
    target = RecordingTarget(status=checker)
    log = tmp_path / "executions.jsonl"
    with serving(target) as base:
        checker.audience = base
        jobs = write_jobs(
            tmp_path / "jobs.yaml",
            job("nightly", f"{base}/_triggers/timer/nightly?x=1", retryConfig={"retryCount": 0}),
            job("nightly-base", f"{base}/_triggers/timer/nightly", audience=base),
        )
        with running_daemon(
            "--jobs", jobs, "--in-memory", *MANUAL, "--token-time", "real", "--log-file", str(log)
        ) as daemon:
            checker.certs_url = daemon.certs_url
            daemon.post("/_emulator/clock:advance", {"seconds": 120})

            [refused] = checker.errors
            assert isinstance(refused, WrongAudienceError)
            assert refused.audience == f"{base}/_triggers/timer/nightly?x=1"

            [attempt] = daemon.attempts("nightly")
            assert (attempt["code"], attempt["responseStatus"]) == ("UNAUTHENTICATED", 401)
            assert attempt["debugInfo"] == AUTH_DEBUG_INFO
            assert attempt["request"]["headers"]["Authorization"].startswith("Bearer ey")
            assert [a["code"] for a in daemon.attempts("nightly-base")] == ["OK"]

            status = daemon.get(f"{JOBS}/nightly")["status"]
            assert status == {"code": 16, "message": AUTH_DEBUG_INFO}

    finished = [
        entry
        for entry in map(json.loads, log.read_text().splitlines())
        if entry["jsonPayload"]["@type"].endswith("AttemptFinished")
        and entry["resource"]["labels"]["job_id"] == "nightly"
    ]
    [entry] = finished
    assert entry["jsonPayload"]["status"] == "UNAUTHENTICATED"
    assert entry["jsonPayload"]["debugInfo"] == AUTH_DEBUG_INFO
    assert (entry["httpRequest"], entry["severity"]) == ({"status": 401}, "ERROR")


class TestKeys:
    def test_the_key_is_kept_in_the_data_dir_across_restarts(self, tmp_path: Path) -> None:
        data = tmp_path / "data"
        with running_daemon("--data-dir", str(data)) as first:
            kid = first.get("/_emulator/oidc/certs")["keys"][0]["kid"]
        key_file = data / "oidc-key.pem"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        with running_daemon("--data-dir", str(data)) as second:
            assert second.get("/_emulator/oidc/certs")["keys"][0]["kid"] == kid
            assert list(second.get("/_emulator/oidc/v1/certs")) == [kid]

    def test_a_key_file_that_is_not_a_key_stops_the_start(self, tmp_path: Path) -> None:
        data = tmp_path / "data"
        data.mkdir()
        (data / "oidc-key.pem").write_text("garbage")
        with pytest.raises(RuntimeError, match="oidc-key.pem is not an unencrypted PEM"):
            Daemon("--data-dir", str(data))

    def test_a_token_from_one_instance_fails_against_another_instances_certs(
        self, tmp_path: Path
    ) -> None:
        target = RecordingTarget()
        with serving(target) as base:
            jobs = write_jobs(
                tmp_path / "jobs.yaml", job("nightly", f"{base}/_triggers/timer/nightly", AUDIENCE)
            )
            with (
                running_daemon("--jobs", jobs, "--in-memory", "--token-time", "real") as first,
                running_daemon("--in-memory") as second,
            ):
                assert first.post(f"{JOBS}/nightly:run", {}).status_code == 200
                token = token_of(target.wait_for(1)[0])
                assert first.verify_oidc(token, AUDIENCE)["aud"] == AUDIENCE

                with pytest.raises(InvalidSignatureError, match="another emulator instance"):
                    second.verify_oidc(token, AUDIENCE)
                with pytest.raises(jwt.PyJWKClientError, match="Unable to find a signing key"):
                    id_token.verify_token(
                        token, google_request(), audience=AUDIENCE, certs_url=second.certs_url
                    )
                with pytest.raises(ValueError, match="Certificate for key id .* not found"):
                    id_token.verify_token(
                        token,
                        google_request(),
                        audience=AUDIENCE,
                        certs_url=second.url + "/_emulator/oidc/v1/certs",
                    )


def test_tokeninfo_describes_the_daemons_oauth_tokens(tmp_path: Path) -> None:
    target = RecordingTarget()
    with serving(target) as base:
        oauth_job: dict[str, Any] = job("pubsub-push", f"{base}/v1/topics/tick:publish")
        oauth_job["httpTarget"].pop("oidcToken")
        oauth_job["httpTarget"]["oauthToken"] = {"serviceAccountEmail": INVOKER}
        jobs = write_jobs(tmp_path / "jobs.yaml", oauth_job)
        with running_daemon("--jobs", jobs, "--in-memory", *MANUAL) as daemon:
            daemon.post("/_emulator/clock:advance", {"seconds": 120})
            token = token_of(target.requests[0])
            assert token.startswith("ya29.emulator.")
            info = daemon.tokeninfo(token)
            assert (info["email"], info["expires_in"]) == (INVOKER, "3540")
            unknown = requests.get(
                daemon.url + "/_emulator/oauth2/tokeninfo",
                params={"access_token": "ya29.emulator.nope"},
                timeout=30,
            )
            assert (unknown.status_code, unknown.json()["error"]) == (400, "invalid_token")
