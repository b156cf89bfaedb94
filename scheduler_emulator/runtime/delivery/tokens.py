"""Authentication tokens on HTTP targets (docs/authentication.md), sent to ``http://`` URIs
too: a job with ``oidcToken`` gets ``Authorization: Bearer <ID token>`` on every attempt, an
RS256 JWT minted at the attempt's instant with the claims of a Google service-account ID token
(:func:`id_token_claims`), signed by a :class:`SigningKey`; one with ``oauthToken`` gets an
opaque ``ya29.emulator.…`` access token, which ``GET /_emulator/oauth2/tokeninfo`` describes as
Google's tokeninfo does. :class:`TokenAuthority` adds the clock, the key's storage and the
access-token registry::

    >>> service_account_id("scheduler-invoker@my-project.iam.gserviceaccount.com")
    '151339905745488708995'
    >>> from datetime import UTC, datetime
    >>> claims = id_token_claims(
    ...     "scheduler-invoker@my-project.iam.gserviceaccount.com",
    ...     "https://orders-abc123-uc.a.run.app",
    ...     datetime(2026, 9, 24, 2, 0, tzinfo=UTC),
    ... )
    >>> claims["aud"], claims["exp"] - claims["iat"], claims["iss"]
    ('https://orders-abc123-uc.a.run.app', 3600, 'https://accounts.google.com')
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...domain.errors import ConfigurationError
from ...domain.resources import DEFAULT_OAUTH_SCOPE, Job
from ...wire import GOOGLE_ISSUER, to_instant
from .._clock import Clock, SystemClock

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

#: How long a token is valid (Google's ID and access tokens: one hour).
TOKEN_LIFETIME = timedelta(hours=1)
#: What every access token the emulator mints starts with.
ACCESS_TOKEN_PREFIX = "ya29.emulator."
#: ``--token-time`` values: stamp tokens on the emulator's clock, or on real time.
TOKEN_TIMES = ("emulator", "real")
#: Paths the daemon serves (under its base URL).
DISCOVERY_PATH = "/_emulator/oidc/.well-known/openid-configuration"
JWKS_PATH = "/_emulator/oidc/certs"
X509_CERTS_PATH = "/_emulator/oidc/v1/certs"
TOKENINFO_PATH = "/_emulator/oauth2/tokeninfo"

_MAX_ACCESS_TOKENS = 100_000


def service_account_id(email: str) -> str:
    """Return the stable numeric ID of a service account (``sub`` and ``azp`` of its tokens).

    :param email: the service account's email; case does not matter.
    :return: ``"1"`` followed by 20 digits derived from the email's SHA-256 (21, like Google's).
    """
    digest = hashlib.sha256(email.strip().lower().encode()).digest()
    return "1" + str(int.from_bytes(digest[:16], "big") % 10**20).zfill(20)


def token_audience(job: Job) -> str:
    """The ``aud`` of the job's ID token: ``oidcToken.audience``, or the whole URI as stored
    (path and query included) when the audience is empty.

    :raises ValueError: if the job has no HTTP target with an ``oidcToken``.
    """
    target = job.http_target
    if target is None or target.oidc_token is None:
        raise ValueError(f"job {job.name} has no httpTarget.oidcToken.")
    return target.oidc_token.audience or target.uri


def id_token_claims(
    email: str, audience: str, issued_at: datetime, issuer: str = GOOGLE_ISSUER
) -> dict[str, Any]:
    """Return the claims of an ID token of the service account ``email``: ``aud``
    (``audience``), ``azp``, ``email``, ``email_verified``, ``exp`` (``iat`` + 3600), ``iat``
    (the whole seconds of the aware ``issued_at``), ``iss`` (``issuer``), ``sub``."""
    iat = int(issued_at.timestamp())
    numeric_id = service_account_id(email)
    return {
        "aud": audience,
        "azp": numeric_id,
        "email": email,
        "email_verified": True,
        "exp": iat + int(TOKEN_LIFETIME.total_seconds()),
        "iat": iat,
        "iss": issuer,
        "sub": numeric_id,
    }


class SigningKey:
    """An RSA 2048 private key with its key ID, used to sign ID tokens (RS256).

    :param private_key: a ``cryptography`` RSA private key.
    :ivar kid: the SHA-1 of the public key (40 hexadecimal digits, like Google's ``kid``).
    """

    def __init__(self, private_key: RSAPrivateKey) -> None:
        from cryptography.hazmat.primitives import serialization

        self.private_key = private_key
        public_der = private_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.kid = hashlib.sha1(public_der).hexdigest()
        self._certificate: str | None = None

    @classmethod
    def generate(cls) -> SigningKey:
        """Return a new random RSA 2048 key."""
        from cryptography.hazmat.primitives.asymmetric import rsa

        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048))

    @classmethod
    def from_pem(cls, data: bytes, source: str = "the key") -> SigningKey:
        """Load a PEM private key (PKCS#8 or PKCS#1, unencrypted).

        :param source: how to name the key in the error message (a file path).
        :raises ConfigurationError: if ``data`` is not an unencrypted RSA private key.
        """
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        renew = "delete it and the emulator creates a new one."
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            problem = f"is not an unencrypted PEM private key ({exc})"
            raise ConfigurationError(f"{source} {problem}; {renew}") from exc
        if not isinstance(key, rsa.RSAPrivateKey):
            problem = f"holds a {type(key).__name__}, not an RSA key"
            raise ConfigurationError(f"{source} {problem}; {renew}")
        return cls(key)

    @classmethod
    def load_or_create(cls, path: Path) -> SigningKey:
        """Load the key kept at ``path``, or create one there (mode 0600) if there is none.

        :raises ConfigurationError: if the file exists but holds no usable key.
        :raises OSError: if the file can be neither read nor created.
        """
        with contextlib.suppress(FileNotFoundError):
            return cls.from_pem(path.read_bytes(), str(path))
        key = cls.generate()
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile: use theirs
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
                out.write(key.private_pem())
            return key
        return cls.from_pem(path.read_bytes(), str(path))

    def private_pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM."""
        from cryptography.hazmat.primitives import serialization

        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def sign(self, claims: dict[str, Any]) -> str:
        """Return ``claims`` as a compact RS256 JWT with this key's ``kid`` in its header."""
        import jwt

        return jwt.encode(claims, self.private_key, algorithm="RS256", headers={"kid": self.kid})

    def jwk(self) -> dict[str, str]:
        """The public key as a JWK (RFC 7517): ``kty``, ``alg``, ``use``, ``kid``, ``n``, ``e``."""
        from jwt.utils import to_base64url_uint

        numbers = self.private_key.public_key().public_numbers()
        return {
            "kty": "RSA",
            "alg": "RS256",
            "use": "sig",
            "kid": self.kid,
            "n": to_base64url_uint(numbers.n).decode(),
            "e": to_base64url_uint(numbers.e).decode(),
        }

    def certificate_pem(self) -> str:
        """A self-signed X.509 certificate of the public key, PEM (the ``v1/certs`` format).

        Deterministic for a key (fixed names, serial and validity 2000–2100), so it is the same
        after a restart.
        """
        if self._certificate is None:
            from cryptography import x509
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.x509.oid import NameOID

            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "scheduler-emulator")])
            certificate = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(name)
                .public_key(self.private_key.public_key())
                .serial_number(int(self.kid[:30], 16) or 1)
                .not_valid_before(datetime(2000, 1, 1, tzinfo=UTC))
                .not_valid_after(datetime(2100, 1, 1, tzinfo=UTC))
                .sign(self.private_key, hashes.SHA256())
            )
            self._certificate = certificate.public_bytes(serialization.Encoding.PEM).decode()
        return self._certificate


@dataclass(frozen=True)
class AccessToken:
    """An OAuth access token the emulator minted.

    :param token: the opaque bearer value, starting with :data:`ACCESS_TOKEN_PREFIX`.
    :param email: the service account it was minted for.
    :param scope: the OAuth scope(s), space-separated.
    :param expires_at: an hour after it was minted (on the authority's time base).
    """

    token: str
    email: str
    scope: str
    expires_at: datetime


class TokenAuthority:
    """Mints the tokens of one emulator and publishes its keys.

    :param clock: the emulator's clock; tokens are stamped with the attempt's instant on it.
    :param key: the signing key; by default a fresh key is made on first use (in memory).
    :param key_path: keep the key in this file (created on first use if absent); ignored when
        ``key`` is given.
    :param issuer: ``iss`` of ID tokens (``https://accounts.google.com`` by default).
    :param token_time: ``"emulator"`` (default): ``iat``/``exp`` and tokeninfo's expiry follow
        the emulator's clock — right for in-process tests on a virtual clock; ``"real"``: they
        follow real time, so that a target in another process, verifying against its real
        clock, accepts tokens even when a manual clock is far from now.
    :raises ValueError: for another ``token_time``.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        key: SigningKey | None = None,
        key_path: Path | str | None = None,
        issuer: str = GOOGLE_ISSUER,
        token_time: str = "emulator",
    ) -> None:
        if token_time not in TOKEN_TIMES:
            raise ValueError(f"token_time must be 'emulator' or 'real'; got {token_time!r}.")
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.issuer = issuer
        self.token_time = token_time
        self.key_path = None if key_path is None else Path(key_path)
        self._key = key
        self._lock = threading.Lock()
        self._access: OrderedDict[str, AccessToken] = OrderedDict()

    @property
    def key(self) -> SigningKey:
        """The signing key, made (or loaded from :attr:`key_path`) on first use.

        :raises ConfigurationError: if the key file holds no usable key.
        """
        with self._lock:
            if self._key is None:
                path = self.key_path
                self._key = SigningKey.load_or_create(path) if path else SigningKey.generate()
            return self._key

    def jwks(self) -> dict[str, Any]:
        """The JWK Set of the public key: ``{"keys": [{...}]}`` (``/_emulator/oidc/certs``)."""
        return {"keys": [self.key.jwk()]}

    def x509_certs(self) -> dict[str, str]:
        """``{kid: PEM certificate}`` (``/_emulator/oidc/v1/certs``, Google's v1 format)."""
        key = self.key
        return {key.kid: key.certificate_pem()}

    def discovery(self, base_url: str) -> dict[str, Any]:
        """The OpenID discovery document, with URLs under ``base_url`` (the daemon's root).

        ``issuer`` is the configured issuer, not the discovery URL: a client that insists on
        them matching needs ``--token-issuer <base_url>/_emulator/oidc``.
        """
        claims = ["aud", "azp", "email", "email_verified", "exp", "iat", "iss", "sub"]
        return {
            "issuer": self.issuer,
            "jwks_uri": base_url.rstrip("/") + JWKS_PATH,
            "id_token_signing_alg_values_supported": ["RS256"],
            "subject_types_supported": ["public"],
            "response_types_supported": ["id_token"],
            "claims_supported": claims,
            "scopes_supported": ["openid", "email"],
        }

    def now(self) -> datetime:
        """The instant tokens are stamped with and expire on: the emulator's clock, or real
        time under ``token_time="real"``."""
        return SystemClock().now() if self.token_time == "real" else self.clock.now()

    def _issue_time(self, at: datetime | None) -> datetime:
        return self.now() if at is None or self.token_time == "real" else to_instant(at, "at")

    def id_token(self, email: str, audience: str, at: datetime | None = None) -> str:
        """Mint a signed ID token for the service account ``email``, for ``audience``, issued
        at ``at`` (the attempt's start; now when ``None`` or under ``token_time="real"``).

        :raises NaiveDatetimeError: for a naive ``at`` (trial 58's was read as local time).
        """
        return self.key.sign(id_token_claims(email, audience, self._issue_time(at), self.issuer))

    def access_token(self, email: str, scope: str = "", at: datetime | None = None) -> str:
        """Mint an opaque access token and remember it for :meth:`tokeninfo`.

        :param scope: OAuth scope(s); empty means cloud-platform.
        :param at: the issue instant (aware; naive: ``NaiveDatetimeError``); now when ``None``.
            Ignored under ``token_time="real"``.
        :return: ``ya29.emulator.`` followed by 43 random URL-safe characters.
        """
        issued = self._issue_time(at)
        value = ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32)
        scope = scope or DEFAULT_OAUTH_SCOPE
        with self._lock:
            self._access[value] = AccessToken(value, email, scope, issued + TOKEN_LIFETIME)
            while len(self._access) > _MAX_ACCESS_TOKENS:  # the oldest go first
                self._access.popitem(last=False)
        return value

    def authorization(self, job: Job, at: datetime | None = None) -> str | None:
        """The ``Authorization`` value of the attempt of ``job`` at ``at`` (its instant).

        :return: ``"Bearer <ID token>"`` for ``oidcToken``, ``"Bearer <access token>"`` for
            ``oauthToken`` (on ``http://`` URIs too), ``None`` when the job asks for no
            token (a user ``Authorization`` header then passes through).
        """
        target = job.http_target
        if target is not None and (oidc := target.oidc_token) is not None:
            return "Bearer " + self.id_token(oidc.service_account_email, token_audience(job), at)
        if target is not None and (oauth := target.oauth_token) is not None:
            return "Bearer " + self.access_token(oauth.service_account_email, oauth.scope, at)
        return None

    def lookup(self, access_token: str) -> AccessToken | None:
        """The access token minted as ``access_token``, or ``None`` if unknown."""
        with self._lock:
            return self._access.get(access_token)

    def tokeninfo(self, access_token: str) -> tuple[int, dict[str, str]]:
        """Answer ``GET /_emulator/oauth2/tokeninfo?access_token=…`` as Google does.

        :return: ``(200, {"azp", "aud", "sub", "scope", "exp", "expires_in", "email",
            "email_verified", "access_type"})`` — string values, as Google sends them — for a
            live token; ``(400, {"error": "invalid_token", "error_description": "Invalid
            Value"})`` for an unknown or expired one.
        """
        token = self.lookup(access_token)
        now = self.now()
        if token is None or token.expires_at <= now:
            return 400, dict(_INVALID_TOKEN)
        return 200, {
            **dict.fromkeys(("azp", "aud", "sub"), service_account_id(token.email)),
            "scope": token.scope,
            "exp": str(int(token.expires_at.timestamp())),
            "expires_in": str(int((token.expires_at - now).total_seconds())),
            "email": token.email,
            "email_verified": "true",
            "access_type": "online",
        }

    def id_tokeninfo(self, id_token: str) -> tuple[int, dict[str, str]]:
        """Answer ``GET /_emulator/oauth2/tokeninfo?id_token=…`` as Google's tokeninfo does
        (``oauth2.googleapis.com/tokeninfo``, "Calling the tokeninfo endpoint" in Google's
        OpenID Connect guide): an ID token this key signed and live at :meth:`now`.

        :return: ``(200, the token's claims with its header's alg, kid and typ)`` — string
            values, as Google sends them; ``(400, {"error": "invalid_token", …})`` as
            :meth:`tokeninfo` for any other token.
        """
        import jwt

        unchecked = ("verify_exp", "verify_iat", "verify_nbf", "verify_aud")  # (times: below)
        try:
            header = jwt.get_unverified_header(id_token)
            claims: dict[str, Any] = jwt.decode(
                id_token,
                self.key.private_key.public_key(),
                algorithms=["RS256"],
                options=dict.fromkeys(unchecked, False),  # type: ignore[arg-type]
            )
        except jwt.PyJWTError:
            return 400, dict(_INVALID_TOKEN)
        if not claims.get("iat", 0) <= self.now().timestamp() < claims.get("exp", 0):
            return 400, dict(_INVALID_TOKEN)
        claims.update((k, header[k]) for k in ("alg", "kid", "typ") if k in header)
        strings = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in claims.items()}
        return 200, strings


#: tokeninfo's answer to a token it does not know, or one expired (Google's words).
_INVALID_TOKEN = {"error": "invalid_token", "error_description": "Invalid Value"}
