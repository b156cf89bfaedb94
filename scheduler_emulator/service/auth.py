"""Check that a request really comes from Cloud Scheduler: verify its OIDC token.

The ``X-CloudScheduler*`` headers can be sent by anyone; a job with ``oidcToken`` also sends
``Authorization: Bearer <ID token>``, an RS256 JWT signed by Google (or by the emulator's own
key). A service checks it with::

    from scheduler_emulator.service import TokenError, verify_scheduler_token

    try:
        claims = verify_scheduler_token(
            request,                                   # Flask/werkzeug, TimerRequest, headers…
            audience="https://orders-abc123-uc.a.run.app",
            certs_url=CERTS_URL,                       # Google's, or the emulator's
            email="scheduler-invoker@my-project.iam.gserviceaccount.com",
        )
    except TokenError as exc:
        return str(exc), 401

``CERTS_URL`` is :data:`GOOGLE_CERTS_URL` in production and
``http://127.0.0.1:8095/_emulator/oidc/certs`` against the emulator; nothing else changes.
:class:`SchedulerTokenMiddleware` does the same in front of any WSGI app,
:class:`SchedulerTokenAsgiMiddleware` in front of any ASGI app. From an ``async def``
handler (Starlette, FastAPI) ``await verify_scheduler_token_async(request, ...)`` does it without
blocking the event loop while the keys are fetched; both accept a Starlette request or an ASGI
scope.

Errors (all :class:`TokenError`, each a distinct reason to answer 401)::

    TokenError
    ├── MissingTokenError          no Authorization header, or not "Bearer <token>"
    ├── MalformedTokenError        not a JWT, or a claim missing or of the wrong type
    ├── InvalidSignatureError      unknown key ID (another issuer or emulator), bad signature
    ├── ExpiredTokenError          now is past exp (+ leeway)
    ├── TokenNotYetValidError      now is before iat (- leeway)
    ├── WrongIssuerError           iss is not an accepted issuer
    ├── WrongAudienceError         aud is not the audience asked for
    └── WrongEmailError            email is not an accepted service account

:class:`CertsUnavailableError` (not a :class:`TokenError`: the caller is not at fault) means the
keys could not be fetched.

Time: unless ``now`` is given, "now" is ``time.time()`` read at the call, so a service tested
in-process under the ``cloud_scheduler`` fixture (which shows mounted apps the virtual instant)
verifies on the emulator's clock. Needs PyJWT with its crypto extra (``pyjwt[crypto]``),
imported on first use.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, MutableMapping
from datetime import UTC, datetime, timedelta
from typing import Any, Required, TypedDict, Unpack

from ..realtime import real_monotonic
from ..wire import to_instant
from .asgi import answer, route_path
from .errors import TargetError
from .request import CaseInsensitiveHeaders, is_async_handler
from .router import find_router

__all__ = [
    "CERTS_MAX_AGE_SECONDS",
    "CLAIMS_ENVIRON_KEY",
    "CertsUnavailableError",
    "ExpiredTokenError",
    "GOOGLE_CERTS_URL",
    "GOOGLE_ISSUERS",
    "InvalidSignatureError",
    "MalformedTokenError",
    "MissingTokenError",
    "SchedulerTokenAsgiMiddleware",
    "SchedulerTokenMiddleware",
    "TokenChecks",
    "TokenError",
    "TokenKeys",
    "TokenNotYetValidError",
    "WrongAudienceError",
    "WrongEmailError",
    "WrongIssuerError",
    "bearer_token",
    "clear_certs_cache",
    "fetch_certs",
    "load_keys",
    "verify_id_token",
    "verify_scheduler_token",
    "verify_scheduler_token_async",
]

#: Google's signing keys as a JWK Set (the v1 URL serves the same keys as PEM certificates).
GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v3/certs"
#: The ``iss`` values of Google ID tokens.
GOOGLE_ISSUERS = ("https://accounts.google.com", "accounts.google.com")
#: The environ (or ASGI scope) key where :class:`SchedulerTokenMiddleware` leaves the verified
#: claims.
CLAIMS_ENVIRON_KEY = "scheduler_emulator.service.token_claims"
#: Seconds fetched keys are reused before they are fetched again (an unknown key ID always
#: triggers a fetch).
CERTS_MAX_AGE_SECONDS = 300.0

logger = logging.getLogger("scheduler_emulator.service")


class TokenError(TargetError):
    """The request's token does not prove it comes from the expected Cloud Scheduler job.

    A service answers 401 (:attr:`http_status`); the message says what is wrong and is safe to
    log (it holds no token).
    """

    http_status = 401


class MissingTokenError(TokenError):
    """No ``Authorization: Bearer <token>`` header."""


class MalformedTokenError(TokenError):
    """The token is not a JWT, or a claim is missing or has the wrong type."""


class InvalidSignatureError(TokenError):
    """The token was not signed by any of the trusted keys (another emulator instance or
    issuer, a tampered token, an algorithm other than RS256)."""


class ExpiredTokenError(TokenError):
    """The token's ``exp`` has passed.

    :param expired_at: the ``exp`` instant.
    :param now: the instant the token was checked at.
    """

    def __init__(self, message: str, expired_at: datetime, now: datetime) -> None:
        super().__init__(message)
        self.expired_at = expired_at
        self.now = now


class TokenNotYetValidError(TokenError):
    """The token's ``iat`` is in the future (a clock far from the minter's)."""


class WrongIssuerError(TokenError):
    """``iss`` is not one of the accepted issuers."""


class WrongAudienceError(TokenError):
    """``aud`` is not the audience the service expects.

    :param audience: the token's ``aud``.
    :param expected: the accepted audiences.
    """

    def __init__(self, message: str, audience: Any, expected: list[str]) -> None:
        super().__init__(message)
        self.audience = audience
        self.expected = expected


class WrongEmailError(TokenError):
    """``email`` is not an accepted service account (or is not verified)."""


class CertsUnavailableError(TargetError):
    """The keys at ``certs_url`` could not be fetched or read; not the caller's fault."""


class TokenKeys(TypedDict, total=False):
    """What a token is checked against: the keywords of :class:`SchedulerTokenMiddleware`
    (besides ``prefix``). Each is described, with its default, at :func:`verify_id_token`."""

    audience: Required[str | Collection[str]]
    certs_url: str
    keys: Mapping[str, Any] | None
    issuers: Collection[str] | None
    email: str | Collection[str] | None
    leeway: timedelta | float


class TokenChecks(TokenKeys, total=False):
    """:class:`TokenKeys` and the instant to check at: the keywords of
    :func:`verify_scheduler_token` and :func:`verify_scheduler_token_async`."""

    now: datetime | None


# ---------------------------------------------------------------------------- the token


def bearer_token(request: Any) -> str:
    """Return the bearer token a request carries.

    :param request: a werkzeug/Flask request, a Django or Starlette request, a
        :class:`~scheduler_emulator.service.TimerRequest` (anything with ``headers``), a headers
        mapping (any case), a WSGI environ, an ASGI scope, or the ``Authorization`` value or
        token itself.
    :raises MissingTokenError: when there is no ``Authorization: Bearer <token>``.
    """
    if isinstance(request, str | bytes):
        value: Any = request.decode() if isinstance(request, bytes) else request
        if " " not in value.strip():
            value = "Bearer " + value
    else:
        value = _authorization_header(request)
    if not value:
        raise MissingTokenError(
            "The request has no Authorization header; Cloud Scheduler sends "
            "'Authorization: Bearer <token>' only for jobs with an oidcToken or oauthToken."
        )
    scheme, _, token = str(value).strip().partition(" ")
    if scheme.lower() == "bearer" and not token.strip():
        raise MissingTokenError("The Authorization header has no token after 'Bearer'.")
    if scheme.lower() != "bearer":
        raise MissingTokenError(
            f"The Authorization header is not 'Bearer <token>' (it starts with {scheme[:20]!r})."
        )
    return token.strip()


def _authorization_header(request: Any) -> Any:
    is_environ = isinstance(request, Mapping) and (
        "wsgi.input" in request or "HTTP_AUTHORIZATION" in request
    )
    if is_environ:
        return request.get("HTTP_AUTHORIZATION")
    is_scope = isinstance(request, Mapping) and request.get("type") in ("http", "websocket")
    if is_scope and not hasattr(request, "headers"):  # a raw ASGI scope: bytes header pairs
        return next(
            (
                value.decode("latin-1")
                for name, value in request.get("headers", ())
                if name.lower() == b"authorization"
            ),
            None,
        )
    headers = getattr(request, "headers", request)
    if isinstance(headers, Mapping) and not isinstance(headers, CaseInsensitiveHeaders):
        headers = CaseInsensitiveHeaders({str(k): v for k, v in headers.items()})
    getter = getattr(headers, "get", None)
    if getter is None:
        raise TypeError(
            f"cannot read headers from {type(request).__name__}; pass a request with .headers, "
            "a headers mapping, a WSGI environ or the token."
        )
    return getter("Authorization")


# ---------------------------------------------------------------------------- keys


def load_keys(certs: Mapping[str, Any]) -> dict[str, Any]:
    """Read public keys from either certificate format Google publishes.

    :param certs: a JWK Set ``{"keys": [...]}`` (``oauth2/v3/certs``, the emulator's
        ``/_emulator/oidc/certs``) or ``{kid: PEM certificate}`` (``oauth2/v1/certs``, the
        emulator's ``/_emulator/oidc/v1/certs``).
    :raises CertsUnavailableError: if ``certs`` is neither.
    :return: key ID → ``cryptography`` public key.
    """
    jwt = _jwt()
    keys: dict[str, Any] = {}
    try:
        if "keys" in certs:
            for data in certs["keys"]:
                if data.get("kty") != "RSA" or data.get("use", "sig") != "sig":
                    continue
                keys[str(data.get("kid", ""))] = jwt.PyJWK(data, algorithm="RS256").key
        else:
            from cryptography import x509

            for kid, pem in certs.items():
                text = pem.encode() if isinstance(pem, str) else pem
                keys[str(kid)] = x509.load_pem_x509_certificate(text).public_key()
    except (ValueError, TypeError, AttributeError, jwt.PyJWTError) as exc:
        raise CertsUnavailableError(
            f"The certificates are neither a JWK Set nor a map of key IDs to PEM certificates: "
            f"{exc}"
        ) from exc
    return keys


class _KeyCache:
    """Keys fetched per certs URL, reused for :data:`CERTS_MAX_AGE_SECONDS` (real seconds)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, dict[str, Any]]] = {}

    def keys(self, url: str, kid: str | None) -> dict[str, Any]:

        with self._lock:
            entry = self._entries.get(url)
        if entry is not None:
            fetched, keys = entry
            fresh = real_monotonic() - fetched < CERTS_MAX_AGE_SECONDS
            if fresh and (kid is None or kid in keys):
                return keys
        certs = fetch_certs(url)
        if "jwks_uri" in certs:  # (trial 208: a discovery document read as bad certificates)
            raise CertsUnavailableError(
                f"{url} is an OpenID discovery document, not keys: give its jwks_uri, "
                f"{certs['jwks_uri']}, as certs_url."
            )
        keys = load_keys(certs)
        with self._lock:
            self._entries[url] = (real_monotonic(), keys)
        return keys

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_CACHE = _KeyCache()


def fetch_certs(url: str, timeout_seconds: float = 10.0) -> dict[str, Any]:
    """GET ``url`` and return its JSON (no caching).

    :raises CertsUnavailableError: on a network error, a non-200 answer or a body that is not a
        JSON object.
    """
    try:
        with urllib.request.urlopen(url, timeout=timeout_seconds) as response:
            body = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CertsUnavailableError(f"Could not fetch the certificates at {url}: {exc}") from exc
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise CertsUnavailableError(f"The certificates at {url} are not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CertsUnavailableError(f"The certificates at {url} are not a JSON object.")
    return data


def clear_certs_cache() -> None:
    """Forget every fetched key (the next verification fetches again)."""
    _CACHE.clear()


# ---------------------------------------------------------------------------- verification


def verify_id_token(
    token: str,
    *,
    audience: str | Collection[str],
    certs_url: str = GOOGLE_CERTS_URL,
    keys: Mapping[str, Any] | None = None,
    issuers: Collection[str] | None = None,
    email: str | Collection[str] | None = None,
    leeway: timedelta | float = 0.0,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Verify an ID token and return its claims.

    Checks, in order: the RS256 signature by a key of ``certs_url`` (or ``keys``), ``iat`` and
    ``exp`` against ``now``, ``iss``, ``aud`` and, if given, ``email`` (with
    ``email_verified``).

    :param token: the compact JWT (a ``Bearer `` prefix is accepted too).
    :param audience: the accepted ``aud`` value(s), compared exactly: the service's URL as
        configured in the job's ``oidcToken.audience``, or the job's whole URI.
    :param certs_url: where the keys are (JWK Set or PEM map; fetched, then cached).
    :param keys: the certificates themselves (either format), instead of fetching
        ``certs_url``.
    :param issuers: accepted ``iss`` values; Google's two (:data:`GOOGLE_ISSUERS`) by default.
    :param email: accepted service-account email(s); ``None`` accepts any.
    :param leeway: allowed clock difference, a ``timedelta`` or seconds.
    :param now: the instant to check at (aware); ``time.time()`` by default.
    :raises TokenError: the matching subclass, with a message naming the values.
    :raises CertsUnavailableError: if the keys cannot be fetched.
    :raises ValueError: for a setting of the wrong kind (:func:`check_settings`).
    :return: the claims (``aud``, ``email``, ``exp``, ``iat``, ``iss``, ``sub``, …).
    """
    check_settings(
        audience=audience, certs_url=certs_url, issuers=issuers, email=email, leeway=leeway
    )
    jwt = _jwt()
    token = bearer_token(token)
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise MalformedTokenError(f"The bearer token is not a JWT: {exc}.") from exc
    if header.get("alg") != "RS256":
        raise InvalidSignatureError(
            f"The token is signed with {header.get('alg')!r}; Cloud Scheduler's ID tokens are "
            "RS256."
        )
    kid = header.get("kid")
    kid = str(kid) if kid is not None else None
    source = "the given keys" if keys is not None else certs_url
    available = load_keys(keys) if keys is not None else _CACHE.keys(certs_url, kid)
    if kid is not None:
        if kid not in available:
            raise InvalidSignatureError(
                f"The token was signed with key {kid!r}, which is not among the keys at "
                f"{source} ({', '.join(sorted(available)) or 'none'}): it was minted by another "
                "issuer or another emulator instance."
            )
        candidates = [available[kid]]
    else:
        candidates = list(available.values())
    claims = _decode(jwt, token, candidates, source)
    # (trial 185: advice on starting the emulator was given for Google's tokens too)
    emulated = keys is not None or certs_url != GOOGLE_CERTS_URL
    _check_claims(claims, audience, issuers, email, leeway, now, emulated)
    return claims


def verify_scheduler_token(request: Any, **checks: Unpack[TokenChecks]) -> dict[str, Any]:
    """Verify the OIDC token of a request Cloud Scheduler (or the emulator) sent.

    The same call works in production and against the emulator; only ``certs_url`` differs
    (:data:`GOOGLE_CERTS_URL`, or ``<emulator>/_emulator/oidc/certs``)::

        verify_scheduler_token(request, audience=AUDIENCE, certs_url=CERTS_URL, email=INVOKER)

    :param request: a werkzeug/Flask or Django request, a
        :class:`~scheduler_emulator.service.TimerRequest`, a headers mapping, a WSGI environ, or
        the token.
    :param checks: the keywords of :func:`verify_id_token` (:class:`TokenChecks`):
        ``audience`` (required), ``certs_url``, ``keys``, ``issuers`` (pass the emulator's
        ``--token-issuer`` if you changed it), ``email`` (``None`` accepts any — in production
        anyone's Google service account can mint a token for your audience, so pass it),
        ``leeway`` and ``now``.
    :raises TokenError: missing, malformed, mis-signed, expired, not yet valid, wrong issuer,
        wrong audience or wrong email — the subclass says which.
    :raises CertsUnavailableError: if the keys cannot be fetched.
    :raises TypeError: without ``audience``, or for a keyword it does not take (naming the one
        meant).
    :return: the token's claims.
    """
    _check_keywords("verify_scheduler_token", checks)
    return verify_id_token(bearer_token(request), **checks)


#: The keywords :func:`verify_id_token` takes after the token (read once: checked per request).
_TOKEN_KEYWORDS = tuple(inspect.signature(verify_id_token).parameters)[1:]


def _check_keywords(caller: str, checks: Mapping[str, Any]) -> None:
    """Refuse keywords that :func:`verify_id_token` does not take, in ``caller``'s name
    (trial 205: a misspelt ``audiance`` read as ``verify_id_token()``'s, or as a missing
    ``audience`` without a word of the one given).

    :raises TypeError: naming ``caller`` and the keyword, with the close one it takes.
    """
    for name in checks:
        if name not in _TOKEN_KEYWORDS:
            close = difflib.get_close_matches(name, _TOKEN_KEYWORDS, n=1)
            known = ", ".join(_TOKEN_KEYWORDS)
            meant = f"; did you mean {close[0]!r}?" if close else f" (it takes {known})"
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}{meant}")
    if "audience" not in checks:
        raise TypeError(f"{caller}() is missing its required keyword argument 'audience'")


async def verify_scheduler_token_async(
    request: Any, **checks: Unpack[TokenChecks]
) -> dict[str, Any]:
    """:func:`verify_scheduler_token` for ``async def`` handlers: the same checks and errors.

    The verification (and a fetch of the keys, when they are not cached) runs in a worker thread
    (:func:`asyncio.to_thread`), so the event loop keeps serving other requests meanwhile.

    :param request: as for :func:`verify_scheduler_token`; a Starlette/FastAPI request or an
        ASGI scope too.
    :param checks: as for :func:`verify_scheduler_token` (:class:`TokenChecks`).
    :raises TokenError: as :func:`verify_scheduler_token`.
    :raises CertsUnavailableError: if the keys cannot be fetched.
    :return: the token's claims.
    """
    _check_keywords("verify_scheduler_token_async", checks)
    token = bearer_token(request)  # read the headers here, not from another thread
    return await asyncio.to_thread(verify_id_token, token, **checks)


def _decode(jwt: Any, token: str, candidates: Iterable[Any], source: str) -> dict[str, Any]:
    options = {
        "verify_signature": True,
        "verify_exp": False,
        "verify_nbf": False,
        "verify_iat": False,
        "verify_aud": False,
        "verify_iss": False,
    }
    for key in candidates:
        try:
            claims = jwt.decode(token, key, algorithms=["RS256"], options=options)
        except jwt.InvalidSignatureError:
            continue
        except jwt.PyJWTError as exc:
            raise MalformedTokenError(f"The token cannot be decoded: {exc}.") from exc
        if not isinstance(claims, dict):
            raise MalformedTokenError("The token's payload is not a JSON object.")
        return claims
    raise InvalidSignatureError(
        f"The token's signature does not verify with the keys at {source}: it was tampered with "
        "or signed by another key."
    )


def check_settings(**settings: Any) -> None:
    """Refuse a setting of :func:`verify_id_token` that no token could pass, naming it.

    ``audience`` (and ``issuers``, ``email`` unless ``None``) is a non-empty string or a
    non-empty collection of them; ``certs_url`` a string; ``leeway`` a ``timedelta`` or a
    number of seconds, 0 or more.

    :raises ValueError: naming the setting and its value (e.g. ``audience=None``, as an unset
        environment variable gives, which had failed every request with a 500).
    """
    for name, value in settings.items():
        items = [value] if isinstance(value, str) else value
        if name == "leeway":
            seconds = value.total_seconds() if isinstance(value, timedelta) else value
            ok = isinstance(seconds, int | float) and not isinstance(seconds, bool)
            ok = ok and 0 <= seconds < float("inf")
            kind = "a timedelta or a number of seconds, 0 or more"
        elif name == "certs_url":  # (trial 208: one without its scheme failed each request)
            ok = isinstance(value, str) and value.lower().startswith(("http://", "https://"))
            kind = "an http:// or https:// URL"
        else:
            ok = (value is None and name != "audience") or (
                isinstance(items, Collection)
                and bool(items)
                and all(isinstance(item, str) and item for item in items)
            )
            kind = "a non-empty string or a collection of them"
        if not ok:
            unset = " (from an unset environment variable?)" if value is None else ""
            raise ValueError(f"{name}={value!r}{unset}: give {kind}.")


def _as_list(value: str | Collection[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _instant(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _check_claims(
    claims: Mapping[str, Any],
    audience: str | Collection[str],
    issuers: Collection[str] | None,
    email: str | Collection[str] | None,
    leeway: timedelta | float,
    now: datetime | None,
    emulated: bool,
) -> None:
    """Check the claims of a token whose signature verified (``emulated``: with keys other
    than Google's, whose errors may advise on the emulator's options)."""
    for name in ("exp", "iat"):
        if isinstance(claims.get(name), bool) or not isinstance(claims.get(name), int | float):
            raise MalformedTokenError(f"The token's {name!r} claim is missing or not a number.")
    slack = leeway.total_seconds() if isinstance(leeway, timedelta) else float(leeway)
    at = to_instant(now, "now").timestamp() if now is not None else time.time()
    exp, iat = float(claims["exp"]), float(claims["iat"])
    if at > exp + slack:
        advice = (
            " A token is valid for one hour from its attempt's start: check it at a now within "
            "that hour (on a virtual clock, advance less before checking, or pass "
            "now=attempt.start_time)."
            if now is not None
            else " A target in another process checks real time: start the emulator with "
            "--token-time real when its manual clock is far from now."
        )
        raise ExpiredTokenError(
            f"The token expired at {_instant(exp)}; it is now {_instant(at)}." + advice * emulated,
            datetime.fromtimestamp(exp, UTC),
            datetime.fromtimestamp(at, UTC),
        )
    if at < iat - slack:
        raise TokenNotYetValidError(
            f"The token was issued at {_instant(iat)}, after now ({_instant(at)})."
            + (
                " Check it at or after its attempt's start."
                if now is not None
                else " A target in another process checks real time: start the emulator with "
                "--token-time real when its manual clock is ahead of now."
            )
            * emulated
        )
    accepted_issuers = list(issuers) if issuers is not None else list(GOOGLE_ISSUERS)
    if claims.get("iss") not in accepted_issuers:
        raise WrongIssuerError(
            f"The token's issuer is {claims.get('iss')!r}, not "
            f"{' or '.join(repr(i) for i in accepted_issuers)}."
        )
    expected = _as_list(audience)
    got = claims.get("aud")
    auds = got if isinstance(got, list) else [got]
    if not any(a in expected for a in auds):
        raise WrongAudienceError(
            f"The token's audience is {got!r}, not {' or '.join(repr(e) for e in expected)}. "
            "Cloud Scheduler uses the job's oidcToken.audience, or the job's whole URI (path and "
            "query included) when the audience is empty.",
            got,
            expected,
        )
    if email is not None:
        accepted = [e.lower() for e in _as_list(email)]
        if str(claims.get("email", "")).lower() not in accepted:
            raise WrongEmailError(
                f"The token was minted for {claims.get('email')!r}, not "
                f"{' or '.join(repr(e) for e in _as_list(email))}."
            )
        if claims.get("email_verified") is not True:
            raise WrongEmailError(f"The token's email {claims.get('email')!r} is not verified.")


def _jwt() -> Any:
    try:
        import jwt
    except ImportError as exc:  # pragma: no cover - pyjwt is a dependency of the package
        raise ImportError(
            "Verifying Cloud Scheduler tokens needs PyJWT: pip install 'pyjwt[crypto]'."
        ) from exc
    return jwt


# ---------------------------------------------------------------------------- WSGI


class SchedulerTokenMiddleware:
    """WSGI middleware that lets a request under ``prefix`` through only with a valid token.

    A refused request gets an empty 401 with ``WWW-Authenticate: Bearer error="invalid_token"``
    and a WARNING log line saying why; if the keys cannot be fetched, a 503 (Cloud Scheduler
    retries) whose text body says so (the certs URL and the error, as its ERROR log line: what
    the emulator's attempt records show). Accepted requests carry the claims in
    ``environ[CLAIMS_ENVIRON_KEY]``.

    Put it outside a :class:`~scheduler_emulator.service.TimerRouter`, which answers timer routes
    itself::

        router.init_app(app)
        app.wsgi_app = SchedulerTokenMiddleware(app.wsgi_app, audience=AUDIENCE,
                                                certs_url=CERTS_URL, email=INVOKER)

    :param app: the WSGI app to protect.
    :param prefix: only paths that start with it are checked (``"/_triggers/"`` by default;
        ``"/"`` checks every request).
    :param checks: ``audience`` (required), ``certs_url``, ``keys``, ``issuers``, ``email``,
        ``leeway``: as for :func:`verify_scheduler_token` (:class:`TokenKeys`).
    :raises TypeError: without ``audience``, for a keyword :func:`verify_id_token` does not
        take, or for an ASGI app (:class:`SchedulerTokenAsgiMiddleware` wraps those).
    :raises ValueError: for a ``prefix`` that does not start with ``/``, or that the prefix of
        the timer router found in ``app`` does not start with (its routes would go unchecked);
        for a check's value no token could pass (:func:`check_settings`); for ``email=None``
        given (an unset environment variable would open the service to every account).
    """

    #: What ``init_app`` looks for, to refuse to put the timer routes in front of it.
    checks_tokens = True

    def __init__(
        self,
        app: Callable[..., Any],
        *,
        prefix: str = "/_triggers/",
        **checks: Unpack[TokenKeys],
    ) -> None:
        # a missing audience, an unknown keyword or a bad value fails here, not at each request
        _check_keywords(type(self).__name__, checks)
        check_settings(**{k: v for k, v in checks.items() if k != "keys"})
        if "email" in checks and checks["email"] is None:  # (trial 203: every account passed)
            raise ValueError(
                "email=None (from an unset environment variable?) accepts any service "
                "account's token: give the invoker's email, or leave email out to mean that."
            )
        asgi = isinstance(self, SchedulerTokenAsgiMiddleware)
        if is_async_handler(app) != asgi:  # (trial 185: a FastAPI app answered every request 500)
            raise TypeError(
                f"{app!r} is a WSGI app: wrap it in SchedulerTokenMiddleware."
                if asgi
                else f"{app!r} is an ASGI app (Starlette, FastAPI): wrap it in "
                "SchedulerTokenAsgiMiddleware, or app.add_middleware(SchedulerTokenAsgiMiddleware"
                ", audience=...)."
            )
        self.app = app
        self.prefix = prefix
        self._checks = checks
        self._router_checked = False
        self._check_router()

    def _check_router(self) -> None:
        """Refuse a prefix that would leave the app's timer routes unchecked: as the middleware
        is made, and again at the first request, for a router added to the app after it
        (trials 194, 196); until it passes, every request is refused (the error raised)."""
        router = find_router(self.app)
        if not self.prefix.startswith("/") or (
            router and not router.prefix.startswith(self.prefix)
        ):
            served = f"; the app's timer router serves {router.prefix!r}" if router else ""
            raise ValueError(
                f"prefix {self.prefix!r} would leave timer routes unchecked{served}: give a path "
                "starting with '/' that the router's prefix starts with (or '/' for every "
                "request); to check one timer only, call verify_scheduler_token(request, …) in "
                "its handler instead."
            )

    @staticmethod
    def _refusal(
        exc: Exception, method: str, path: str
    ) -> tuple[str, list[tuple[str, str]], bytes]:
        """The status line, headers and body refusing a request, logged with why (the method and
        path escaped: trial 194 forged a log line with a newline in the path); a 401 says
        nothing of why, a 503 says which keys could not be fetched (trial 205: a forgotten
        ``certs_url`` read as a bare 503 in the attempts)."""
        method, path = (json.dumps(text)[1:-1] for text in (method, path))
        if isinstance(exc, TokenError):
            logger.warning("%s %s refused with 401: %s", method, path, exc)
            challenge = ("WWW-Authenticate", 'Bearer error="invalid_token"')
            return "401 Unauthorized", [challenge, ("Content-Length", "0")], b""
        logger.error("%s %s refused with 503: %s", method, path, exc)
        body = f"{exc}\n".encode()
        headers = [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
        ]
        return "503 Service Unavailable", headers, body

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if not self._router_checked:
            self._check_router()
            self._router_checked = True
        path = str(environ.get("PATH_INFO", ""))
        if not path.startswith(self.prefix):
            return self.app(environ, start_response)
        try:
            # (its keywords were checked once, when it was made: not at each request)
            environ[CLAIMS_ENVIRON_KEY] = verify_id_token(bearer_token(environ), **self._checks)
        except (TokenError, CertsUnavailableError) as exc:
            status, headers, body = self._refusal(exc, environ.get("REQUEST_METHOD", ""), path)
            start_response(status, headers)
            return [body]
        return self.app(environ, start_response)


class SchedulerTokenAsgiMiddleware(SchedulerTokenMiddleware):
    """:class:`SchedulerTokenMiddleware` for an ASGI app (Starlette, FastAPI): the same checks,
    answers and log lines; accepted requests carry the claims in ``scope[CLAIMS_ENVIRON_KEY]``.
    The keys are verified (and fetched) off the event loop, as
    :func:`verify_scheduler_token_async` does. Its signature is Starlette's middleware
    convention::

        router.init_app(fastapi_app)
        fastapi_app.add_middleware(SchedulerTokenAsgiMiddleware, audience=AUDIENCE,
                                   certs_url=CERTS_URL, email=INVOKER)

    Added after ``router.init_app``, it runs first (Starlette runs the middleware added last
    first). Websocket and lifespan scopes pass unchecked.
    """

    async def __call__(  # type: ignore[override]
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        """Serve one ASGI connection (see the class docstring)."""
        if not self._router_checked:
            self._check_router()
            self._router_checked = True
        path = route_path(scope) if scope["type"] == "http" else ""
        if scope["type"] == "http" and path.startswith(self.prefix):
            try:
                scope[CLAIMS_ENVIRON_KEY] = await asyncio.to_thread(
                    verify_id_token, bearer_token(scope), **self._checks
                )
            except (TokenError, CertsUnavailableError) as exc:
                status, headers, body = self._refusal(exc, str(scope.get("method", "")), path)
                await answer(send, int(status[:3]), headers, body)
                return
        await self.app(scope, receive, send)
