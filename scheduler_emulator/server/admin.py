"""The emulator's own endpoints under ``/_emulator/`` (JSON in, JSON out).

- ``GET  /_emulator/health`` → 200 ``{"status": "ok"}``
- ``GET  /_emulator/config`` → ``{"project": …, "location": …, "clock": "system"|"manual",
  "httpClient": "libcurl"|"http.client", "pubsubEmulatorHost": "HOST:PORT"}``, the daemon's
  defaults for short job names (``scheduler-emulator env-init`` reads it), how it sends HTTP
  attempts and, when it publishes to one, its Pub/Sub emulator
- ``GET  /_emulator/clock`` → ``{"now": "<RFC 3339 UTC>", "mode": "system"|"manual"}``
- ``POST /_emulator/clock:advance`` with ``{"seconds": N}`` (manual clock only) → ``{"now": …}``
- ``POST /_emulator/clock:moveTo`` with ``{"time": "<RFC 3339>"}`` (manual clock only)
- ``GET  /_emulator/attempts`` → one page ``{"attempts": [...], "nextPageToken": "…"}`` in
  start order (``nextPageToken`` absent on the last page): ``pageSize`` (default 100, at most
  1000), ``pageToken``, and the filters ``job`` (ID or full name), ``run`` (run id),
  ``startAfter`` / ``startBefore`` (RFC 3339; ``startAfter ≤ startTime < startBefore``); 400
  ``INVALID_ARGUMENT`` naming the parameter for a bad value, 404 ``NOT_FOUND`` for a job that
  neither exists nor has attempts
- ``GET  /_emulator/skipped`` → one page ``{"skipped": [...], "nextPageToken": "…"}`` of the
  scheduled times that got no run (P6, or the daemon was down), in the order they were
  recorded: ``pageSize``, ``pageToken`` and ``job`` as for attempts; 404 as for attempts
- ``GET /_emulator/faults`` → the fault plan ``{"seed": N, "rules": [...]}``, each rule with
  every field that applies to its action, defaults included; ``POST`` with one rule,
  ``{"rules": [...]}`` or ``{"seed": N, "rules": [...]}`` adds rules (and sets the seed), and
  refuses a field that does not apply to the rule's action; ``DELETE`` removes every rule
- ``POST /_emulator/reset`` → deletes every job and attempt; ``{"clockTime": …}`` also sets a
  manual clock to that instant
- ``GET /_emulator/oidc/.well-known/openid-configuration``, ``GET /_emulator/oidc/certs`` (JWK
  Set) and ``GET /_emulator/oidc/v1/certs`` (``{kid: PEM certificate}``): the keys that sign
  the OIDC tokens jobs send (§13.1, :mod:`~scheduler_emulator.runtime.tokens`)
- ``GET /_emulator/oauth2/tokeninfo?access_token=…`` → an OAuth token's email, scope and expiry
  as Google's tokeninfo answers; 400 ``{"error": "invalid_token", …}`` for an unknown or expired
  one (§13.2)

The clock endpoints answer only after every run, retry and delivery that fell due has finished;
on a system clock they answer 400 ``FAILED_PRECONDITION``.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from ..core.faults import FaultPlan, FaultRule
from ..domain.attempts import iso
from ..domain.codec import parse_timestamp, show_value
from ..domain.errors import ClockError, FailedPrecondition, InvalidArgument, NotFound
from ..runtime.clock import ManualClock
from ..runtime.emulator import Emulator
from ..runtime.store import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from ..runtime.tokens import DISCOVERY_PATH, JWKS_PATH, TOKENINFO_PATH, X509_CERTS_PATH
from ..runtime.transports import HttpTransport
from .grpc_api import grpc_available
from .request_body import request_json

#: The latest instant a manual clock may be moved to: the end of year 9999, the last one an RFC
#: 3339 timestamp (and Python's ``datetime``) can hold, less a day so that a day's schedule and
#: its retries still fit.
LATEST_INSTANT = datetime(9999, 12, 30, 23, 59, 59, tzinfo=UTC)

RULES = [
    Rule("/_emulator/health", methods=["GET"], endpoint="health"),
    Rule("/_emulator/config", methods=["GET"], endpoint="config"),
    Rule("/_emulator/clock", methods=["GET"], endpoint="clock"),
    Rule("/_emulator/clock:advance", methods=["POST"], endpoint="clock_advance"),
    Rule("/_emulator/clock:moveTo", methods=["POST"], endpoint="clock_move_to"),
    Rule("/_emulator/attempts", methods=["GET"], endpoint="attempts"),
    Rule("/_emulator/skipped", methods=["GET"], endpoint="skipped"),
    Rule("/_emulator/reset", methods=["POST"], endpoint="reset"),
    Rule("/_emulator/faults", methods=["GET"], endpoint="get_faults"),
    Rule("/_emulator/faults", methods=["POST"], endpoint="add_faults"),
    Rule("/_emulator/faults", methods=["DELETE"], endpoint="clear_faults"),
    Rule(DISCOVERY_PATH, methods=["GET"], endpoint="oidc_discovery"),
    Rule(JWKS_PATH, methods=["GET"], endpoint="oidc_certs"),
    Rule(X509_CERTS_PATH, methods=["GET"], endpoint="oidc_x509_certs"),
    Rule(TOKENINFO_PATH, methods=["GET", "POST"], endpoint="oauth_tokeninfo"),
]


def _only_parameters(request: Request, *allowed: str) -> None:
    """Refuse a query parameter the endpoint does not take, or one given twice, rather than
    answer as if it were not there (a filter silently ignored reads as a filter applied).

    :raises InvalidArgument: naming the parameter.
    """
    for name in request.args:
        if name not in allowed:
            raise InvalidArgument(
                f"{request.path} takes no parameter {show_value(name)}; it takes "
                f"{', '.join(allowed)}.",
                field=name,
            )
        values = request.args.getlist(name)
        if len(values) > 1:
            shown = ", ".join(show_value(value) for value in values[:5])
            raise InvalidArgument(
                f"{name} is given {len(values)} times ({shown}); give it once.", field=name
            )


def _page_query(request: Request) -> tuple[int, str]:
    """``pageSize`` (0 or absent: the default page) and ``pageToken`` of a paged listing.

    :raises InvalidArgument: naming ``pageSize`` for a value that is not 0 to 1000.
    """
    size = _query_int(request, "pageSize", default=0, low=0, high=MAX_PAGE_SIZE)
    return size or DEFAULT_PAGE_SIZE, request.args.get("pageToken", "")


def _page_answer(key: str, items: list[dict[str, Any]], token: str) -> dict[str, Any]:
    """A page as JSON: ``{key: items, "nextPageToken": token}``, no token on the last page."""
    answer: dict[str, Any] = {key: items}
    if token:
        answer["nextPageToken"] = token
    return answer


def _query_int(
    request: Request, name: str, *, default: int | None, low: int, high: int
) -> int | None:
    """The whole-number query parameter ``name`` (``default`` when absent or empty).

    :raises InvalidArgument: naming ``name`` for anything but ASCII digits within
        ``low``–``high`` (refused before conversion, so a 5000-digit value costs nothing).
    """
    text = request.args.get(name, "")
    if not text:
        return default
    if text.isascii() and text.isdigit() and len(text) <= 18 and low <= int(text) <= high:
        return int(text)
    raise InvalidArgument(
        f"{name} must be a whole number from {low} to {high}; got {show_value(text)}.",
        field=name,
    )


def _query_time(request: Request, name: str) -> datetime | None:
    """The RFC 3339 query parameter ``name``, or ``None`` when absent or empty.

    :raises InvalidArgument: naming ``name`` for a value that is not RFC 3339.
    """
    text = request.args.get(name, "")
    if not text:
        return None
    try:
        return parse_timestamp(text, field=name)
    except InvalidArgument as exc:  # say which parameter: the parser knows only the value
        raise InvalidArgument(f"{name}: {exc.message}", field=name) from None


class Admin:
    """Handlers for the ``/_emulator/`` endpoints of one :class:`Emulator`."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator

    def health(self, request: Request) -> dict[str, Any]:
        """Liveness: always ``{"status": "ok"}``."""
        return {"status": "ok"}

    def _mode(self) -> str:
        return "manual" if self.emulator.clock.manual else "system"

    def config(self, request: Request) -> dict[str, Any]:
        """The defaults for short job names, the clock's mode, and (for a daemon delivering
        over the network) ``httpClient``: ``"libcurl"`` or ``"http.client"``; ``grpc``: whether
        the ``[grpc]`` extra is installed, so the port serves gRPC beside REST."""
        emulator = self.emulator
        answer: dict[str, Any] = {
            "project": emulator.project,
            "location": emulator.location,
            "clock": self._mode(),
            "grpc": grpc_available(),
        }
        transport = emulator.engine.transport
        if isinstance(transport, HttpTransport):
            answer["httpClient"] = "libcurl" if transport.client.uses_curl else "http.client"
        pubsub_host = getattr(emulator.publisher, "host", None)  # an EmulatorPublisher's
        if isinstance(pubsub_host, str):
            answer["pubsubEmulatorHost"] = pubsub_host
        return answer

    def _known_job(self, request: Request) -> str | None:
        """The ``?job=`` filter, or ``None``; 404 for a job with neither a definition nor
        attempts (a deleted job's attempts stay listed)."""
        job = request.args.get("job") or None
        if job is not None:
            try:
                name = self.emulator.job_name(job)
            except InvalidArgument:
                raise InvalidArgument(
                    f"job must be a job ID (letters, digits, hyphens, underscores) or a full "
                    f"job name (projects/P/locations/L/jobs/ID); got {show_value(job)}.",
                    field="job",
                ) from None
            if (
                not self.emulator.engine.has_job(name)
                and not self.emulator.attempts_page(job, page_size=1)[0]
            ):
                raise NotFound(
                    f"Job not found: job {show_value(job)} names no job and no recorded attempt."
                )
        return job

    def clock(self, request: Request) -> dict[str, Any]:
        """The clock's instant and mode."""
        return {"now": iso(self.emulator.now()), "mode": self._mode()}

    def _manual_only(self, fn: Any, *args: Any) -> dict[str, Any]:
        try:
            now = fn(*args)
        except ClockError as exc:
            raise FailedPrecondition(str(exc)) from exc
        return {"now": iso(now)}

    def clock_advance(self, request: Request) -> dict[str, Any]:
        """Advance a manual clock by ``seconds`` and answer once everything due has settled."""
        body = request_json(request)
        if "seconds" not in body:
            raise InvalidArgument(
                'The body must be {"seconds": N}; seconds is missing.', field="seconds"
            )
        seconds = body["seconds"]
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise InvalidArgument(
                f"seconds must be a non-negative finite number; got {show_value(seconds)}.",
                field="seconds",
            )
        try:
            target = self.emulator.now() + timedelta(seconds=seconds)
        except OverflowError:
            target = None
        if target is None or target > LATEST_INSTANT:
            raise InvalidArgument(
                f"seconds must not move the clock past {iso(LATEST_INSTANT)}; got "
                f"{show_value(seconds)}.",
                field="seconds",
            )
        return self._manual_only(self.emulator.advance, float(seconds))

    def clock_move_to(self, request: Request) -> dict[str, Any]:
        """Move a manual clock to ``time`` (RFC 3339) and answer once everything has settled."""
        body = request_json(request)
        if "time" not in body:
            raise InvalidArgument(
                'The body must be {"time": "<RFC 3339>"}; time is missing.', field="time"
            )
        text = body["time"]
        if not isinstance(text, str):
            raise InvalidArgument(
                f"time must be an RFC 3339 string; got {show_value(text)}.", field="time"
            )
        instant = parse_timestamp(text, field="time")
        if instant > LATEST_INSTANT:
            raise InvalidArgument(
                f"time must be at most {iso(LATEST_INSTANT)}; got {show_value(text)}.",
                field="time",
            )
        return self._manual_only(self.emulator.move_to, instant)

    def attempts(self, request: Request) -> dict[str, Any]:
        """One page of attempts in start order, filtered by ``job``, ``run``, ``startAfter``
        and ``startBefore``; ``nextPageToken`` names the next page (absent on the last one).

        Only the page is read from the store, however long the history.
        """
        _only_parameters(
            request, "pageSize", "pageToken", "job", "run", "startAfter", "startBefore"
        )
        page_size, page_token = _page_query(request)
        run_id = _query_int(request, "run", default=None, low=1, high=2**63 - 1)
        start_after = _query_time(request, "startAfter")
        start_before = _query_time(request, "startBefore")
        job = self._known_job(request)
        page, token = self.emulator.attempts_page(
            job,
            run_id=run_id,
            start_after=start_after,
            start_before=start_before,
            page_size=page_size,
            page_token=page_token,
        )
        return _page_answer("attempts", [a.to_json() for a in page], token)

    def skipped(self, request: Request) -> dict[str, Any]:
        """One page of the scheduled times that got no run (P6; the daemon was down), in the
        order they were recorded, filtered by ``job``; paged like :meth:`attempts`."""
        _only_parameters(request, "pageSize", "pageToken", "job")
        page_size, page_token = _page_query(request)
        job = self._known_job(request)
        page, token = self.emulator.skipped_page(job, page_size=page_size, page_token=page_token)
        return _page_answer("skipped", [s.to_json() for s in page], token)

    def reset(self, request: Request) -> dict[str, Any]:
        """Delete every job, run and attempt; with ``{"clockTime": "<RFC 3339>"}`` also set a
        manual clock to that instant (backwards too), for test isolation."""
        text = request_json(request).get("clockTime")
        if text is not None and not isinstance(text, str):
            raise InvalidArgument(
                f"clockTime must be an RFC 3339 string; got {show_value(text)}.",
                field="clockTime",
            )
        instant = None if text is None else parse_timestamp(text, field="clockTime")
        self.emulator.reset()
        if instant is not None:
            clock = self.emulator.clock
            if not isinstance(clock, ManualClock):
                raise FailedPrecondition("clockTime needs a manual clock (--clock manual).")
            clock.reset_to(instant)
        return {}

    def _plan_json(self) -> dict[str, Any]:
        plan = self.emulator.faults
        return {"seed": plan.seed, "rules": [rule.to_full_json() for rule in list(plan.rules)]}

    def get_faults(self, request: Request) -> dict[str, Any]:
        """The fault plan: ``{"seed": N, "rules": [...]}``, each rule as
        :meth:`~scheduler_emulator.core.faults.FaultRule.to_full_json` shows it (every field its
        action reads, defaults included)."""
        return self._plan_json()

    def add_faults(self, request: Request) -> dict[str, Any]:
        """Add one rule (a rule object) or several (``{"seed"?, "rules": [...]}``)."""
        body = request_json(request)
        plan = self.emulator.faults
        if "action" in body:
            plan.add(FaultRule.from_json(body))
        else:
            parsed = FaultPlan.from_json(body)
            if "seed" in body:
                plan.seed = parsed.seed
            for rule in parsed.rules:
                plan.add(rule)
        return self._plan_json()

    def clear_faults(self, request: Request) -> dict[str, Any]:
        """Remove every fault rule."""
        self.emulator.faults.clear()
        return self._plan_json()

    def oidc_discovery(self, request: Request) -> dict[str, Any]:
        """The OpenID discovery document; ``jwks_uri`` is under the URL the caller used."""
        return self.emulator.tokens.discovery(request.host_url)

    def oidc_certs(self, request: Request) -> dict[str, Any]:
        """The signing key as a JWK Set (google-auth ``certs_url``, PyJWT ``PyJWKClient``)."""
        return self.emulator.tokens.jwks()

    def oidc_x509_certs(self, request: Request) -> dict[str, Any]:
        """The signing key as ``{kid: PEM certificate}`` (Google's ``oauth2/v1/certs``)."""
        return dict(self.emulator.tokens.x509_certs())

    def oauth_tokeninfo(self, request: Request) -> Response:
        """Describe an access token (``access_token`` in the query or a form body)."""
        token = request.values.get("access_token")
        status, body = (
            self.emulator.tokens.tokeninfo(token)
            if token
            else (400, {"error": "invalid_request", "error_description": "No access_token."})
        )
        return Response(
            json.dumps(body), status=status, content_type="application/json; charset=UTF-8"
        )
