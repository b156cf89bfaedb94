"""OIDC and OAuth tokens on HTTP targets (https://cloud.google.com/scheduler/docs/http-target-auth;
our pinned rule: also to ``http://`` URIs): keys, claims, delivery,
the /_emulator/oidc and /_emulator/oauth2 endpoints. In-process; the daemon is in
``test_tokens_daemon.py``."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator, ManualClock, SystemClock, WsgiTransport
from scheduler_emulator.domain.codec import job_from_json
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.runtime.delivery.tokens import (
    ACCESS_TOKEN_PREFIX,
    SigningKey,
    TokenAuthority,
    id_token_claims,
    service_account_id,
    token_audience,
)
from scheduler_emulator.server.server import create_app
from scheduler_emulator.service.auth import load_keys, verify_id_token
from scheduler_emulator.tools.cli import build_parser
from scheduler_emulator.wire import GOOGLE_ISSUER, NaiveDatetimeError
from tests.support import TARGET, RecordingTarget, nightly_job

INVOKER = "scheduler-invoker@my-project.iam.gserviceaccount.com"
AUDIENCE = "https://orders-abc123-uc.a.run.app"
OIDC = {"serviceAccountEmail": INVOKER, "audience": AUDIENCE}


@pytest.fixture(scope="module")
def key() -> SigningKey:
    """One RSA key for the module (generating one takes tens of milliseconds)."""
    return SigningKey.generate()


@pytest.fixture
def authority(clock: ManualClock, key: SigningKey) -> TokenAuthority:
    return TokenAuthority(clock, key=key)


@pytest.fixture
def emulator(
    clock: ManualClock, target: RecordingTarget, authority: TokenAuthority
) -> Iterator[Emulator]:
    """The conftest emulator, minting with the module's key."""
    emu = Emulator(clock, transport=WsgiTransport(target), tokens=authority)
    yield emu
    emu.close()


def http_job(**target: Any) -> dict[str, Any]:
    return nightly_job(httpTarget={"uri": TARGET, "httpMethod": "POST", **target})


def bearer(headers: dict[str, str]) -> str:
    scheme, token = headers["Authorization"].split(" ", 1)
    assert scheme == "Bearer"
    return token


def claims_of(token: str) -> dict[str, Any]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


class TestClaims:
    def test_audience_is_the_oidc_audience_when_set(self) -> None:
        job = job_from_json(
            http_job(oidcToken=OIDC) | {"name": "projects/my-project/locations/l/jobs/j"}
        )
        assert token_audience(job) == AUDIENCE

    def test_audience_is_the_whole_uri_with_path_and_query_when_unset(self) -> None:
        uri = "http://127.0.0.1:8000/_triggers/timer/nightly?x=1&y=%20"
        job = job_from_json(
            nightly_job(
                name="projects/my-project/locations/l/jobs/j",
                httpTarget={"uri": uri, "oidcToken": {"serviceAccountEmail": INVOKER}},
            )
        )
        assert token_audience(job) == uri

    def test_claims_are_those_of_a_google_service_account_id_token(self) -> None:
        issued = datetime(2026, 9, 24, 2, 0, 0, 750000, tzinfo=UTC)
        claims = id_token_claims(INVOKER, AUDIENCE, issued)
        iat = int(datetime(2026, 9, 24, 2, tzinfo=UTC).timestamp())
        numeric_id = service_account_id(INVOKER)
        assert claims == {
            "aud": AUDIENCE,
            "azp": numeric_id,
            "email": INVOKER,
            "email_verified": True,
            "exp": iat + 3600,
            "iat": iat,
            "iss": "https://accounts.google.com",
            "sub": numeric_id,
        }

    def test_numeric_id_is_stable_21_digits_and_differs_between_accounts(self) -> None:
        first = service_account_id(INVOKER)
        assert first == service_account_id(INVOKER.upper())
        assert len(first) == 21 and first.isdigit() and first.startswith("1")
        assert first != service_account_id("other@my-project.iam.gserviceaccount.com")


class TestSigningKey:
    def test_key_id_is_forty_hex_digits_and_differs_between_keys(self, key: SigningKey) -> None:
        assert len(key.kid) == 40 and int(key.kid, 16) >= 0
        assert SigningKey.generate().kid != key.kid

    def test_the_key_is_kept_in_its_file_and_read_back(self, tmp_path: Path) -> None:
        path = tmp_path / "data" / "oidc-key.pem"
        first = SigningKey.load_or_create(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert SigningKey.load_or_create(path).kid == first.kid
        assert b"BEGIN PRIVATE KEY" in path.read_bytes()

    def test_a_file_that_is_not_an_rsa_key_is_refused_naming_it(self, tmp_path: Path) -> None:
        path = tmp_path / "oidc-key.pem"
        path.write_text("not a key")
        with pytest.raises(ConfigurationError, match="oidc-key.pem is not an unencrypted PEM"):
            SigningKey.load_or_create(path)

    def test_jwks_and_certificates_hold_the_same_public_key(
        self, authority: TokenAuthority
    ) -> None:
        from_jwks = load_keys(authority.jwks())
        from_pem = load_keys(authority.x509_certs())
        kid = authority.key.kid
        assert list(from_jwks) == list(from_pem) == [kid]
        assert from_jwks[kid].public_numbers() == from_pem[kid].public_numbers()
        [jwk] = authority.jwks()["keys"]
        assert {jwk["kty"], jwk["alg"], jwk["use"], jwk["e"]} == {"RSA", "RS256", "sig", "AQAB"}

    def test_the_certificate_is_the_same_for_the_same_key(self, key: SigningKey) -> None:
        again = SigningKey.from_pem(key.private_pem())
        assert again.certificate_pem() == key.certificate_pem()

    def test_an_in_memory_authority_makes_its_key_on_first_use(self) -> None:
        first, second = TokenAuthority(), TokenAuthority()
        assert first.key.kid == first.key.kid
        assert first.key.kid != second.key.kid

    def test_token_time_must_be_emulator_or_real(self) -> None:
        with pytest.raises(ValueError, match="token_time must be 'emulator' or 'real'"):
            TokenAuthority(token_time="virtual")


class TestDelivery:
    def test_oidc_job_sends_a_token_signed_by_the_emulator_at_the_attempt_instant(
        self, emulator: Emulator, target: RecordingTarget, clock: ManualClock
    ) -> None:
        emulator.create_job(http_job(oidcToken=OIDC))
        emulator.advance(timedelta(minutes=2))
        [received] = target.requests
        claims = verify_id_token(
            bearer(received.headers),
            audience=AUDIENCE,
            keys=emulator.tokens.jwks(),
            now=clock.now(),
        )
        assert claims["iat"] == int(datetime(2026, 9, 24, 2, tzinfo=UTC).timestamp())
        assert claims["email"] == INVOKER
        assert jwt.get_unverified_header(bearer(received.headers))["kid"] == emulator.tokens.key.kid

    def test_without_audience_the_token_carries_the_whole_uri(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        uri = "http://127.0.0.1:8000/_triggers/timer/nightly?x=1"
        emulator.create_job(
            nightly_job(httpTarget={"uri": uri, "oidcToken": {"serviceAccountEmail": INVOKER}})
        )
        emulator.advance(timedelta(minutes=2))
        assert claims_of(bearer(target.requests[0].headers))["aud"] == uri

    def test_every_retry_gets_a_token_stamped_with_its_own_start(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        target.status = 503
        emulator.create_job(http_job(oidcToken=OIDC))
        emulator.advance(timedelta(minutes=2))
        attempts = emulator.attempts("nightly")
        tokens = [bearer(r.headers) for r in target.requests]
        assert len(tokens) == len(set(tokens)) == 4
        assert [claims_of(t)["iat"] for t in tokens] == [
            int(a.start_time.timestamp()) for a in attempts
        ]

    def test_the_token_replaces_a_user_authorization_header(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(http_job(oidcToken=OIDC, headers={"Authorization": "Basic dTpw"}))
        emulator.advance(timedelta(minutes=2))
        [received] = target.requests
        assert received.headers["Authorization"].startswith("Bearer ey")

    def test_a_user_authorization_header_passes_through_when_no_token_is_asked_for(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(http_job(headers={"Authorization": "Basic dTpw"}))
        emulator.advance(timedelta(minutes=2))
        assert target.requests[0].headers["Authorization"] == "Basic dTpw"

    def test_no_authorization_header_without_token_or_user_header(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(http_job())
        emulator.advance(timedelta(minutes=2))
        assert "Authorization" not in target.requests[0].headers

    def test_the_attempt_record_keeps_the_authorization_header_sent(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(http_job(oidcToken=OIDC))
        emulator.advance(timedelta(minutes=2))
        [attempt] = emulator.attempts("nightly")
        sent = target.requests[0].headers["Authorization"]
        assert attempt.request["headers"]["Authorization"] == sent
        assert attempt.to_json()["request"]["headers"]["Authorization"] == sent

    def test_a_forced_run_is_stamped_with_the_clock_instant(
        self, emulator: Emulator, target: RecordingTarget, clock: ManualClock
    ) -> None:
        emulator.create_job(http_job(oidcToken=OIDC))
        emulator.run_job("nightly")
        assert claims_of(bearer(target.requests[0].headers))["iat"] == int(clock.now().timestamp())

    def test_oauth_job_sends_a_unique_recognisable_access_token(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        target.status = 500
        emulator.create_job(http_job(oauthToken={"serviceAccountEmail": INVOKER}))
        emulator.advance(timedelta(minutes=2))
        tokens = [bearer(r.headers) for r in target.requests]
        assert len(set(tokens)) == 4
        assert all(t.startswith(ACCESS_TOKEN_PREFIX) and t.count(".") == 2 for t in tokens)
        status, info = emulator.tokens.tokeninfo(tokens[0])
        assert status == 200
        assert info["scope"] == "https://www.googleapis.com/auth/cloud-platform"

    @staticmethod
    def nightly_claims(
        clock: ManualClock, target: RecordingTarget, key: SigningKey, **authority: Any
    ) -> dict[str, Any]:
        """The claims of the OIDC token sent for the nightly job's 02:00 run by an emulator
        whose :class:`TokenAuthority` takes the options ``authority``."""
        tokens = TokenAuthority(clock, key=key, **authority)
        with Emulator(clock, transport=WsgiTransport(target), tokens=tokens) as emulator:
            emulator.create_job(http_job(oidcToken=OIDC))
            emulator.advance(timedelta(minutes=2))
        return claims_of(bearer(target.requests[0].headers))

    def test_token_time_real_stamps_real_time_on_a_manual_clock_far_from_now(
        self, clock: ManualClock, target: RecordingTarget, key: SigningKey
    ) -> None:
        before = SystemClock().now()
        iat = self.nightly_claims(clock, target, key, token_time="real")["iat"]
        after = SystemClock().now()
        assert int(before.timestamp()) <= iat <= after.timestamp()

    def test_the_issuer_can_be_configured(
        self, clock: ManualClock, target: RecordingTarget, key: SigningKey
    ) -> None:
        issuer = "http://127.0.0.1:8095/_emulator/oidc"
        claims = self.nightly_claims(clock, target, key, issuer=issuer)
        assert claims["iss"] == issuer != GOOGLE_ISSUER


class TestEndpoints:
    @pytest.fixture
    def client(self, emulator: Emulator) -> Client:
        return Client(create_app(emulator))

    def test_discovery_points_at_the_keys_under_the_address_used(
        self, client: Client, emulator: Emulator
    ) -> None:
        response = client.get(
            "/_emulator/oidc/.well-known/openid-configuration",
            base_url="http://emulator.test:8095",
        )
        assert response.status_code == 200
        document = response.json
        assert document["issuer"] == "https://accounts.google.com"
        assert document["jwks_uri"] == "http://emulator.test:8095/_emulator/oidc/certs"
        assert document["id_token_signing_alg_values_supported"] == ["RS256"]

    def test_certs_is_a_jwk_set_pyjwt_reads(self, client: Client, emulator: Emulator) -> None:
        answer = client.get("/_emulator/oidc/certs").json
        [key] = jwt.PyJWKSet.from_dict(answer).keys
        assert key.key_id == emulator.tokens.key.kid
        assert key.algorithm_name == "RS256"

    def test_v1_certs_maps_the_key_id_to_a_pem_certificate(
        self, client: Client, emulator: Emulator
    ) -> None:
        answer = client.get("/_emulator/oidc/v1/certs").json
        assert list(answer) == [emulator.tokens.key.kid]
        assert answer[emulator.tokens.key.kid].startswith("-----BEGIN CERTIFICATE-----")

    def test_tokeninfo_describes_a_minted_access_token_like_google(
        self, client: Client, emulator: Emulator, target: RecordingTarget
    ) -> None:
        scope = "https://www.googleapis.com/auth/pubsub"
        emulator.create_job(http_job(oauthToken={"serviceAccountEmail": INVOKER, "scope": scope}))
        emulator.advance(timedelta(minutes=2))
        token = bearer(target.requests[0].headers)
        emulator.advance(timedelta(minutes=10))
        response = client.get("/_emulator/oauth2/tokeninfo", query_string={"access_token": token})
        assert response.status_code == 200
        exp = int(datetime(2026, 9, 24, 3, tzinfo=UTC).timestamp())
        assert response.json == {
            "azp": service_account_id(INVOKER),
            "aud": service_account_id(INVOKER),
            "sub": service_account_id(INVOKER),
            "scope": scope,
            "exp": str(exp),
            "expires_in": "2940",  # 03:00 minus 02:11
            "email": INVOKER,
            "email_verified": "true",
            "access_type": "online",
        }

    def test_tokeninfo_refuses_an_expired_token(
        self, client: Client, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(http_job(oauthToken={"serviceAccountEmail": INVOKER}))
        emulator.advance(timedelta(minutes=2))
        token = bearer(target.requests[0].headers)
        emulator.advance(timedelta(hours=1))
        response = client.get("/_emulator/oauth2/tokeninfo", query_string={"access_token": token})
        assert (response.status_code, response.json["error"]) == (400, "invalid_token")

    @pytest.mark.parametrize(
        ("query", "error"),
        [
            pytest.param({"access_token": "ya29.emulator.unknown"}, "invalid_token", id="unknown"),
            pytest.param({}, "invalid_request", id="missing"),
        ],
    )
    def test_tokeninfo_answers_400_for_a_token_it_does_not_know(
        self, client: Client, query: dict[str, str], error: str
    ) -> None:
        response = client.get("/_emulator/oauth2/tokeninfo", query_string=query)
        assert response.status_code == 400
        assert response.json["error"] == error

    def test_tokeninfo_describes_an_id_token_like_google(
        self, client: Client, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """Trial 147: ``?id_token=`` got ``No access_token.``; Google's tokeninfo answers an
        ID token's claims, every value a string, and 400 once it is expired or mis-signed."""
        emulator.create_job(http_job(oidcToken={"serviceAccountEmail": INVOKER}))
        emulator.advance(timedelta(minutes=2))
        token = bearer(target.requests[0].headers)

        response = client.get("/_emulator/oauth2/tokeninfo", query_string={"id_token": token})

        assert response.status_code == 200
        claims = jwt.decode(token, options={"verify_signature": False})
        assert response.json == {
            **{name: str(value) for name, value in claims.items()},
            "email_verified": "true",
            "alg": "RS256",
            "kid": emulator.tokens.key.kid,
            "typ": "JWT",
        }
        forged = SigningKey.generate().sign(claims)
        for refused in (forged, "not.a.jwt", "expired"):
            if refused == "expired":
                emulator.advance(timedelta(hours=1))
                refused = token
            response = client.get("/_emulator/oauth2/tokeninfo", query_string={"id_token": refused})
            assert (response.status_code, response.json["error"]) == (400, "invalid_token")

    def test_tokeninfo_takes_a_form_body_too(
        self, client: Client, emulator: Emulator, authority: TokenAuthority
    ) -> None:
        token = authority.access_token(INVOKER)
        response = client.post("/_emulator/oauth2/tokeninfo", data={"access_token": token})
        assert response.json["email"] == INVOKER


class TestCommandLine:
    def test_token_flags_default_to_google_issuer_and_emulator_time(self) -> None:
        args = build_parser().parse_args(["start"])
        assert (args.token_issuer, args.token_time) == (GOOGLE_ISSUER, "emulator")

    def test_token_time_takes_real(self) -> None:
        args = build_parser().parse_args(["start", "--token-time", "real", "--token-issuer", "x"])
        assert (args.token_issuer, args.token_time) == ("x", "real")

    def test_another_token_time_is_refused(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args(["start", "--token-time", "virtual"])
        assert exit_info.value.code == 2
        assert "--token-time: invalid choice" in capsys.readouterr().err


def test_a_naive_issue_instant_is_refused(authority: TokenAuthority) -> None:
    """Trial 58: ``id_token(..., at=datetime(2026, 1, 1))`` was read as local time (under
    ``TZ=America/New_York`` its ``iat`` was 05:00Z), where every other time input refuses a
    naive datetime."""
    with pytest.raises(NaiveDatetimeError, match="at"):
        authority.id_token("a@p.iam.gserviceaccount.com", "https://svc", at=datetime(2026, 1, 1))
    with pytest.raises(NaiveDatetimeError):
        authority.access_token("a@p.iam.gserviceaccount.com", at=datetime(2026, 1, 1))
    aware = authority.id_token(
        "a@p.iam.gserviceaccount.com", "https://svc", at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    assert jwt.decode(aware, options={"verify_signature": False})["iat"] == 1767225600
