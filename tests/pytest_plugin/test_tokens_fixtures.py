"""Tokens under the pytest fixtures: ``verify_oidc``, ``certs_url`` and ``tokeninfo`` of
``cloud_scheduler`` (virtual clock, in-process) and ``cloud_scheduler_server`` (live daemon)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import google.auth.transport.requests
import pytest
import requests
from google.oauth2 import id_token
from werkzeug.wrappers import Request, Response

from pytest_plugin.live import LiveScheduler
from pytest_plugin.scheduler import CloudScheduler
from scheduler_emulator.service import TokenError, verify_scheduler_token
from scheduler_emulator.service.auth import (
    ExpiredTokenError,
    InvalidSignatureError,
    WrongAudienceError,
)
from tests.daemon import serving
from tests.support import RecordingTarget

INVOKER = "scheduler-invoker@my-project.iam.gserviceaccount.com"
AUDIENCE = "https://orders-abc123-uc.a.run.app"
SERVICE = "http://orders.test"


def nightly(uri: str = f"{SERVICE}/_triggers/timer/nightly", **oidc: str) -> dict[str, Any]:
    return {
        "name": "nightly",
        "schedule": "0 2 * * *",
        "httpTarget": {
            "uri": uri,
            "oidcToken": {"serviceAccountEmail": INVOKER, **oidc},
        },
    }


class Service:
    """A mounted service that checks the token with ``check`` and answers 401 on a
    ``TokenError``; remembers the Authorization value and the outcome."""

    def __init__(self, check: Callable[[Request], Any]) -> None:
        self.check = check
        self.seen: list[tuple[str, str]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        try:
            self.check(request)
        except (TokenError, ValueError) as exc:
            self.seen.append((request.headers.get("Authorization", ""), repr(exc)))
            return Response(status=401)(environ, start_response)
        self.seen.append((request.headers.get("Authorization", ""), "ok"))
        return Response("ok")(environ, start_response)


@pytest.mark.cloud_scheduler(start=datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
class TestInProcess:
    def test_a_mounted_service_verifies_with_certs_url_on_the_virtual_clock(
        self, cloud_scheduler: CloudScheduler
    ) -> None:
        service = Service(
            lambda request: verify_scheduler_token(
                request, audience=AUDIENCE, certs_url=cloud_scheduler.certs_url, email=INVOKER
            )
        )
        cloud_scheduler.mount(SERVICE, service)
        cloud_scheduler.create_job(nightly(audience=AUDIENCE))
        cloud_scheduler.advance(timedelta(days=3))
        assert [outcome for _, outcome in service.seen] == ["ok", "ok", "ok"]
        cloud_scheduler.assert_attempted("nightly", count=3, code="OK")

    def test_google_auth_verifies_in_a_mounted_service_too(
        self, cloud_scheduler: CloudScheduler
    ) -> None:
        def check(request: Request) -> Any:
            token = request.headers["Authorization"].removeprefix("Bearer ")
            return id_token.verify_token(
                token,
                google.auth.transport.requests.Request(),
                audience=AUDIENCE,
                certs_url=cloud_scheduler.certs_url,
            )

        service = Service(check)
        cloud_scheduler.mount(SERVICE, service)
        cloud_scheduler.create_job(nightly(audience=AUDIENCE))
        cloud_scheduler.advance(timedelta(minutes=2))
        assert [outcome for _, outcome in service.seen] == ["ok"]

    def test_a_service_expecting_its_base_url_refuses_the_uri_audience(
        self, cloud_scheduler: CloudScheduler
    ) -> None:
        service = Service(
            lambda request: verify_scheduler_token(
                request, audience=SERVICE, certs_url=cloud_scheduler.certs_url
            )
        )
        cloud_scheduler.mount(SERVICE, service)
        cloud_scheduler.create_job(nightly(uri=f"{SERVICE}/_triggers/timer/nightly?x=1"))
        cloud_scheduler.advance(timedelta(minutes=2))
        [attempt] = cloud_scheduler.assert_attempted("nightly", count=1, code="UNAUTHENTICATED")
        assert attempt.debug_info == (
            "URL_ERROR-ERROR_AUTHENTICATION. Original HTTP response code number = 401"
        )
        assert "WrongAudienceError" in service.seen[0][1]
        status = cloud_scheduler.get_job("nightly").status
        assert status is not None and (status.code, status.message) == (16, attempt.debug_info)

    def test_verify_oidc_checks_on_the_virtual_clock_and_sees_expiry(
        self, cloud_scheduler: CloudScheduler
    ) -> None:
        target = RecordingTarget()
        cloud_scheduler.mount(SERVICE, target)
        cloud_scheduler.create_job(nightly())
        cloud_scheduler.advance(timedelta(minutes=2))
        [attempt] = cloud_scheduler.attempts("nightly")
        authorization = attempt.request["headers"]["Authorization"]

        claims = cloud_scheduler.verify_oidc(authorization, f"{SERVICE}/_triggers/timer/nightly")
        assert claims["iat"] == int(datetime(2026, 9, 24, 2, tzinfo=UTC).timestamp())
        with pytest.raises(WrongAudienceError):
            cloud_scheduler.verify_oidc(authorization, SERVICE)

        cloud_scheduler.advance(timedelta(hours=2))
        with pytest.raises(ExpiredTokenError, match="expired at 2026-09-24T03:00:00Z"):
            cloud_scheduler.verify_oidc(authorization, f"{SERVICE}/_triggers/timer/nightly")

    def test_a_token_of_another_emulator_does_not_verify(
        self, cloud_scheduler: CloudScheduler
    ) -> None:
        other = CloudScheduler(cloud_scheduler.now())
        try:
            token = other.tokens.id_token(INVOKER, AUDIENCE, other.now())
            assert other.verify_oidc(token, AUDIENCE)["email"] == INVOKER
            with pytest.raises(InvalidSignatureError):
                cloud_scheduler.verify_oidc(token, AUDIENCE)
        finally:
            other.close()

    def test_tokeninfo_describes_an_oauth_token(self, cloud_scheduler: CloudScheduler) -> None:
        target = RecordingTarget()
        cloud_scheduler.mount(SERVICE, target)
        job = nightly()
        job["httpTarget"]["oauthToken"] = {"serviceAccountEmail": INVOKER}
        del job["httpTarget"]["oidcToken"]
        cloud_scheduler.create_job(job)
        cloud_scheduler.advance(timedelta(minutes=2))
        info = cloud_scheduler.tokeninfo(target.requests[0].headers["Authorization"])
        assert (info["email"], info["expires_in"]) == (INVOKER, "3540")
        token = target.requests[0].headers["Authorization"].removeprefix("Bearer ")
        asked = requests.get(cloud_scheduler.tokeninfo_url, {"access_token": token}, timeout=30)
        assert asked.json() == info  # (trial 147: an app under test had no URL to ask)
        cloud_scheduler.advance(timedelta(hours=1))
        with pytest.raises(AssertionError, match="invalid_token"):
            cloud_scheduler.tokeninfo(target.requests[0].headers["Authorization"])

    def test_certs_url_serves_this_emulators_key(self, cloud_scheduler: CloudScheduler) -> None:
        answer = requests.get(cloud_scheduler.certs_url, timeout=30).json()
        assert [key["kid"] for key in answer["keys"]] == [cloud_scheduler.tokens.key.kid]


def test_the_live_server_verifies_its_tokens_on_its_clock(
    cloud_scheduler_server: LiveScheduler,
) -> None:
    target = RecordingTarget()
    with serving(target) as base:
        client = requests.Session()
        created = client.post(
            f"{cloud_scheduler_server.url}/v1/projects/my-project/locations/us-central1/jobs",
            json=nightly(uri=f"{base}/_triggers/timer/nightly", audience=AUDIENCE)
            | {"name": "projects/my-project/locations/us-central1/jobs/nightly"},
            timeout=30,
        )
        assert created.status_code == 200, created.text
        cloud_scheduler_server.advance(timedelta(hours=2, minutes=1))
    authorization = target.requests[0].headers["Authorization"]
    claims = cloud_scheduler_server.verify_oidc(authorization, AUDIENCE)  # at 02:01
    assert claims["email"] == INVOKER
    assert cloud_scheduler_server.certs_url.endswith("/_emulator/oidc/certs")
    cloud_scheduler_server.advance(timedelta(hours=1))
    with pytest.raises(ExpiredTokenError, match="it is now 2026-01-01T03:01:00Z"):
        cloud_scheduler_server.verify_oidc(authorization, AUDIENCE)
