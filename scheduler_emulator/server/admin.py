"""The emulator's own endpoints under ``/_emulator/`` (JSON in, JSON out).

- ``GET  /_emulator/health`` → 200 ``{"status": "ok", "pid": N}``
- ``GET  /_emulator/config`` → ``{"project": …, "location": …, "clock": "system"|"manual",
  "dstPolicy": "absolute"|"vixie", "httpClient": "libcurl"|"http.client", "pubsubEmulatorHost":
  "HOST:PORT"}``, the daemon's defaults for short job names (``scheduler-emulator env-init``
  reads it), its DST policy, how it sends HTTP attempts and, when it publishes to one, its
  Pub/Sub emulator
- ``GET  /_emulator/clock`` → ``{"now": "<RFC 3339 UTC>", "mode": "system"|"manual"}``
- ``POST /_emulator/clock:advance`` with ``{"seconds": N}`` (manual clock only) → ``{"now": …}``
- ``POST /_emulator/clock:moveTo`` with ``{"time": "<RFC 3339>"}`` (manual clock only)
- ``GET  /_emulator/attempts`` → one page ``{"attempts": [...], "nextPageToken": "…"}`` in
  start order (``nextPageToken`` absent on the last page): ``pageSize`` (default 100, at most
  1000), ``pageToken``, and the filters ``job`` (ID or full name), ``run`` (run id),
  ``startAfter`` / ``startBefore`` (RFC 3339; ``startAfter ≤ startTime < startBefore``),
  ``failed=true`` (ended with a code other than ``OK``); 400
  ``INVALID_ARGUMENT`` naming the parameter for a bad value, 404 ``NOT_FOUND`` for a job that
  neither exists nor has attempts
- ``GET  /_emulator/attempts/<id>`` → one attempt (404 when there is none, or retention
  dropped it); ``GET /_emulator/attempts?order=newest`` pages newest first
- ``GET  /_emulator/jobs`` → the dashboard's jobs view (:func:`~scheduler_emulator.runtime.
  read_model.job_rows`), ``GET /_emulator/runs`` → runs newest first (by when each was due)
  with their attempts, ``GET /_emulator/timeline`` → one lane per job for a time window (see
  docs/api.md);
  ``POST /_emulator/runs`` with ``{"job": ID, "scheduleTime": "<RFC 3339>"}`` → a forced run
  sent as if scheduled at that instant (emulator-only), answered with the job
- ``GET /`` and ``GET /_emulator/ui/`` → the dashboard page (:mod:`.dashboard`)
- ``GET  /_emulator/skipped`` → one page ``{"skipped": [...], "nextPageToken": "…"}`` of the
  scheduled times that got no run (an earlier run was still going, or the daemon was down), in the
  order they were recorded: ``pageSize``, ``pageToken`` and ``job`` as for attempts; 404 as for
  attempts
- ``GET /_emulator/faults`` → the fault plan ``{"seed": N, "rules": [...]}``, each rule with
  every field that applies to its action, defaults included; ``POST`` with one rule,
  ``{"rules": [...]}`` or ``{"seed": N, "rules": [...]}`` adds rules (and sets the seed), and
  refuses a field that does not apply to the rule's action; ``DELETE`` removes every rule
- ``GET /_emulator/executions`` → one page ``{"executions": [...], "nextPageToken": "…"}`` of
  the Cloud Run executions (``--cloud-run-jobs``) in creation order: ``pageSize``,
  ``pageToken``, ``job`` (ID or full name), ``state`` (``RUNNING``, ``SUCCEEDED``, ``FAILED``,
  ``CANCELLED``, ``INTERRUPTED``); ``GET /_emulator/executions/<id or full name>`` → one,
  with its task attempts
- ``POST /_emulator/reset`` → deletes every job, attempt and Cloud Run execution;
  ``{"clockTime": …}`` also sets a manual clock to that instant
- ``GET /_emulator/oidc/.well-known/openid-configuration``, ``GET /_emulator/oidc/certs`` (JWK
  Set) and ``GET /_emulator/oidc/v1/certs`` (``{kid: PEM certificate}``): the keys that sign
  the OIDC tokens jobs send (:mod:`~scheduler_emulator.runtime.delivery.tokens`)
- ``GET /_emulator/oauth2/tokeninfo?access_token=…`` → an OAuth token's email, scope and expiry
  as Google's tokeninfo answers, ``?id_token=…`` an ID token's claims; 400 ``{"error":
  "invalid_token", …}`` for an unknown, mis-signed or expired one

The clock endpoints answer only after every run, retry and delivery that fell due has finished;
on a system clock they answer 400 ``FAILED_PRECONDITION``.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from ..core.faults import FaultPlan, FaultRule
from ..domain.attempts import iso
from ..domain.codec import job_to_json, parse_timestamp, show_value
from ..domain.errors import ClockError, FailedPrecondition, InvalidArgument, NotFound, Unavailable
from ..domain.names import JobName, job_labels
from ..domain.paging import next_page_token, page_position
from ..domain.resources import Job
from ..runtime import EXECUTION_STATES, HttpTransport, app_engine_url
from ..runtime._emulator import Emulator
from ..runtime._options import ATTEMPTS_PAGE_SIZE, ATTEMPTS_PAGE_SIZE_MAX
from ..runtime.delivery.tokens import DISCOVERY_PATH, JWKS_PATH, TOKENINFO_PATH, X509_CERTS_PATH
from ..runtime.storage import read_model
from . import dashboard
from .api import given_once
from .grpc_api import grpc_available
from .request_body import request_json

__all__ = [
    "Admin",
    "EARLIEST_INSTANT",
    "LATEST_INSTANT",
    "check_clock_instant",
    "RULES",
]

#: The latest instant a manual clock may be moved to: the end of year 9999, the last one an RFC
#: 3339 timestamp (and Python's ``datetime``) can hold, less a day so that a day's schedule and
#: its retries still fit.
LATEST_INSTANT = datetime(9999, 12, 30, 23, 59, 59, tzinfo=UTC)
#: The earliest instant a manual clock may be set to: a day after the first a ``datetime``
#: holds, so that a look back from it (a timeline's window, a schedule's start) stays in range.
EARLIEST_INSTANT = datetime(1, 1, 2, tzinfo=UTC)
#: The most scheduled times of a job a timeline lane shows ahead of its clock.
LANE_FIRE_TIMES = 30
#: The most job IDs ``GET /_emulator/clock``'s ``nextDueJobs`` lists.
DUE_JOBS_SHOWN = 10
#: Timelines read at once (each up to ``read_model.TIMELINE_ATTEMPTS_MAX`` attempts); more wait
#: their turn (trial 177: 40 whole-history timelines at once took the daemon to 4.7 GB).
_TIMELINES_AT_ONCE = threading.BoundedSemaphore(2)


def check_clock_instant(instant: datetime, field: str) -> datetime:
    """Return ``instant`` (aware) if a manual clock may stand there.

    :raises InvalidArgument: naming ``field`` when it is before :data:`EARLIEST_INSTANT` or
        after :data:`LATEST_INSTANT`.
    """
    if not EARLIEST_INSTANT <= instant <= LATEST_INSTANT:
        bounds = f"from {iso(EARLIEST_INSTANT)} to {iso(LATEST_INSTANT)}"
        raise InvalidArgument(f"{field} must be {bounds}; got {iso(instant)}.", field=field)
    return instant


RULES = [
    Rule("/_emulator/health", methods=["GET"], endpoint="health"),
    Rule("/_emulator/config", methods=["GET"], endpoint="config"),
    Rule("/_emulator/clock", methods=["GET"], endpoint="clock"),
    Rule("/_emulator/clock:advance", methods=["POST"], endpoint="clock_advance"),
    Rule("/_emulator/clock:moveTo", methods=["POST"], endpoint="clock_move_to"),
    Rule("/_emulator/attempts", methods=["GET"], endpoint="attempts"),
    Rule("/_emulator/attempts/<attempt_id>", methods=["GET"], endpoint="attempt"),
    Rule("/_emulator/jobs", methods=["GET"], endpoint="job_rows"),
    Rule("/_emulator/runs", methods=["GET"], endpoint="runs"),
    Rule("/_emulator/runs", methods=["POST"], endpoint="start_run"),
    Rule("/_emulator/timeline", methods=["GET"], endpoint="timeline"),
    Rule("/", methods=["GET"], endpoint="dashboard_page"),
    Rule("/_emulator/ui/", methods=["GET"], endpoint="dashboard_page"),
    Rule("/_emulator/ui/<asset>", methods=["GET"], endpoint="dashboard_asset"),
    Rule("/_emulator/skipped", methods=["GET"], endpoint="skipped"),
    Rule("/_emulator/executions", methods=["GET"], endpoint="executions"),
    Rule("/_emulator/executions/<path:execution_id>", methods=["GET"], endpoint="execution"),
    Rule("/_emulator/reset", methods=["POST"], endpoint="reset"),
    Rule("/_emulator/faults", methods=["GET"], endpoint="get_faults"),
    Rule("/_emulator/faults", methods=["POST"], endpoint="add_faults"),
    Rule("/_emulator/faults", methods=["DELETE"], endpoint="clear_faults"),
    Rule(DISCOVERY_PATH, methods=["GET"], endpoint="oidc_discovery"),
    Rule(JWKS_PATH, methods=["GET"], endpoint="oidc_certs"),
    Rule(X509_CERTS_PATH, methods=["GET"], endpoint="oidc_x509_certs"),
    Rule(TOKENINFO_PATH, methods=["GET", "POST"], endpoint="oauth_tokeninfo"),
]


def _body_fields(request: Request, **examples: str) -> list[Any]:
    """The fields a request's JSON body must hold (a clock move's, a forced run's), in order.

    :param examples: each field's value as its error shows it, e.g. ``seconds="N"``.
    :raises InvalidArgument: (400) naming the first field the body lacks (or that it is not
        JSON), or a field or query parameter the request does not take (trial 127).
    """
    _only_parameters(request)
    body = request_json(request, allow_fields=frozenset(examples))
    shape = ", ".join(f'"{name}": {example}' for name, example in examples.items())
    for name in examples:
        if name not in body:
            raise InvalidArgument(f"The body must be {{{shape}}}; {name} is missing.", field=name)
    return [body[name] for name in examples]


def _only_parameters(request: Request, *allowed: str) -> None:
    """Refuse a query parameter the endpoint does not take, or one given twice, rather than
    answer as if it were not there (a filter silently ignored reads as a filter applied).

    :raises InvalidArgument: naming the parameter.
    """
    for name in request.args:
        if name not in allowed:
            raise InvalidArgument(
                f"{request.path} takes no parameter {show_value(name)}; it takes "
                f"{', '.join(allowed) or 'none'}.",
                field=name,
            )
        given_once(name, request.args.getlist(name))


def _page_query(request: Request) -> tuple[int, str]:
    """``pageSize`` (0 or absent: the default page) and ``pageToken`` of a paged listing.

    :raises InvalidArgument: naming ``pageSize`` for a value that is not 0 to 1000.
    """
    size = _query_int(request, "pageSize", default=0, low=0, high=ATTEMPTS_PAGE_SIZE_MAX)
    return size or ATTEMPTS_PAGE_SIZE, request.args.get("pageToken", "")


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
    if (
        text.isascii()
        and text.isdigit()
        and len(text) <= len(str(high))
        and low <= int(text) <= high
    ):
        return int(text)
    raise InvalidArgument(
        f"{name} must be a whole number from {low} to {high}; got {show_value(text)}.",
        field=name,
    )


def _query_choice(request: Request, name: str, choices: tuple[str, ...]) -> str:
    """The query parameter ``name``, one of ``choices`` in any case and with a space for a
    hyphen (the first when absent), spelled as in ``choices``: ``?state=succeeded`` reads as
    ``SUCCEEDED`` as the CLI's filters do, ``?state=gave up`` (a run's own ``state``) as
    ``gave-up``.

    :raises InvalidArgument: naming ``name`` and the values it takes.
    """
    text = request.args.get(name) or choices[0]  # empty reads as absent, as every filter does
    for choice in choices:
        if choice.lower() == text.lower().replace(" ", "-"):
            return choice
    shown = ", ".join(c for c in choices if c)
    raise InvalidArgument(f"{name} must be one of {shown}; got {show_value(text)}.", field=name)


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


def _window(first: str, start: datetime | None, last: str, end: datetime | None) -> None:
    """Check a time window's parameters ``first`` (``start``) and ``last`` (``end``).

    :raises InvalidArgument: naming ``first`` when both are given and ``start`` is not before
        ``end`` (a window that holds nothing is a slip, on every endpoint alike).
    """
    if start is not None and end is not None and start >= end:
        raise InvalidArgument(
            f"{first} must be before {last}; got {first} {iso(start)} and {last} {iso(end)}.",
            field=first,
        )


class Admin:
    """Handlers for the ``/_emulator/`` endpoints of one :class:`Emulator`."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        # Asked once, as the daemon's port decides at start whether it serves gRPC: grpcio
        # installed into the environment later does not make this daemon serve it.
        self._grpc = grpc_available()

    def health(self, request: Request) -> dict[str, Any]:
        """Liveness: always ``{"status": "ok", "pid": N}``, the serving process's ID (a script
        that started the daemon tells it from another one answering on the port)."""
        return {"status": "ok", "pid": os.getpid()}

    def _mode(self) -> str:
        return self.emulator.clock_mode

    def config(self, request: Request) -> dict[str, Any]:
        """The defaults for short job names, the clock's mode, the DST policy (``dstPolicy``:
        which runs a transition night fires, docs/schedules.md), and (for a daemon delivering
        over the network) ``httpClient``: ``"libcurl"`` or ``"http.client"``; ``grpc``: whether
        the ``[grpc]`` extra was installed when the daemon started, so its port serves gRPC
        beside REST."""
        _only_parameters(request)  # (trial 181: ?x=1 was taken)
        emulator = self.emulator
        answer: dict[str, Any] = {
            "project": emulator.project,
            "location": emulator.location,
            "clock": self._mode(),
            "dstPolicy": emulator.options.dst_policy,
            "grpc": self._grpc,
        }
        transport = emulator.transport
        if isinstance(transport, HttpTransport):
            answer["httpClient"] = "libcurl" if transport.uses_curl else "http.client"
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
                not self.emulator.has_job(name)
                and not self.emulator.attempts_page(job, page_size=1)[0]
            ):  # a short ID is the default location's: name jobs of that ID elsewhere (trial 57)
                jobs, parent = self.emulator.list_jobs(), name.rsplit("/", 2)[0]
                elsewhere = [j.name for j in jobs if j.job_id == job][:3]
                here = [j.job_id for j in jobs if j.name.rsplit("/", 2)[0] == parent]
                hint = f" in {parent}; jobs of that ID elsewhere (name one in full)"
                listed = ", ".join(here[:20]) + (
                    f", … ({len(here)} in all)" if len(here) > 20 else ""
                )
                near = difflib.get_close_matches(job, here, n=1)  # (trial 206, as `run` says)
                raise NotFound(
                    f"Job not found: job {show_value(job)} names no job and no recorded attempt"
                    + (f"{hint}: {', '.join(elsewhere)}." if elsewhere else ".")
                    + ("" if elsewhere or not here else f" Jobs in {parent}: {listed}.")
                    + (f" Did you mean {near[0]!r}?" if near and not elsewhere else "")
                )
        return job

    def clock(self, request: Request) -> dict[str, Any]:
        """The clock's instant and mode, and ``nextDue``: the next instant at which something
        is due (a fire time, a retry; now when it is overdue, as after a restart, so that a
        move to it runs it: trial 141), absent when nothing is, with ``nextDueJobs`` (the IDs of
        the first :data:`DUE_JOBS_SHOWN` jobs due then, by name; ``PROJECT/LOCATION/ID`` when
        they span projects or locations) and ``nextDueJobCount``."""
        _only_parameters(request)  # (trial 181: ?x=1 was taken)
        now = self.emulator.now()
        answer: dict[str, Any] = {"now": iso(now), "mode": self._mode()}
        due = self.emulator.next_due()
        if due is not None:  # (trial 172: which jobs, not only when)
            names = self.emulator.due_jobs()
            answer["nextDue"] = iso(max(due, now))
            answer["nextDueJobs"] = job_labels(names[:DUE_JOBS_SHOWN])  # (trial 224: two nightly)
            answer["nextDueJobCount"] = len(names)
        return answer

    def _manual_only(self, fn: Any, arg: Any, target: datetime) -> dict[str, Any]:
        try:
            now = fn(arg)
        except ClockError as exc:
            raise FailedPrecondition(str(exc)) from exc
        if now < target:  # the daemon's stop ended the move where it was
            raise Unavailable(
                f"The emulator is stopping: the clock stopped at {iso(now)}, before "
                f"{iso(target)}; what was due up to then was sent or recorded as not sent."
            )
        return {"now": iso(now)}

    def clock_advance(self, request: Request) -> dict[str, Any]:
        """Advance a manual clock by ``seconds`` and answer once everything due has settled."""
        [seconds] = _body_fields(request, seconds="N")
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
        return self._manual_only(self.emulator.advance, float(seconds), target)

    def clock_move_to(self, request: Request) -> dict[str, Any]:
        """Move a manual clock to ``time`` (RFC 3339) and answer once everything has settled."""
        [text] = _body_fields(request, time='"<RFC 3339>"')
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
        return self._manual_only(self.emulator.move_to, instant, instant)

    def attempts(self, request: Request) -> dict[str, Any]:
        """One page of attempts in start order, filtered by ``job``, ``run``, ``startAfter``,
        ``startBefore`` and ``failed=true`` (those that ended with a code other than ``OK``);
        ``nextPageToken`` names the next page (absent on the last one); ``droppedThrough`` the
        id of the newest attempt retention dropped, when it dropped one, and
        ``droppedThroughStart`` its start when this process dropped it.

        Only the page is read from the store, however long the history.
        """
        filters = ("job", "run", "startAfter", "startBefore", "order", "failed")
        _only_parameters(request, "pageSize", "pageToken", *filters)
        page_size, page_token = _page_query(request)
        run_id = _query_int(request, "run", default=None, low=1, high=2**63 - 1)
        start_after = _query_time(request, "startAfter")
        start_before = _query_time(request, "startBefore")
        _window("startAfter", start_after, "startBefore", start_before)
        order = _query_choice(request, "order", ("oldest", "newest"))
        failed = _query_choice(request, "failed", ("false", "true")) == "true"
        job = self._known_job(request)
        if order == "newest":
            if run_id is not None:
                raise InvalidArgument("order=newest does not take run; drop one.", field="run")
            before = page_position(page_token) or None
            newest, last = read_model.attempts_newest(
                self.emulator.store,
                job=None if job is None else self.emulator.job_name(job),
                start_after=start_after,
                start_before=start_before,
                before_id=before,
                page_size=page_size,
                failed=failed,
                now=self.emulator.now(),
            )
            answer = _page_answer("attempts", [a.to_json() for a in newest], next_page_token(last))
        else:
            page, token = self.emulator.attempts_page(
                job,
                run_id=run_id,
                start_after=start_after,
                start_before=start_before,
                page_size=page_size,
                page_token=page_token,
                failed=failed,
            )
            answer = _page_answer("attempts", [a.to_json() for a in page], token)
        through, start = self.emulator.store.dropped_through  # (trial 211: the --since notes)
        if through:
            answer["droppedThrough"] = through
            if start is not None:
                answer["droppedThroughStart"] = iso(parse_timestamp(start))
        return answer

    def attempt(self, request: Request, attempt_id: str) -> dict[str, Any]:
        """One attempt by its ``id``; 404 naming the id when there is none."""
        _only_parameters(request)
        if not (attempt_id.isascii() and attempt_id.isdigit() and len(attempt_id) <= 18):
            raise InvalidArgument(
                "The attempt id must be a whole number of at most 18 digits; got "
                f"{show_value(attempt_id)}.",
                field="id",
            )
        found = read_model.attempt_by_id(
            self.emulator.store, int(attempt_id), now=self.emulator.now()
        )
        if found is None:
            raise NotFound(f"Attempt not found: no attempt {attempt_id} (or it was dropped).")
        return found.to_json()

    def job_rows(self, request: Request) -> dict[str, Any]:
        """The jobs view: ``{"jobs": [row...], "totalSize": N, "nextPageToken"?}`` filtered by
        ``name`` (part of the job ID), ``state`` and ``failed=true`` (the last attempt failed),
        ``fireTimes`` next times each (default 5, at most 50); rows as
        :func:`~scheduler_emulator.runtime.storage.read_model.job_row`."""
        filters = ("name", "state", "failed", "fireTimes")
        _only_parameters(request, "pageSize", "pageToken", *filters)
        page_size, page_token = _page_query(request)
        fire_times = _query_int(
            request,
            "fireTimes",
            default=read_model.DEFAULT_FIRE_TIMES,
            low=0,
            high=read_model.MAX_FIRE_TIMES,
        )
        state = _query_choice(request, "state", ("", "ENABLED", "PAUSED"))
        now = self.emulator.now()
        rows, following, total = read_model.job_rows(
            self.emulator.list_jobs(),
            name=request.args.get("name", ""),
            state=state,
            failed=_query_choice(request, "failed", ("false", "true")) == "true",
            offset=page_position(page_token),
            page_size=page_size,
            fire_times=fire_times or 0,
            dst_policy=self.emulator.options.dst_policy,
            upcoming=self.emulator.upcoming,
            last=lambda job: read_model.newest_attempt(self.emulator.store, job, now),
            local_url=self._app_engine_url,
        )
        answer = _page_answer("jobs", rows, next_page_token(following))
        answer["totalSize"] = total
        return answer

    def _app_engine_url(self, job: Job) -> str | None:
        target = job.app_engine_http_target
        return None if target is None else app_engine_url(target, self.emulator.app_engine_urls)

    def runs(self, request: Request) -> dict[str, Any]:
        """Runs newest first by when each was due (``nominalTime``), each with its attempts and
        its state (see :func:`~scheduler_emulator.runtime.storage.read_model.run_state`: how it
        ended, or when its next attempt is due): ``job``, ``scheduledAfter`` ≤ ``nominalTime``
        < ``scheduledBefore``, ``state`` (a key of
        :data:`~scheduler_emulator.runtime.storage.read_model.RUN_FILTERS`), paged."""
        _only_parameters(
            request, "pageSize", "pageToken", "job", "scheduledAfter", "scheduledBefore", "state"
        )
        page_size, page_token = _page_query(request)
        job = self._known_job(request)
        after = _query_time(request, "scheduledAfter")
        before = _query_time(request, "scheduledBefore")
        _window("scheduledAfter", after, "scheduledBefore", before)
        runs, following = read_model.runs_page(
            self.emulator.store,
            job=None if job is None else self.emulator.job_name(job),
            after=after,
            before=before,
            state=_query_choice(request, "state", tuple(read_model.RUN_FILTERS)),
            offset=page_position(page_token),
            page_size=page_size,
            now=self.emulator.now(),
            config=self.emulator.job_config,
        )
        return _page_answer("runs", runs, next_page_token(following))

    def start_run(self, request: Request) -> dict[str, Any]:
        """Start a forced run of ``job`` whose attempts carry ``scheduleTime`` (RFC 3339, any
        offset) as their ``X-CloudScheduler-ScheduleTime``: "run as if scheduled at", an
        emulator-only action (RunJob sends the job's next scheduled time). Answers the job."""
        job, text = _body_fields(request, job='"<job ID>"', scheduleTime='"<RFC 3339>"')
        if not isinstance(job, str) or not isinstance(text, str):
            raise InvalidArgument(
                f"job and scheduleTime must be strings; got {show_value(job)} and "
                f"{show_value(text)}.",
                field="job" if not isinstance(job, str) else "scheduleTime",
            )
        when = parse_timestamp(text, field="scheduleTime")
        try:
            return job_to_json(self.emulator.run_job(job, schedule_time=when))
        except NotFound:
            raise NotFound(f"Job not found: no job {show_value(job)}.") from None

    def timeline(self, request: Request) -> dict[str, Any]:
        """One lane per job (filtered by ``name`` and ``state``, ``pageSize`` lanes, default
        50) for the window ``start`` ≤ t < ``end`` (default: the hour before now and 15 minutes
        after it): ``{"now", "clock", "start", "end", "lanes", "totalSize", "nextPageToken"?}``,
        each lane with its job's next :data:`LANE_FIRE_TIMES` scheduled times that fall in the
        window (``nextFireTimes``, UTC; and the first after it, drawn at the window's edge),
        each run that started a Cloud Run execution with
        ``"execution": {"id", "state"}``. Only the window is read from the store."""
        _only_parameters(request, "pageSize", "pageToken", "name", "state", "start", "end")
        size = _query_int(request, "pageSize", default=0, low=0, high=200) or 50
        offset = page_position(request.args.get("pageToken", ""))
        now = self.emulator.now()
        # the defaults' lengths, cut at the calendar's ends (trial 181: end=0001-01-01 was a 500)
        latest, earliest = datetime.max.replace(tzinfo=UTC), datetime.min.replace(tzinfo=UTC)
        end = _query_time(request, "end") or now + min(timedelta(minutes=15), latest - now)
        start = _query_time(request, "start") or end - min(timedelta(minutes=75), end - earliest)
        _window("start", start, "end", end)
        state = _query_choice(request, "state", ("", "ENABLED", "PAUSED"))
        name = request.args.get("name", "")
        kept = [job for job in self.emulator.list_jobs() if read_model.matches(job, name, state)]
        page = kept[offset : offset + size]
        with _TIMELINES_AT_ONCE:
            lanes = read_model.timeline(
                self.emulator.store,
                [job.name for job in page],
                start,
                end,
                now,
                config=self.emulator.job_config,
            )
        policy = self.emulator.options.dst_policy
        for started in (r["execution"] for lane in lanes for r in lane["runs"] if "execution" in r):
            if found := self.emulator.cloud_run.store.get(started["id"]):  # (not retention's)
                started["state"] = found.state
        for lane, job in zip(lanes, page, strict=True):
            lane["id"], lane["state"] = job.job_id, job.state.name
            lane["timeZone"], lane["targetType"] = job.time_zone or "Etc/UTC", job.target_type
            first = self.emulator.upcoming(job.name).next_fire  # what comes next (trial 80)
            upcoming = read_model.next_fire_times(
                job, LANE_FIRE_TIMES, dst_policy=policy, first=first
            )
            after = [t for t in upcoming if t >= end][:1]  # drawn ▷ at the edge (trial 225)
            lane["nextFireTimes"] = [iso(t) for t in upcoming if start <= t < end] + [
                iso(t) for t in after
            ]
        following = offset + size if offset + size < len(kept) else None
        answer = _page_answer("lanes", lanes, next_page_token(following))
        answer.update(
            now=iso(now), clock=self._mode(), start=iso(start), end=iso(end), totalSize=len(kept)
        )
        return answer

    def dashboard_page(self, request: Request) -> Response:
        """The dashboard's page (``GET /``, ``GET /_emulator/ui/``)."""
        return dashboard.asset_response("index.html")

    def dashboard_asset(self, request: Request, asset: str) -> Response:
        """One of the dashboard's files (script, style sheet); 404 for any other name."""
        return dashboard.asset_response(asset)

    def skipped(self, request: Request) -> dict[str, Any]:
        """One page of the scheduled times that got no run (an earlier run was still going, or the
        daemon was down), in the
        order they were recorded, filtered by ``job``; paged like :meth:`attempts`."""
        _only_parameters(request, "pageSize", "pageToken", "job")
        page_size, page_token = _page_query(request)
        job = self._known_job(request)
        page, token = self.emulator.skipped_page(job, page_size=page_size, page_token=page_token)
        return _page_answer("skipped", [s.to_json() for s in page], token)

    def executions(self, request: Request) -> dict[str, Any]:
        """One page of Cloud Run executions in creation order: ``{"executions": [...],
        "nextPageToken"?}``, filtered by ``job`` (a Cloud Run job's ID or full name) and
        ``state``; each as
        :meth:`~scheduler_emulator.runtime.cloud_run.executions.Execution.to_json`. A job ID
        names a defined job, or one of the daemon's project and location with records.

        :raises NotFound: for a job ID that names neither."""
        _only_parameters(request, "pageSize", "pageToken", "job", "state")
        page_size, page_token = _page_query(request)
        state = _query_choice(request, "state", ("", *EXECUTION_STATES))
        job = request.args.get("job") or None
        cloud_run = self.emulator.cloud_run
        if job is not None and "/" not in job:
            named = [j.name for j in cloud_run.jobs() if j.job_id == job]
            kept = JobName(self.emulator.project, self.emulator.location, job).full
            if not named and cloud_run.store.list(job=kept, limit=1):  # one no longer defined
                named = [kept]
            if not named:
                ids = [j.job_id for j in cloud_run.jobs()]
                defined = ", ".join(ids) or "none"
                if near := difflib.get_close_matches(job, ids, n=1):  # (trial 220)
                    defined += f"; did you mean {near[0]!r}?"
                try:
                    self.emulator.get_job(job)
                    also = (
                        f" {show_value(job)} is a Cloud Scheduler job; the job filter (job=, "
                        "the executions command's --job) takes the Cloud Run job it runs."
                    )
                except (NotFound, InvalidArgument):
                    also = ""
                raise NotFound(
                    f"No Cloud Run job {show_value(job)} is defined (defined: {defined}).{also}"
                )
            job = named[0]
        page = cloud_run.store.list(
            job=job, state=state or None, after=page_position(page_token), limit=page_size + 1
        )
        following = page[page_size - 1].seq if len(page) > page_size else None
        return _page_answer(
            "executions", [e.to_json() for e in page[:page_size]], next_page_token(following)
        )

    def execution(self, request: Request, execution_id: str) -> dict[str, Any]:
        """One Cloud Run execution by its ID (``export-x7k2p``) or its full ``name``
        (``projects/P/locations/L/jobs/J/executions/export-x7k2p``); 404 when there is none."""
        found = self.emulator.cloud_run.store.get(execution_id)
        if found is None:
            raise NotFound(f"Execution not found: no execution {show_value(execution_id)}.")
        return found.to_json()

    def reset(self, request: Request) -> dict[str, Any]:
        """Delete every job, run and attempt; with ``{"clockTime": "<RFC 3339>"}`` also set a
        manual clock to that instant (backwards too), for test isolation."""
        _only_parameters(request)  # (trial 127: reset?x=1 was taken)
        text = request_json(request, allow_fields=frozenset({"clockTime"})).get("clockTime")
        if text is not None and not isinstance(text, str):
            raise InvalidArgument(
                f"clockTime must be an RFC 3339 string; got {show_value(text)}.",
                field="clockTime",
            )
        instant = None if text is None else parse_timestamp(text, field="clockTime")
        if instant is not None:
            check_clock_instant(instant, "clockTime")
        self.emulator.reset()
        if instant is not None:
            if self.emulator.clock_mode != "manual":
                raise FailedPrecondition("clockTime needs a manual clock (--clock manual).")
            self.emulator.reset_clock(instant)
        return {}

    def _plan_json(self) -> dict[str, Any]:
        plan = self.emulator.faults  # (trial 225: how often each fired, as the report says)
        rules = [rule.to_full_json() for rule in list(plan.rules)]
        return {"seed": plan.seed, "rules": rules, "fired": plan.fired()[: len(rules)]}

    def get_faults(self, request: Request) -> dict[str, Any]:
        """The fault plan: ``{"seed": N, "rules": [...], "fired": [N, …]}``, each rule as
        :meth:`~scheduler_emulator.core.faults.FaultRule.to_full_json` shows it (every field its
        action reads, defaults included), with how many attempts each fired for so far."""
        _only_parameters(request)  # (trial 133: faults?dryRun=1 was taken and acted on)
        return self._plan_json()

    def add_faults(self, request: Request) -> dict[str, Any]:
        """Add one rule (a rule object) or several (``{"seed"?, "rules": [...]}``)."""
        _only_parameters(request)
        body = request_json(request)
        plan = self.emulator.faults
        if not body:  # (trial 127: {} added nothing, without a word)
            got = "{}" if request.get_data().strip() else "no body"
            raise InvalidArgument(
                'The body must be a fault rule (with "action") or {"seed": N, "rules": [...]}; '
                f"got {got}.",
                field="rules",
            )
        if "action" in body:
            plan.add(FaultRule.from_json(body))
        else:
            parsed = FaultPlan.from_json(body)
            plan.check_room(len(parsed.rules))  # (none added when they do not all fit)
            if "seed" in body:
                plan.seed = parsed.seed
            for rule in parsed.rules:
                plan.add(rule)
        return self._plan_json()

    def clear_faults(self, request: Request) -> dict[str, Any]:
        """Remove every fault rule."""
        _only_parameters(request)
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
        """Describe an access token or an ID token (``access_token`` or ``id_token`` in the
        query or a form body)."""
        tokens, given = self.emulator.tokens, request.values
        if token := given.get("access_token"):
            status, body = tokens.tokeninfo(token)
        elif token := given.get("id_token"):
            status, body = tokens.id_tokeninfo(token)
        else:
            needed = "Either access_token, id_token, or token_handle required"  # (Google's)
            status, body = 400, {"error": "invalid_request", "error_description": needed}
        return Response(
            json.dumps(body), status=status, content_type="application/json; charset=UTF-8"
        )
