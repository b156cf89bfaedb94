"""``verify_scheduler_token`` and ``SchedulerTokenMiddleware``: what a service does with the
token Cloud Scheduler sends (https://cloud.google.com/scheduler/docs/http-target-auth).
Tokens come from a local ``TokenAuthority``."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import flask
import jwt
import pytest
from freezegun import freeze_time
from werkzeug.test import Client, EnvironBuilder
from werkzeug.wrappers import Request, Response

from scheduler_emulator import ManualClock
from scheduler_emulator.runtime.delivery.tokens import SigningKey, TokenAuthority
from scheduler_emulator.service import (
    CertsUnavailableError,
    SchedulerTokenAsgiMiddleware,
    SchedulerTokenMiddleware,
    TimerRequest,
    TokenError,
    verify_scheduler_token,
    verify_scheduler_token_async,
)
from scheduler_emulator.service.auth import (
    CLAIMS_ENVIRON_KEY,
    ExpiredTokenError,
    InvalidSignatureError,
    MalformedTokenError,
    MissingTokenError,
    TokenNotYetValidError,
    WrongAudienceError,
    WrongEmailError,
    WrongIssuerError,
    bearer_token,
    clear_certs_cache,
    verify_id_token,
)
from scheduler_emulator.service.errors import TargetError
from tests.daemon import serving

INVOKER = "scheduler-invoker@my-project.iam.gserviceaccount.com"
AUDIENCE = "https://orders-abc123-uc.a.run.app"
ISSUED = datetime(2026, 9, 24, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey.generate()


@pytest.fixture
def authority(key: SigningKey) -> TokenAuthority:
    return TokenAuthority(ManualClock(ISSUED), key=key)


@pytest.fixture
def token(authority: TokenAuthority) -> str:
    return authority.id_token(INVOKER, AUDIENCE)


@pytest.fixture(autouse=True)
def _fresh_certs_cache() -> Iterator[None]:
    clear_certs_cache()
    yield
    clear_certs_cache()


def verify(token: str, authority: TokenAuthority, **options: Any) -> dict[str, Any]:
    """Verify against the authority's keys at ISSUED + 1 minute unless told otherwise."""
    options.setdefault("audience", AUDIENCE)
    options.setdefault("now", ISSUED + timedelta(minutes=1))
    return verify_id_token(token, keys=authority.jwks(), **options)


class TestBearerToken:
    @pytest.mark.parametrize(
        "make",
        [
            pytest.param(
                lambda v: Request(EnvironBuilder(headers={"Authorization": v}).get_environ()),
                id="werkzeug-request",
            ),
            pytest.param(lambda v: TimerRequest(headers={"authorization": v}), id="timer-request"),
            pytest.param(lambda v: {"AUTHORIZATION": v}, id="headers-mapping"),
            pytest.param(
                lambda v: EnvironBuilder(headers={"Authorization": v}).get_environ(),
                id="wsgi-environ",
            ),
            pytest.param(lambda v: v, id="header-value"),
            pytest.param(lambda v: v.removeprefix("Bearer "), id="bare-token"),
        ],
    )
    def test_the_token_is_read_from_any_request_shape(self, make: Callable[[str], Any]) -> None:
        assert bearer_token(make("Bearer abc.def.ghi")) == "abc.def.ghi"

    def test_a_flask_request_works(self) -> None:
        app = flask.Flask("t")
        with app.test_request_context(headers={"Authorization": "bearer abc.def.ghi"}):
            assert bearer_token(flask.request) == "abc.def.ghi"

    @pytest.mark.parametrize(
        ("headers", "message"),
        [
            pytest.param({}, "has no Authorization header", id="absent"),
            pytest.param({"Authorization": "Basic dTpw"}, "not 'Bearer <token>'", id="basic"),
            pytest.param({"Authorization": "Bearer "}, "no token after 'Bearer'", id="empty"),
        ],
    )
    def test_no_bearer_token_is_a_missing_token_error(
        self, headers: dict[str, str], message: str
    ) -> None:
        with pytest.raises(MissingTokenError, match=message):
            verify_scheduler_token(TimerRequest(headers=headers), audience=AUDIENCE, keys={})


class TestVerification:
    def test_a_valid_token_gives_its_claims(self, token: str, authority: TokenAuthority) -> None:
        claims = verify(token, authority, email=INVOKER.upper())
        assert (claims["aud"], claims["email"]) == (AUDIENCE, INVOKER)

    def test_a_token_from_another_emulator_instance_is_mis_signed(self, token: str) -> None:
        other = TokenAuthority(ManualClock(ISSUED))
        with pytest.raises(InvalidSignatureError, match="another emulator instance"):
            verify(token, other)

    def test_a_tampered_token_is_mis_signed(self, token: str, authority: TokenAuthority) -> None:
        header, payload, signature = token.split(".")
        claims = jwt.decode(token, options={"verify_signature": False})
        claims["email"] = "attacker@evil.test"
        forged = jwt.encode(claims, "k" * 32, algorithm="HS256").split(".")[1]
        with pytest.raises(InvalidSignatureError, match="does not verify"):
            verify(f"{header}.{forged}.{signature}", authority)

    def test_a_token_not_signed_with_rs256_is_refused(self, authority: TokenAuthority) -> None:
        claims = jwt.decode(
            authority.id_token(INVOKER, AUDIENCE), options={"verify_signature": False}
        )
        hs256 = jwt.encode(claims, "k" * 32, algorithm="HS256")
        with pytest.raises(InvalidSignatureError, match="signed with 'HS256'"):
            verify(hs256, authority)

    def test_garbage_is_a_malformed_token(self, authority: TokenAuthority) -> None:
        with pytest.raises(MalformedTokenError, match="not a JWT"):
            verify("Bearer not-a-jwt", authority)

    def test_two_hours_after_iat_the_token_has_expired(
        self, token: str, authority: TokenAuthority
    ) -> None:
        with pytest.raises(ExpiredTokenError) as error:
            verify(token, authority, now=ISSUED + timedelta(hours=2))
        assert error.value.expired_at == ISSUED + timedelta(hours=1)
        assert "expired at 2026-09-24T03:00:00Z; it is now 2026-09-24T04:00:00Z" in str(error.value)
        # checked at a given instant (a virtual clock, in process): advice for that case
        assert "check it at a now within that hour" in str(error.value)
        assert "--token-time real" not in str(error.value)

    def test_a_token_checked_at_real_time_suggests_token_time_real(
        self, token: str, authority: TokenAuthority
    ) -> None:
        with freeze_time(ISSUED + timedelta(hours=2)), pytest.raises(ExpiredTokenError) as error:
            verify(token, authority, now=None)  # now=None: the real clock (frozen here)
        assert "start the emulator with --token-time real" in str(error.value)

    def test_a_token_checked_with_googles_keys_gets_no_advice_about_the_emulator(
        self, token: str, authority: TokenAuthority, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Trial 185: the same helper runs in production, where the advice is beside the point."""
        import scheduler_emulator.service.auth as auth

        monkeypatch.setattr(auth, "fetch_certs", lambda url: authority.jwks())
        for now, error in ((2, ExpiredTokenError), (-1, TokenNotYetValidError)):
            with freeze_time(ISSUED + timedelta(hours=now)), pytest.raises(error) as raised:
                verify_id_token(token, audience=AUDIENCE)  # certs_url: Google's
            assert str(raised.value).endswith("Z).") or str(raised.value).endswith("Z."), raised
            assert "emulator" not in str(raised.value)

    def test_a_token_from_the_future_is_not_yet_valid(
        self, token: str, authority: TokenAuthority
    ) -> None:
        with pytest.raises(TokenNotYetValidError, match="issued at 2026-09-24T02:00:00Z"):
            verify(token, authority, now=ISSUED - timedelta(seconds=30))

    def test_leeway_allows_a_small_clock_difference(
        self, token: str, authority: TokenAuthority
    ) -> None:
        late = ISSUED + timedelta(hours=1, seconds=20)
        assert verify(token, authority, now=late, leeway=timedelta(seconds=30))["iat"]
        assert verify(token, authority, now=ISSUED - timedelta(seconds=20), leeway=30)["iat"]

    def test_the_wrong_audience_names_both(self, authority: TokenAuthority) -> None:
        uri = "http://127.0.0.1:8000/_triggers/timer/nightly?x=1"
        token = authority.id_token(INVOKER, uri)
        with pytest.raises(WrongAudienceError) as error:
            verify(token, authority, audience="http://127.0.0.1:8000")
        assert error.value.audience == uri
        assert error.value.expected == ["http://127.0.0.1:8000"]
        assert f"audience is {uri!r}, not 'http://127.0.0.1:8000'" in str(error.value)

    def test_one_of_several_audiences_is_enough(
        self, token: str, authority: TokenAuthority
    ) -> None:
        assert verify(token, authority, audience=["https://other.test", AUDIENCE])

    def test_another_issuer_is_refused_unless_accepted(self, key: SigningKey) -> None:
        custom = TokenAuthority(ManualClock(ISSUED), key=key, issuer="http://emulator.test")
        token = custom.id_token(INVOKER, AUDIENCE)
        with pytest.raises(WrongIssuerError, match="'http://emulator.test', not"):
            verify(token, custom)
        assert verify(token, custom, issuers=["http://emulator.test"])

    def test_another_service_account_is_refused(
        self, token: str, authority: TokenAuthority
    ) -> None:
        with pytest.raises(WrongEmailError, match=f"minted for {INVOKER!r}"):
            verify(token, authority, email="other@my-project.iam.gserviceaccount.com")

    def test_every_token_error_is_an_emulator_error_answered_with_401(self) -> None:
        assert issubclass(TokenError, TargetError)
        assert TokenError.http_status == 401
        assert not issubclass(CertsUnavailableError, TokenError)

    def test_a_naive_now_is_refused(self, token: str, authority: TokenAuthority) -> None:
        with pytest.raises(ValueError, match="timezone-aware"):
            verify(token, authority, now=datetime(2026, 9, 24, 2, 1))

    def test_without_now_the_current_time_is_used_and_freezegun_moves_it(
        self, token: str, authority: TokenAuthority
    ) -> None:
        with freeze_time(ISSUED + timedelta(minutes=5)):
            assert verify(token, authority, now=None)["email"] == INVOKER
        with (
            freeze_time(ISSUED + timedelta(hours=2)),
            pytest.raises(ExpiredTokenError),
        ):
            verify(token, authority, now=None)


@dataclass
class CertsServer:
    """Serves ``body`` as JSON at any path and counts the fetches."""

    body: Any
    fetches: int = 0
    raw: bytes | None = None
    paths: list[str] = field(default_factory=list)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        self.fetches += 1
        self.paths.append(environ["PATH_INFO"])
        data = self.raw if self.raw is not None else json.dumps(self.body).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [data]


class TestCertsUrl:
    @pytest.mark.parametrize("form", ["jwks", "x509"])
    def test_both_google_formats_verify(
        self, form: str, token: str, authority: TokenAuthority
    ) -> None:
        body = authority.jwks() if form == "jwks" else authority.x509_certs()
        with serving(CertsServer(body)) as url:  # type: ignore[arg-type]
            claims = verify_scheduler_token(
                f"Bearer {token}",
                audience=AUDIENCE,
                certs_url=url + "/certs",
                now=ISSUED,
            )
        assert claims["email"] == INVOKER

    def test_keys_are_fetched_once_and_reused(self, token: str, authority: TokenAuthority) -> None:
        server = CertsServer(authority.jwks())
        with serving(server) as url:  # type: ignore[arg-type]
            for _ in range(3):
                verify_scheduler_token(token, audience=AUDIENCE, certs_url=url, now=ISSUED)
        assert server.fetches == 1

    def test_an_unknown_key_id_fetches_the_keys_again(
        self, token: str, authority: TokenAuthority
    ) -> None:
        rotated = TokenAuthority(ManualClock(ISSUED))
        server = CertsServer(rotated.jwks())
        with serving(server) as url:  # type: ignore[arg-type]
            verify_scheduler_token(
                rotated.id_token(INVOKER, AUDIENCE), audience=AUDIENCE, certs_url=url, now=ISSUED
            )
            server.body = authority.jwks()  # the emulator restarted with another key
            verify_scheduler_token(token, audience=AUDIENCE, certs_url=url, now=ISSUED)
        assert server.fetches == 2

    def test_an_unreachable_certs_url_is_not_a_token_error(self, token: str) -> None:
        with pytest.raises(CertsUnavailableError, match="Could not fetch the certificates"):
            verify_scheduler_token(token, audience=AUDIENCE, certs_url="http://127.0.0.1:9/c")

    def test_certs_that_are_not_json_are_unavailable(self, token: str) -> None:
        server = CertsServer(None, raw=b"<html>")
        with (
            serving(server) as url,  # type: ignore[arg-type]
            pytest.raises(CertsUnavailableError, match="not JSON"),
        ):
            verify_scheduler_token(token, audience=AUDIENCE, certs_url=url)


class TestMiddleware:
    @pytest.fixture
    def client(self, authority: TokenAuthority) -> Client:
        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            claims = environ.get(CLAIMS_ENVIRON_KEY)
            body = json.dumps(claims["email"] if claims else None)
            return Response(body, mimetype="application/json")(environ, start_response)

        protected = SchedulerTokenMiddleware(app, audience=AUDIENCE, keys=authority.jwks())
        return Client(protected)

    def test_a_timer_request_with_a_valid_token_passes_with_its_claims(
        self, client: Client, token: str
    ) -> None:
        with freeze_time(ISSUED):
            response = client.post(
                "/_triggers/timer/nightly", headers={"Authorization": f"Bearer {token}"}
            )
        assert (response.status_code, response.json) == (200, INVOKER)

    def test_a_timer_request_without_token_gets_an_empty_401_and_a_warning(
        self, client: Client, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.WARNING, logger="scheduler_emulator.service")
        response = client.post("/_triggers/timer/nightly")
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
        assert response.data == b""
        [record] = caplog.records
        assert record.getMessage().startswith(
            "POST /_triggers/timer/nightly refused with 401: The request has no Authorization"
        )

    def test_other_paths_are_not_checked(self, client: Client) -> None:
        assert client.get("/sweeps").status_code == 200

    def test_a_discovery_document_as_certs_url_is_named_with_its_jwks_uri(
        self, authority: TokenAuthority, token: str
    ) -> None:
        """Trial 208: it read as certificates that were neither format, its URL unnamed."""
        discovery = authority.discovery("http://127.0.0.1:8095")
        answer = Response(json.dumps(discovery), mimetype="application/json")
        with serving(answer) as url, pytest.raises(CertsUnavailableError) as caught:
            verify_id_token(token, audience=AUDIENCE, certs_url=url + "/openid")
        assert str(caught.value) == (
            f"{url}/openid is an OpenID discovery document, not keys: give its jwks_uri, "
            f"{discovery['jwks_uri']}, as certs_url."
        )

    def test_certs_that_cannot_be_fetched_give_503(self, token: str) -> None:
        app = SchedulerTokenMiddleware(
            Response("never"), audience=AUDIENCE, certs_url="http://127.0.0.1:9/certs"
        )
        response = Client(app).post(
            "/_triggers/timer/nightly", headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 503
        assert response.text.startswith(  # (trial 205: a bare 503 in the attempts)
            "Could not fetch the certificates at http://127.0.0.1:9/certs: "
        )

    def test_an_asgi_app_gets_the_same_answers_from_the_asgi_middleware(
        self, authority: TokenAuthority, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Trial 185: the WSGI middleware took a FastAPI app and every request was a 500. (Keys
        are checked in a worker thread, where freezegun shows real time: a token of now.)"""
        token = authority.id_token(INVOKER, AUDIENCE, at=datetime.now(UTC))
        import asyncio

        import httpx
        from starlette.applications import Starlette
        from starlette.requests import Request as StarletteRequest
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def claims(request: StarletteRequest) -> JSONResponse:
            return JSONResponse((request.scope.get(CLAIMS_ENVIRON_KEY) or {}).get("email"))

        app = Starlette(routes=[Route("/{path:path}", claims, methods=["GET", "POST"])])
        with pytest.raises(TypeError, match="is an ASGI app .* SchedulerTokenAsgiMiddleware"):
            SchedulerTokenMiddleware(app, audience=AUDIENCE, keys=authority.jwks())
        app.add_middleware(SchedulerTokenAsgiMiddleware, audience=AUDIENCE, keys=authority.jwks())
        caplog.set_level(logging.WARNING, logger="scheduler_emulator.service")

        async def requests() -> list[httpx.Response]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
                bearer = {"Authorization": f"Bearer {token}"}
                return [
                    await client.post("/_triggers/timer/nightly", headers=bearer),
                    await client.post("/_triggers/timer/nightly"),
                    await client.get("/sweeps"),
                ]

        accepted, refused, other = asyncio.run(requests())
        assert (accepted.status_code, accepted.json()) == (200, INVOKER)
        assert (refused.status_code, refused.content) == (401, b"")
        assert refused.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
        assert (other.status_code, other.json()) == (200, None)
        [record] = caplog.records
        assert record.getMessage().startswith(
            "POST /_triggers/timer/nightly refused with 401: The request has no Authorization"
        )

    def test_a_router_put_in_front_of_a_token_check_is_refused_not_left_open(
        self, authority: TokenAuthority
    ) -> None:
        """Trial 188: the token middleware added before ``init_app`` let every timer request
        through unchecked, Flask and FastAPI alike."""
        from starlette.applications import Starlette

        from scheduler_emulator.service import TimerRouter

        router, keys = TimerRouter(), {"audience": AUDIENCE, "keys": authority.jwks()}
        flask_app = flask.Flask("svc")
        flask_app.wsgi_app = SchedulerTokenMiddleware(flask_app.wsgi_app, **keys)  # type: ignore[method-assign]
        starlette_app = Starlette()
        starlette_app.add_middleware(SchedulerTokenAsgiMiddleware, **keys)
        for app in (flask_app, starlette_app):
            with pytest.raises(ValueError, match=r"call router.init_app\(app\) .* first, then"):
                router.init_app(app)
        with pytest.raises(ValueError, match="already checks tokens"):
            router.wsgi(flask_app.wsgi_app)
        with pytest.raises(ValueError, match="already checks tokens"):  # (trial 194: wrapped
            router.wsgi(flask_app)  # the Flask app itself, or FastAPI's with its middleware)
        with pytest.raises(ValueError, match="already checks tokens"):
            router.asgi(starlette_app)
        ordered = flask.Flask("svc")  # the documented order works
        router.init_app(ordered)
        ordered.wsgi_app = SchedulerTokenMiddleware(ordered.wsgi_app, **keys)  # type: ignore[method-assign]
        assert Client(ordered).post("/_triggers/timer/nightly").status_code == 401

    def test_a_prefix_that_would_leave_timer_routes_unchecked_is_refused(
        self, authority: TokenAuthority
    ) -> None:
        """Trial 194: a router under ``/tasks/`` behind the default ``/_triggers/`` prefix, and a
        prefix without its leading slash, let every timer request through."""
        from scheduler_emulator.service import TimerRouter

        keys = {"audience": AUDIENCE, "keys": authority.jwks()}
        tasks = flask.Flask("svc")
        TimerRouter(prefix="/tasks/").init_app(tasks)
        with pytest.raises(ValueError, match="timer router serves '/tasks/'"):
            SchedulerTokenMiddleware(tasks.wsgi_app, **keys)
        assert SchedulerTokenMiddleware(tasks.wsgi_app, prefix="/tasks/", **keys)
        assert SchedulerTokenMiddleware(tasks.wsgi_app, prefix="/", **keys)
        with pytest.raises(ValueError, match="prefix '_triggers/' would leave"):
            SchedulerTokenMiddleware(Response("x"), prefix="_triggers/", **keys)
        with pytest.raises(ValueError, match=r"to check one timer only, call verify_scheduler_"):
            SchedulerTokenMiddleware(tasks.wsgi_app, prefix="/tasks/nightly", **keys)  # (224)
        late = flask.Flask("svc")  # a router added to the app after the middleware wraps it
        outer = SchedulerTokenMiddleware(late, **keys)
        TimerRouter(prefix="/tasks/").init_app(late)
        with pytest.raises(ValueError, match="timer router serves '/tasks/'"):  # (trial 196)
            Client(outer).post("/tasks/nightly")  # refused at the first request, not served
        with pytest.raises(TypeError, match="is a WSGI app: wrap it in SchedulerTokenMiddleware"):
            SchedulerTokenAsgiMiddleware(flask.Flask("svc"), **keys)

    def test_a_refusal_logs_a_path_with_a_newline_escaped(
        self, client: Client, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Trial 194: a decoded newline in the path forged a second log line."""
        caplog.set_level(logging.WARNING, logger="scheduler_emulator.service")
        client.post("/_triggers/timer/x%0AINFO:forged%20accepted")
        [record] = caplog.records
        assert "\n" not in record.getMessage()
        assert record.getMessage().startswith("POST /_triggers/timer/x\\nINFO:forged accepted ")

    def test_a_missing_audience_or_unknown_keyword_fails_at_construction(self) -> None:
        with pytest.raises(TypeError, match="audience"):
            SchedulerTokenMiddleware(Response("never"))  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="audiance"):
            SchedulerTokenMiddleware(Response("never"), audience=AUDIENCE, audiance="typo")  # type: ignore[call-arg]

    def test_a_misspelt_keyword_is_named_in_the_callers_name_with_the_one_meant(self) -> None:
        """Trial 205: ``audiance=`` read as a missing ``audience`` and ``verify_id_token()``'s."""
        meant = r"\(\) got an unexpected keyword argument 'audiance'; did you mean 'audience'\?$"
        with pytest.raises(TypeError, match="^SchedulerTokenMiddleware" + meant):
            SchedulerTokenMiddleware(Response("never"), audiance=AUDIENCE)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="^verify_scheduler_token" + meant):
            verify_scheduler_token("t", audiance=AUDIENCE)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="^verify_scheduler_token_async" + meant):
            asyncio.run(verify_scheduler_token_async("t", audiance=AUDIENCE))  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"^verify_scheduler_token\(\) is missing its required"):
            verify_scheduler_token("t")  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"'zzz' \(it takes audience, certs_url, keys, "):
            SchedulerTokenMiddleware(Response("never"), audience=AUDIENCE, zzz=1)  # type: ignore[call-arg]

    def test_an_email_given_as_none_is_refused_as_it_would_accept_every_account(self) -> None:
        """Trial 203: ``email=os.environ.get("INVOKER")``, unset, let any account's token in."""
        with pytest.raises(ValueError, match=r"^email=None \(from an unset environment"):
            SchedulerTokenMiddleware(Response("never"), audience=AUDIENCE, email=None)
        SchedulerTokenMiddleware(Response("never"), audience=AUDIENCE)  # left out: any account

    @pytest.mark.parametrize(
        ("checks", "named"),
        [
            ({"audience": None}, "audience=None"),  # an unset environment variable
            ({"audience": ""}, "audience=''"),
            ({"audience": [AUDIENCE, 7]}, "audience=["),
            ({"email": 5}, "email=5"),
            ({"issuers": []}, "issuers=[]"),
            ({"leeway": "5"}, "leeway='5'"),
            ({"leeway": -1}, "leeway=-1"),
            ({"certs_url": None}, "certs_url=None (from an unset environment variable?)"),
            # (trial 208: it failed each request, unknown url type)
            ({"certs_url": "127.0.0.1:8095/_emulator/oidc/certs"}, "certs_url='127.0.0.1:8095/"),
        ],
    )
    def test_a_check_no_token_could_pass_fails_at_construction_naming_it(
        self, checks: dict[str, Any], named: str
    ) -> None:
        """It had failed every timer request with a 500 (and verify_id_token with a TypeError)."""
        checks = {"audience": AUDIENCE, **checks}
        with pytest.raises(ValueError, match=f"^{re.escape(named)}"):
            SchedulerTokenMiddleware(Response("never"), **checks)
        with pytest.raises(ValueError, match=f"^{re.escape(named)}"):
            verify_id_token("x", **checks)


@pytest.mark.parametrize(
    "name",
    [
        "ExpiredTokenError",
        "InvalidSignatureError",
        "MalformedTokenError",
        "MissingTokenError",
        "TokenNotYetValidError",
        "WrongAudienceError",
        "WrongEmailError",
        "WrongIssuerError",
    ],
)
def test_every_token_error_the_docs_name_is_importable_from_the_target_package(name: str) -> None:
    import scheduler_emulator.service as target
    import scheduler_emulator.service.auth as auth

    assert getattr(target, name) is getattr(auth, name)
    assert name in target.__all__
