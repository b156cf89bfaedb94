"""Records of what the emulator did: attempts, runs and skipped runs.

One delivery is an *attempt*; a scheduled (or forced) occurrence with its attempts is a *run*
(Google calls it an execution). These records are what ``/_emulator/attempts`` serves, what
the store keeps, and what the pytest fixtures assert on.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..wire import TIMER_PREFIX, cloud_run_job_of, format_timestamp, parse_timestamp
from .errors import cut_words

__all__ = [
    "DUPLICATE_NOTE",
    "Attempt",
    "EMULATOR_DOWN",
    "REASON_WIDTH",
    "RESPONSE_EXCERPT_BYTES",
    "RUN_STILL_GOING",
    "Run",
    "SkippedRun",
    "earlier_answers",
    "excerpt_text",
    "failure_reason",
    "in_flight_at",
    "injected_reason",
    "is_copy",
    "iso",
    "ok_status",
]


def iso(instant: datetime | None) -> str | None:
    """Render an aware instant as RFC 3339 UTC with ``Z`` (microseconds only when non-zero);
    ``None`` stays ``None``."""
    return None if instant is None else format_timestamp(instant)


def in_flight_at(start_time: datetime, end_time: datetime | None, now: datetime) -> bool:
    """Whether an attempt with these recorded times reads as in flight at ``now``: it started
    by ``now`` and its recorded end is later (under a manual clock a ``delay`` fault records the
    end when the attempt is sent, with its later end time). The one rule every reader of
    attempts applies (:meth:`Attempt.as_of`); an attempt with no end yet is in flight anyway.

    :param start_time: when the attempt started (aware).
    :param end_time: its recorded end, ``None`` while none is recorded.
    :param now: the clock's current instant (aware).
    :return: ``True`` when ``start_time <= now < end_time``.
    """
    return end_time is not None and start_time <= now < end_time


@dataclass
class Run:
    """One execution of a job: its first attempt and its retries.

    :param id: store-assigned run number.
    :param job: the job's full name.
    :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` header value of every attempt of
        the run (``None`` when no header is sent: jobs with an English-like schedule such as
        ``every 5 minutes``).
    :param nominal: the scheduled instant (UTC) this run is for; for a forced run the instant it
        was forced.
    :param forced: ``True`` for a run forced by RunJob.
    :param first_attempt_start: when the first attempt started (UTC), for ``maxRetryDuration``.
    :param attempts: attempts started so far.
    :param next_attempt_at: when the pending retry is due, ``None`` when none is pending.
    :param number: the run's number among its job's runs in this process (1-based), which fault
        rules match on; not kept across restarts.
    :param extra_retry: a lost acknowledgement (or a restart) earned the run one retry beyond its
        config, not spent yet.
    :param extra_spent: the run spent that retry: it earns no other (trial 118: a lost ack on
        every attempt retried a run for ever).
    :param uncounted: attempts that do not count against ``retryCount`` (App Engine 503s);
        not kept across restarts.
    :param limits: once it ended, its ``maxAttempts`` and the limit it gave up on (``None``
        each when there is none) under the retry config it ended with, so that a later change
        of the config does not rewrite its history; ``None`` while it goes on.
    """

    id: int
    job: str
    schedule_time: str | None
    nominal: datetime
    forced: bool = False
    first_attempt_start: datetime | None = None
    attempts: int = 0
    next_attempt_at: datetime | None = None
    finished: bool = False
    number: int = 0  # the run's number among the job's runs since start-up (fault rules)
    extra_retry: bool = False  # a lost acknowledgement earns one retry whatever the config
    extra_spent: bool = False  # … once in a run
    uncounted: int = 0  # App Engine 503s: retried whatever the config, not counted (Google's rule)
    limits: tuple[int | None, str | None] | None = None


@dataclass
class Attempt:
    """One delivery of a run to its target.

    :param id: store-assigned, increasing in start order.
    :param job: the job's full name.
    :param run_id: the run this attempt belongs to.
    :param attempt: 1 for the first try of a run, 2 for the first retry, …
    :param schedule_time: the ScheduleTime header sent, or ``None``.
    :param start_time: when the attempt started (clock time, UTC).
    :param end_time: when it ended, ``None`` while in flight.
    :param request: ``{"method", "url", "headers"}`` as sent.
    :param response_status: the target's final HTTP status, ``None`` without a response.
    :param code: google.rpc code name (``OK`` on success), ``None`` while in flight.
    :param debug_info: the execution log's ``debugInfo`` text
        (e.g. ``URL_CRAWLED. Original HTTP response code number = 200``).
    :param forced: the run was forced by RunJob.
    :param injected: the attempt was added or altered by fault injection.
    :param nominal: the instant (UTC) its run is for — the run's schedule time, kept also when
        no ScheduleTime header is sent; for a forced run the instant it was forced.
    :param response_excerpt: the first :data:`RESPONSE_EXCERPT_BYTES` of the target's response
        body, decoded as UTF-8 (bad bytes replaced); ``""`` for none.
    :param response_content_type: the response's ``Content-Type``, ``None`` without one.
    """

    id: int
    job: str
    run_id: int
    attempt: int
    schedule_time: str | None
    start_time: datetime
    request: dict[str, Any]
    end_time: datetime | None = None
    response_status: int | None = None
    code: str | None = None
    debug_info: str = ""
    forced: bool = False
    injected: bool = False
    nominal: datetime | None = None
    response_excerpt: str = ""
    response_content_type: str | None = None

    @property
    def job_id(self) -> str:
        """The short job ID."""
        return self.job.rsplit("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        """Return the ``/_emulator/attempts`` shape of this attempt."""
        return {
            "id": self.id,
            "job": self.job,
            "runId": self.run_id,
            "attempt": self.attempt,
            "scheduleTime": self.schedule_time,
            "startTime": iso(self.start_time),
            "endTime": iso(self.end_time),
            "request": self.request,
            "responseStatus": self.response_status,
            "code": self.code,
            "debugInfo": self.debug_info,
            "forced": self.forced,
            "injected": self.injected,
            "nominalTime": iso(self.nominal),
            "responseExcerpt": self.response_excerpt,
            "responseContentType": self.response_content_type,
            "hint": self.hint,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attempt:
        """The attempt an ``/_emulator/attempts`` entry (:meth:`to_json`'s shape) describes:
        what ``cloud_scheduler_server.attempts()`` returns, so that a daemon's attempts have the
        same fields and types as the in-process ones.

        :raises KeyError: for an entry without ``job``, ``runId``, ``attempt`` or ``startTime``.
        :raises ValueError: for a time that is not RFC 3339 with an offset.
        """
        end, nominal = data.get("endTime"), data.get("nominalTime")
        return cls(
            id=int(data.get("id", 0)),
            job=str(data["job"]),
            run_id=int(data["runId"]),
            attempt=int(data["attempt"]),
            schedule_time=data.get("scheduleTime"),
            start_time=parse_timestamp(str(data["startTime"])),
            request=dict(data.get("request") or {}),
            end_time=None if end is None else parse_timestamp(str(end)),
            response_status=data.get("responseStatus"),
            code=data.get("code"),
            debug_info=str(data.get("debugInfo", "")),
            forced=bool(data.get("forced", False)),
            injected=bool(data.get("injected", False)),
            nominal=None if nominal is None else parse_timestamp(str(nominal)),
            response_excerpt=str(data.get("responseExcerpt") or ""),
            response_content_type=data.get("responseContentType"),
        )

    def __getitem__(self, key: str) -> Any:
        """``attempt["code"]``: the :meth:`to_json` value under that key. Kept for code written
        when ``cloud_scheduler_server.attempts()`` returned dicts; use the attributes."""
        return self.to_json()[key]

    def as_of(self, now: datetime) -> Attempt:
        """This attempt as it reads at ``now``: one whose recorded end is later than ``now`` is
        still in flight — no end, code, status, answer or debug text yet. (Under a manual clock
        a ``delay`` fault records the end when the attempt is sent, with its later end time.)
        An attempt that starts after ``now`` too (a manual clock restarted at an earlier
        ``--start``) is history from before the restart and reads as recorded.

        :param now: the clock's current instant (aware).
        :return: ``self`` unless ``start_time <= now < end_time``, else a masked copy.
        """
        if not in_flight_at(self.start_time, self.end_time, now):
            return self
        return replace(
            self,
            end_time=None,
            response_status=None,
            code=None,
            debug_info="",
            response_excerpt="",
            response_content_type=None,
        )

    @property
    def reason(self) -> str:
        """Why it failed, in one line (:func:`failure_reason`; ``""`` for a success or an
        attempt in flight): what every surface shows."""
        return failure_reason(self)

    @property
    def copy(self) -> bool:
        """Whether it is an injected duplicate delivery: a copy of the attempt of its number."""
        return is_copy(self.debug_info)

    @property
    def outcome(self) -> str:
        """The code and, when the target answered, its HTTP status: ``INTERNAL (HTTP 500)``,
        ``OK`` for a publish (``?`` in flight): how the text log and the demo say it."""
        status = "" if self.response_status is None else f" (HTTP {self.response_status})"
        return f"{self.code or '?'}{status}"

    @property
    def sent_schedule_time(self) -> str | None:
        """The ``X-CloudScheduler-ScheduleTime`` header it sent: :attr:`schedule_time`, or
        ``None`` for a publish (a Pub/Sub message carries no header; trial 174's forced run read
        ``forced, sent …``)."""
        return None if "pubsubTopic" in self.request else self.schedule_time

    @property
    def runs_cloud_run_job(self) -> bool:
        """Whether it called the Cloud Run Admin API's run method (a ``jobs/J:run`` URI)."""
        return cloud_run_job_of(str(self.request.get("url", ""))) is not None

    @property
    def hint(self) -> str:
        """What the emulator can tell about a failure beyond the service's answer (``""`` when
        nothing): the timer router's 500 problem body, from the job's own timer route, is its answer
        when the handler raised; a 500 from a timer route whose name is not the job's ID is the
        timer router refusing the run — it answers with an empty body and says why only in its own
        log; a 500 with an empty body from the job's own timer route is what a timer router answers
        when no handler is registered for that route (said as a possibility: a handler that fails
        may answer the same); neither under another prefix than the default (any service answering
        an empty 500 would get it) nor when an in-process app raised (:data:`APP_RAISED`); a 401 or
        404 from the Cloud Run Admin API's run method says what the job or the ``--cloud-run-jobs``
        file lacks; a 401 or 403 to an OIDC token names the token's audience (the job's whole URI
        when the job sets none, Google's rule) and email, the claims a service refuses a token
        for, and why a service may refuse one unless its answer says why; a refused connection
        names where nothing listens (trial 182: the debug text does not); a 404 for a path with
        ``/_triggers/timer/`` after some other segment names that segment, and one for a path
        under it asks whether a timer router is in front of the app; an App Engine
        target's 503 says it does not count against the retry count (Google's rule); a 5xx
        answered ``{"code": "ECONNRESET"}`` says a Node proxy lost its handler's process."""
        where = urlsplit(str(self.request.get("url", ""))).netloc  # ("" for a publish)
        if where and self.response_status is None and "Connection refused" in self.debug_info:
            return f"nothing listens at {where}: start the target there, or fix the job's URI"
        if self.runs_cloud_run_job:
            method = str(self.request.get("method") or "POST")
            if self.response_status == 404 and method != "POST":  # (trial 108: "define it")
                return f"the Cloud Run Admin API's jobs/J:run takes POST; this job sends {method}"
            return _CLOUD_RUN_HINTS.get(self.response_status or 0, "")
        if self.response_status == 503 and "appEngineHost" in self.request:  # (trial 215)
            return "an App Engine target's 503 is retried without counting against the retry count"
        if (self.response_status or 0) >= 500 and '"ECONNRESET"' in self.response_excerpt:
            return (  # (trial 227: a v1 Firebase function that threw read so, and no more)
                "a Node proxy's answer when the process running the handler died (the Firebase "
                "Functions emulator's, when a function threw): its terminal says why"
            )
        headers = self.request.get("headers") or {}
        bearer = next((str(v) for k, v in headers.items() if k.lower() == "authorization"), "")
        if self.response_status in (401, 403) and (claims := _token_claims(bearer)):
            audience, email, valid, issued = claims
            uri = " (the job sets none: its whole URI)" * (audience == self.request.get("url"))
            # the clock's advice only for a token stamped with the attempt's clock (trial 185:
            # it was given under --token-time real too)
            on_its_clock = issued is not None and abs(issued - self.start_time).total_seconds() < 60
            sent = f"the OIDC token sent has audience {audience!r}{uri} and email {email!r}{valid}"
            if _TOKEN_CAUSE.search(self.response_excerpt):  # the service said why (trial 212)
                return sent
            return (
                f"{sent}: a service refuses a token whose audience or email it does not expect, "
                + "that is not valid on its own clock (a daemon on a manual clock stamps it with "
                "that clock: --token-time real for a service on real time), "
                * on_its_clock
                + "or that another key signed (each --in-memory daemon makes its own: a service "
                "reads this one's at its /_emulator/oidc/certs, or the pytest fixture's at "
                "cloud_scheduler.certs_url)"
            )
        if self.response_status == 401 and not bearer:
            return (  # (trial 196: a job without a token got no hint)
                "the job sends no token: a service that checks Cloud Scheduler's OIDC token "
                "refuses it; give the job an oidcToken (docs/authentication.md)"
            )
        path = urlsplit(str(self.request.get("url", ""))).path
        if self.response_status == 404 and TIMER_PREFIX in path[1:]:  # (trial 210: a bare 404)
            return (
                f"the path has {path[: path.index(TIMER_PREFIX, 1)]!r} before {TIMER_PREFIX!r}: "
                "a timer router serves its routes from the service's root unless given a prefix "
                "(a functions-framework function's name is not part of its URL)"
            )
        if self.response_status == 404 and path.startswith(TIMER_PREFIX):  # (trial 218)
            return (
                f"no timer router answered {TIMER_PREFIX}: the app's own 404 (is its TimerRouter "
                "in front of it? router.init_app(app))"
            )
        if self.response_status != 500 or APP_RAISED in self.debug_info:
            return ""
        if not path.startswith(TIMER_PREFIX):  # (another prefix: a guess would be noise)
            return ""
        route = path[len(TIMER_PREFIX) :].split("/", 1)[0]
        if not route:
            return ""
        if route == self.job_id:
            if _ROUTER_RAISED in self.response_excerpt:  # (trial 88: the answer named nothing)
                return "a timer router answers so when its handler failed: its log names the error"
            if self.response_excerpt.strip():
                return ""
            return (
                f"500 with an empty body from timer route {route!r}: a timer router answers "
                "so when no handler is registered for the route (a failing handler may too); "
                "check the service's log"
            )
        return (
            f"timer route {route!r} is not the job's name {self.job_id!r}: a timer router "
            "refuses the run (500, empty body; its log says why)"
        )


def _token_claims(authorization: str) -> tuple[str, str, str, datetime | None] | None:
    """The ``aud`` and ``email`` of the ID token (a JWT) in a request record's
    ``Authorization`` value, read without checking it, ``", valid <iat> to <exp>"`` (``""``
    without both) and its ``iat`` (``None`` without both); ``None`` without a token."""
    parts = authorization.removeprefix("Bearer ").split(".")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (IndexError, ValueError):  # (binascii.Error and UnicodeDecodeError are ValueErrors)
        return None
    audience = claims.get("aud") if isinstance(claims, dict) else None
    if not isinstance(audience, str) or len(parts) != 3:
        return None
    times = [claims.get("iat"), claims.get("exp")]
    if not all(isinstance(t, int) and 0 <= t < 253402300800 for t in times):  # (to year 9999)
        return audience, str(claims.get("email", "")), "", None
    issued, expires = (datetime.fromtimestamp(t, UTC) for t in times)
    valid = f", valid {format_timestamp(issued)} to {format_timestamp(expires)}"
    return audience, str(claims.get("email", "")), valid, issued


#: The emulator's hint for a Cloud Run Admin API run method's refusal, by HTTP status.
_CLOUD_RUN_HINTS = {
    401: "the Cloud Run Admin API takes an OAuth access token: give the job's httpTarget an "
    "oauthToken (an oidcToken is refused)",
    404: "the emulator runs only the Cloud Run jobs of its --cloud-run-jobs file: define the "
    "job there, or check the project, region and job in the job's URI",
}


#: What an HTML page's text leaves out: tags (one cut at the excerpt's end too), and the
#: content of ``<script>``, ``<style>`` and ``<title>`` (a heading says it again).
_MARKUP = re.compile(
    r"<(script|style|title)\b.*?(?:</\1\s*>|$)|<[^>]*>?", re.IGNORECASE | re.DOTALL
)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
#: Words of a 401's or 403's answer that names why a token was refused (the service's token
#: check's own diagnosis, such as a :class:`TokenError`'s text): shown longer, with no
#: general hint after it.
_TOKEN_CAUSE = re.compile(r"audience|expired|not yet valid|signed|issuer|email", re.IGNORECASE)
#: A heading's end, read as ": " so that it does not run into the text after it (trial 183:
#: "Not Found No route for /x").
_HEADING_END = re.compile(r"</h[1-6]\s*>", re.IGNORECASE)


def answer_text(excerpt: str) -> str:
    """A service's answer as a reason: a Google API error body (``{"error": {"code",
    "message", "status"}}``, cloud.google.com/apis/design/errors) as its status and message, a
    problem details body (RFC 9457: ``{"title", "detail"}``, what the timer router answers) as
    its title and detail (or, without a detail, its validation ``errors``, field by field), an
    HTML page (a web framework's error page) as its text — or as its ``<title>`` when the
    excerpt ends before any text (a long ``<style>``, as Django's debug pages have) —, any other
    text as it is.

    >>> answer_text('{"error": {"code": 404, "message": "Job x not found.", "status": "NOT_FOUND"}}')
    'NOT_FOUND: Job x not found.'
    >>> answer_text('{"detail": "The ledger is locked.", "title": "Conflict", "status": 409}')
    'Conflict: The ledger is locked.'
    >>> answer_text('{"title": "Invalid.", "status": 400, "errors": {"order.id": ["Required."]}}')
    'Invalid: order.id: Required.'
    >>> answer_text('<!doctype html><title>500 Internal Server Error</title><style>p {}</style>'
    ...     '<h1>Internal Server Error</h1><p>It&#x27;s down.</p>')
    "Internal Server Error: It's down."
    >>> answer_text('<html><head><title>DisallowedHost at /x</title><style>body { … ')
    'DisallowedHost at /x'
    """  # noqa: E501
    if excerpt.lstrip().startswith("<"):
        words = html.unescape(_MARKUP.sub(" ", _HEADING_END.sub(": ", excerpt))).split()
        text = " ".join(words).removesuffix(":").replace(" : ", ": ")
        title = _TITLE.search(excerpt) if not text else None  # (trial 106: Django's 400 page)
        return " ".join(html.unescape(title[1]).split()) if title else text
    if not excerpt.lstrip().startswith("{"):
        return excerpt
    try:
        body = json.loads(excerpt)
    except ValueError:  # not JSON, or cut at the excerpt's length
        return excerpt
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("title"), str) and error is None:
        detail, errors = body.get("detail"), body.get("errors")
        if not detail and isinstance(errors, dict) and errors:  # (trial 128: the title alone)
            detail = "; ".join(
                f"{field}: {' '.join(map(str, said)) if isinstance(said, list) else said}"
                for field, said in errors.items()
            )
        head = body["title"].removesuffix(".")  # (trial 210: "occurred.: The body…")
        return f"{head}: {detail}" if isinstance(detail, str) and detail else body["title"]
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return excerpt
    status = error.get("status") or error.get("code")
    return f"{status}: {error['message']}" if status else error["message"]


_LOST = re.compile(r"the target answered (\d{3})")
_LATE = re.compile(r"late answer: .*?code number = (\d{3})")


def ok_status(response_status: int | None, debug_info: str | None) -> int | None:
    """The 2xx status the target answered an attempt with, as far as its record shows.

    :param response_status: the attempt's recorded HTTP status.
    :param debug_info: its debug text.
    :return: the status, including an answer a ``lost_ack`` fault dropped or one that came
        after a ``deadline`` fault; ``None`` when it answered nothing 2xx.
    """
    candidates = [response_status]
    for pattern in (_LOST, _LATE):
        match = pattern.search(debug_info or "")
        if match:
            candidates.append(int(match.group(1)))
    return next((c for c in candidates if c is not None and 200 <= c <= 299), None)


def earlier_answers(
    deliveries: Iterable[tuple[Hashable, int | None, str | None]],
) -> list[tuple[int, int] | None]:
    """For each delivery answered 2xx, the first earlier 2xx answer to the same key (even one a
    ``lost_ack`` fault dropped or that came after the deadline). Keyed by run, such a delivery
    is a duplicate: a deduplicating target skipped the work, a naive one did it again.

    :param deliveries: ``(key, response_status, debug_info)`` per delivery, in start order.
    :return: per delivery, ``(status, position)`` of that earlier answer (``position`` counts
        from 0 in ``deliveries``), or ``None``.
    """
    first: dict[Hashable, tuple[int, int]] = {}
    out: list[tuple[int, int] | None] = []
    for position, (key, status, debug_info) in enumerate(deliveries):
        out.append(first.get(key) if status is not None and 200 <= status <= 299 else None)
        ok = ok_status(status, debug_info)
        if ok is not None:
            first.setdefault(key, (ok, position))
    return out


#: Characters of :func:`failure_reason` at most.
REASON_WIDTH = 160

#: What the reason of an injected fault that stands in for the delivery (a status, a connection
#: error) says: the target never received the attempt.
NOT_CALLED = "the target was not called"
#: What each fault's record says, and how its reason names it: ``(pattern on the debug text,
#: reason)``; the reason's ``{0}`` is the pattern's first group. The first match wins.
_INJECTED_REASONS = (
    (
        re.compile(r"Injected: the target answered (\S+) but the response was lost"),
        "injected lost ack: the target answered {0}, the answer was dropped",
    ),
    (
        # (records before 2026-12: "… passed while the target was still handling the request")
        re.compile(r"Injected: the attempt deadline passed (?:while|before the target)"),
        "injected deadline: the attempt deadline passed before the target's answer counted",
    ),
    (
        re.compile(r"Injected: (\S+ s) of latency exceeds the attempt deadline"),
        "injected delay: {0} of latency exceeds the attempt deadline",
    ),
    (
        re.compile(r"Injected: connection refused before sending"),
        f"injected connection error: refused before sending ({NOT_CALLED})",
    ),
    (
        re.compile(rf"code number = (\d{{3}}) \(injected: {NOT_CALLED}\)"),
        f"injected status {{0}}: {NOT_CALLED}",
    ),
)
_LATE_ANSWER = re.compile(r"The target's late answer: (?:.*?code number = (\d{3})|(.*))")


def injected_reason(debug_info: str) -> str:
    """The reason an injected fault gives for an attempt, naming the fault first, from the
    attempt's debug text; ``""`` when no fault altered its outcome.

    >>> injected_reason("URL_UNREACHABLE-UNREACHABLE_LOST_ACK. Injected: the target answered "
    ...                 "200 but the response was lost.")
    'injected lost ack: the target answered 200, the answer was dropped'
    """
    for pattern, text in _INJECTED_REASONS:
        match = pattern.search(debug_info)
        if match:
            reason = text.format(*match.groups())
            late = _LATE_ANSWER.search(debug_info)
            if late:
                reason += f"; its late answer: {(late.group(1) or late.group(2)).strip(' .')}"
            return reason
    return ""


def target_called(debug_info: str | None) -> bool:
    """Whether the target received the attempt of this debug text: ``False`` when an injected
    status or connection error stood in for its delivery (``replay --attempts`` does not send
    those again)."""
    return NOT_CALLED not in injected_reason(debug_info or "")


#: How the debug text of an injected duplicate delivery (a copy of an attempt) begins.
DUPLICATE_NOTE = "Injected duplicate delivery. "


def is_copy(debug_info: str) -> bool:
    """Whether an attempt of this debug text is an injected duplicate delivery (a copy)."""
    return debug_info.startswith(DUPLICATE_NOTE)


#: How an in-process app's own exception begins its attempt's ``debugInfo`` (its 500 is not the
#: service's answer, so no hint guesses at one).
APP_RAISED = "The app raised "
#: The ``type`` of the 500 problem body a timer router answers when its handler raised
#: (docs/testing.md; the body is pinned, so the exception is named only in the service's log).
_ROUTER_RAISED = "urn:hardened:problem:internal-server-error"


def failure_reason(attempt: Attempt, width: int = REASON_WIDTH) -> str:
    """Why a failed attempt failed, in one line: the one text every surface shows (the
    dashboard, the replay report, ``attempts``, ``runs`` and the text execution log).

    - an injected fault names itself first (:func:`injected_reason`): the target's answer,
      if any, is its body, not its reason; an injected duplicate delivery's reason is
      ``injected duplicate delivery: `` and the target's answer to it;
    - otherwise the start of the service's answer (its response excerpt; a Google API error
      body as its status and message, :func:`answer_text`), else the debug text;
    - the emulator's :attr:`Attempt.hint` (a timer route that is not the job's name) comes
      after the service's answer, never in its place.

    ``""`` for an attempt that succeeded or is still in flight.

    >>> from datetime import UTC, datetime
    >>> a = Attempt(1, "projects/p/locations/l/jobs/j", 1, 1, None, datetime(2026, 1, 1,
    ...     tzinfo=UTC), {"url": "http://h/x"}, response_status=503, code="UNAVAILABLE",
    ...     response_excerpt="database\\n  is down")
    >>> failure_reason(a)
    'database is down'

    :param attempt: an attempt record.
    :param width: the longest answer or debug text shown (longer ones end in ``…``, cut between
        words when a word ends in the last 20 characters); the hint
        follows it whole, so what to do about it is never cut, and the emulator's own
        ``EMULATOR_…`` and ``PUBSUB_ERROR…`` texts (which say what to do, such as the command
        that creates a missing topic) are cut only past four times ``width``, and a 401's or
        403's answer that says why the token was refused past twice ``width`` (its hint is
        then the token's claims only).
    """
    if attempt.code in (None, "OK"):
        return ""
    text = injected_reason(attempt.debug_info) if attempt.injected else ""
    hint = "" if text else attempt.hint
    if not text:
        text = answer_text(attempt.response_excerpt.strip()) or attempt.debug_info.removeprefix(
            DUPLICATE_NOTE
        )
        if hint and not attempt.response_excerpt.strip() and attempt.response_status:
            text = "empty body"
    text = " ".join(text.split())
    if text.startswith(("EMULATOR_", "PUBSUB_ERROR")):  # the emulator's words: what to do
        width *= 4
    elif attempt.response_status in (401, 403) and _TOKEN_CAUSE.search(text):  # the service's
        width *= 2
    text = cut_words(text, width)
    if attempt.copy:
        text = f"injected duplicate delivery: {text}"
    return f"{text} — emulator's hint: {' '.join(hint.split())}" if hint else text


#: Response body bytes an attempt record keeps (the rest is read and dropped): enough for the
#: error text a service answers with.
RESPONSE_EXCERPT_BYTES = 4096


def excerpt_text(body: bytes | bytearray) -> str:
    """The first :data:`RESPONSE_EXCERPT_BYTES` of ``body`` as text (UTF-8, bad bytes and a
    character cut at the end replaced).

    >>> excerpt_text(b"job 'x' posted to the timer route 'y'")
    "job 'x' posted to the timer route 'y'"
    """
    return body[:RESPONSE_EXCERPT_BYTES].decode("utf-8", "replace")


@dataclass(frozen=True)
class SkippedRun:
    """A scheduled time that did not get a run: an earlier run of the job (with its retries)
    was still going, or the emulator was not running at that time. Of the times an earlier run
    outlasted, the earliest gets one delayed run and the others are skipped (a pinned decision:
    Google says only that they "might be skipped"; docs/differences-from-production.md).

    :param job: the job's full name.
    :param schedule_time: the nominal time that was skipped, as the header would have shown it.
    :param recorded_at: when the emulator decided to skip it (UTC).
    :param reason: :data:`RUN_STILL_GOING` or :data:`EMULATOR_DOWN`.
    """

    job: str
    schedule_time: str | None
    nominal: datetime
    recorded_at: datetime
    reason: str = "RUN_STILL_GOING"

    def to_json(self) -> dict[str, Any]:
        """Return the ``/_emulator/skipped`` shape of this record."""
        return {
            "job": self.job,
            "scheduleTime": self.schedule_time,
            "nominalTime": iso(self.nominal),
            "recordedAt": iso(self.recorded_at),
            "reason": self.reason,
        }


#: :attr:`SkippedRun.reason`: the job's previous run (with its retries) was still going.
RUN_STILL_GOING = "RUN_STILL_GOING"
#: :attr:`SkippedRun.reason`: the emulator was not running at the scheduled time.
EMULATOR_DOWN = "EMULATOR_DOWN"
