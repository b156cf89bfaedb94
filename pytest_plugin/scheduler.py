"""The ``cloud_scheduler`` fixture's object: an in-process emulator on a virtual clock.

Targets see the virtual instant while it delivers (:class:`VirtualTimeTransport`); unmounted
URLs reach loopback origins only unless ``allow_network=True`` (:class:`LoopbackOnlyTransport`);
see docs/testing.md.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import urlsplit

from pytest_plugin.app_time import MonotonicFloor, freeze
from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.core.faults import FaultPlan
from scheduler_emulator.domain.attempt_assertions import AttemptAssertions
from scheduler_emulator.domain.attempts import Attempt, failure_reason, iso
from scheduler_emulator.domain.cloud_run import DEFAULT_MAX_RETRIES, parse_cloud_run_job
from scheduler_emulator.domain.errors import ApiError, InvalidArgument
from scheduler_emulator.domain.outcomes import Failure
from scheduler_emulator.domain.resources import Job
from scheduler_emulator.domain.schedule import DEFAULT_DST_POLICY
from scheduler_emulator.runtime import (
    DEFAULT_HEADER_CASE,
    EXECUTION_STATES,
    JWKS_PATH,
    TOKENINFO_PATH,
    AsgiApp,
    DeliveryRequest,
    Execution,
    HttpTransport,
    InProcessPublisher,
    MountTransport,
    Publisher,
    PubsubMessage,
    TokenAuthority,
    Transport,
    TransportResult,
    WsgiApp,
)
from scheduler_emulator.tools.fault_file import load_fault_file
from scheduler_emulator.tools.jobs_file import load_jobs_file
from scheduler_emulator.wire import cloud_run_job_of, is_loopback

if TYPE_CHECKING:
    from werkzeug.serving import BaseWSGIServer

__all__ = ["CloudScheduler", "LoopbackOnlyTransport", "VirtualTimeTransport", "is_loopback"]

#: :meth:`CloudScheduler.define_cloud_run_job`'s keywords by the definition's field each fills.
_KEYWORDS = (
    *((f"template.template.containers[0].{k}", k) for k in ("command", "args", "env")),
    ("template.template.containers[0].emulatorCommand", "command"),
    ("template.template.maxRetries", "max_retries"),
    ("template.template.timeout", "timeout"),
    ("template.taskCount", "task_count"),
    ("template.parallelism", "parallelism"),
)
_P = ParamSpec("_P")
_R = TypeVar("_R")


class LoopbackOnlyTransport:
    """The fallback of the ``cloud_scheduler`` fixture: real HTTP to loopback origins only.

    A request for any other origin is not sent: it fails as a connection error whose detail
    names the origin and says how to mount an app for it (or to pass ``allow_network=True``).

    :param inner: the transport for loopback URLs (real HTTP).
    :param mounted: returns the mounted prefixes, for the message.
    """

    def __init__(self, inner: Transport, mounted: Callable[[], list[str]]) -> None:
        self.inner = inner
        self._mounted = mounted

    def close(self) -> None:
        """Close the loopback transport."""
        self.inner.close()

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Send a loopback request; refuse any other without touching the network."""
        if is_loopback(request.url):
            return self.inner.send(request, timeout_seconds)
        parts = urlsplit(request.url)
        origin = f"{parts.scheme}://{parts.netloc}"
        mounted = ", ".join(sorted(self._mounted())) or "none"
        return TransportResult(
            failure=Failure.CONNECTION,
            detail=(
                f"Not sent: {origin} is neither mounted nor loopback, and the cloud_scheduler "
                f"fixture does not reach the network. Mount the app under test for it: "
                f'cloud_scheduler.mount("{origin}", app) (mounted: {mounted}); or allow real '
                "HTTP with @pytest.mark.cloud_scheduler(allow_network=True) or "
                "cloud_scheduler.allow_network = True."
            ),
        )


class VirtualTimeTransport(MountTransport):
    """A :class:`MountTransport` that shows targets the clock's virtual instant.

    Inside :meth:`virtual_time` time is frozen for targets (:func:`pytest_plugin.app_time.freeze`,
    started once, moved per delivery); the engine's clocks read time through functions
    freezegun cannot reach, so they keep their own time.

    :param clock: the emulator's manual clock.
    :param fallback: the transport of unmounted URLs.
    """

    def __init__(self, clock: ManualClock, fallback: Transport) -> None:
        super().__init__(fallback=fallback)
        self.clock = clock
        self._frozen: Any = None
        self._monotonic = MonotonicFloor()  # (one per test: its clock starts afresh)

    @contextmanager
    def virtual_time(self) -> Iterator[None]:
        """Freeze time for targets for the duration of the block (re-entrant)."""
        if self._frozen is not None:
            yield
            return
        with freeze(self.clock.now(), self._monotonic) as self._frozen:
            try:
                yield
            finally:
                self._frozen = None

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Deliver; the target sees ``datetime.now()`` equal to the attempt's start (a mounted
        app, or a server in this process)."""
        if self._frozen is not None:
            self._frozen.move_to(self.clock.now())
        return super().send(request, timeout_seconds)


def _emulator_method(
    method: Callable[Concatenate[Emulator, _P], _R],
) -> Callable[Concatenate[CloudScheduler, _P], _R]:
    """``method`` of the fixture's emulator, as a method of the fixture; a refusal of what the
    test passed (:class:`ApiError`) is raised at the test's line, without the emulator's
    frames (trials 212, 215: 8 to 30 lines of them before the message)."""

    @functools.wraps(method)
    def forward(self: CloudScheduler, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        __tracebackhide__ = True  # pytest's: this frame is not shown either
        try:
            return method(self.emulator, *args, **kwargs)
        except ApiError as exc:
            raise exc.with_traceback(None) from None

    return forward


class CloudScheduler(AttemptAssertions):
    """An in-process Cloud Scheduler on a :class:`ManualClock`, for one test.

    :param start: the clock's initial instant (aware).
    :param allow_network: let jobs reach unmounted, non-loopback origins over real HTTP (off:
        such an attempt fails without a network call, saying how to mount the app).
    :param publisher: where Pub/Sub jobs publish; by default an
        :class:`~scheduler_emulator.runtime.InProcessPublisher` on the virtual clock
        that pushes through the mounted apps (:meth:`published`, :meth:`push`).
    :param topics: the only topics the default publisher has (IDs or full names): a publish
        to another fails ``NOT_FOUND``, as in production; ``None``: every topic exists.
    :param app_engine_urls: local base URL(s) of App Engine services (one URL, or
        ``{"worker": "http://worker.test", "*": "http://app.test"}``).
    :param header_case: how attempts spell header names: ``"google"`` (the default),
        ``"lower"`` or ``"canonical"`` (seen only by targets reached over real HTTP that keep
        the names as sent; see docs/testing.md).
    :param dst_policy: ``"absolute"`` (the default) or ``"vixie"``: how cron schedules meet
        daylight-saving changes (docs/schedules.md).
    :raises ValueError: for another ``dst_policy``, or ``topics`` with a ``publisher``.
    """

    def __init__(
        self,
        start: datetime,
        *,
        allow_network: bool = False,
        publisher: Publisher | None = None,
        topics: list[str] | None = None,
        app_engine_urls: str | Mapping[str, str] | None = None,
        header_case: str = DEFAULT_HEADER_CASE,
        dst_policy: str = DEFAULT_DST_POLICY,
    ) -> None:
        if publisher is not None and topics is not None:  # (trial 153: its own clock, no push)
            raise ValueError("topics= sets the in-process publisher's topics; not with publisher=")
        self.clock = ManualClock(start)
        self._http = HttpTransport()
        self.transport = VirtualTimeTransport(self.clock, self._http)
        self._guarded = LoopbackOnlyTransport(self._http, lambda: self.transport.mounted)
        self.allow_network = allow_network
        self.publisher: Publisher = publisher or InProcessPublisher(
            self.clock, self.transport, topics=topics
        )
        self.emulator = Emulator(
            self.clock,
            transport=self.transport,
            publisher=self.publisher,
            app_engine_urls=app_engine_urls,
            header_case=header_case,
            dst_policy=dst_policy,
        )
        self._server: BaseWSGIServer | None = None

    @property
    def allow_network(self) -> bool:
        """Whether jobs may reach unmounted origins that are not loopback (settable)."""
        return self.transport.fallback is self._http

    @allow_network.setter
    def allow_network(self, allowed: bool) -> None:
        self.transport.fallback = self._http if allowed else self._guarded

    def close(self) -> None:
        """Release the emulator, stop mounted ASGI apps' event loops (and the keys' HTTP
        server, if :attr:`url` started it)."""
        if self._server is not None:
            self._server.shutdown()  # returns once serve_forever has
            self._server.server_close()
            self._server = None
        self.emulator.close()
        self.transport.close()

    @property
    def faults(self) -> FaultPlan:
        """The fault plan: ``cloud_scheduler.faults.add(action="lost_ack", job="nightly")``
        (see :mod:`scheduler_emulator.core.faults`); ``faults.seed`` sets the random seed;
        :meth:`load_faults` adds a file's rules."""
        return self.emulator.faults

    # ---------------------------------------------------------------- tokens (OIDC and OAuth)

    @property
    def tokens(self) -> TokenAuthority:
        """What mints this emulator's tokens: its key (``tokens.jwks()``), issuer, tokeninfo."""
        return self.emulator.tokens

    @property
    def url(self) -> str:
        """Base URL of this emulator's endpoints over real HTTP (REST API and ``/_emulator/``),
        started on first use on a free local port, for code that fetches keys or tokeninfo."""
        if self._server is None:
            from scheduler_emulator.server.server import serve

            self._server = serve(self.emulator, "127.0.0.1", 0)
            threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},  # shut down quickly at the end of the test
                name="cloud-scheduler-keys",
                daemon=True,
            ).start()
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def certs_url(self) -> str:
        """URL of this emulator's signing keys as a JWK Set: pass it as ``certs_url`` to
        ``verify_scheduler_token`` or ``google.oauth2.id_token.verify_token`` in the service
        under test. Starts a small local HTTP server on first use."""
        return self.url + JWKS_PATH

    @property
    def tokeninfo_url(self) -> str:
        """URL of this emulator's tokeninfo (``?access_token=…`` or ``?id_token=…``), for a
        service under test that checks tokens as Google's ``oauth2.googleapis.com/tokeninfo``
        does. Starts a small local HTTP server on first use."""
        return self.url + TOKENINFO_PATH

    def verify_oidc(
        self, token: str, audience: str, *, now: datetime | None = None
    ) -> dict[str, Any]:
        """Verify an ID token this emulator minted, on its virtual clock; return the claims.

        :param token: the token, or an ``Authorization`` value (``"Bearer …"``), e.g.
            ``attempt.request["headers"]["Authorization"]``.
        :param audience: the ``aud`` the token must carry.
        :param now: the instant to check at; the emulator's clock by default.
        :raises TokenError: expired, not yet valid, mis-signed, wrong issuer or wrong audience
            (see :mod:`scheduler_emulator.service.auth`).
        """
        from scheduler_emulator.service.auth import verify_id_token

        keys, issuers = self.tokens.jwks(), [self.tokens.issuer]
        return verify_id_token(
            token, audience=audience, keys=keys, issuers=issuers, now=now or self.now()
        )

    def tokeninfo(self, access_token: str) -> dict[str, str]:
        """What Google's tokeninfo answers for an OAuth token this emulator minted
        (``email``, ``scope``, ``exp``, ``expires_in``…).

        :raises AssertionError: for an unknown or expired token (tokeninfo's 400).
        """
        token = access_token.removeprefix("Bearer ").strip()
        status, body = self.emulator.tokens.tokeninfo(token)
        if status != 200:
            raise AssertionError(f"tokeninfo refused the token: {body}")
        return body

    # ---------------------------------------------------------------- targets and jobs

    def mount(self, base_url: str, app: WsgiApp | AsgiApp) -> None:
        """Deliver requests for URLs under ``base_url`` to ``app`` in-process.

        ``app`` is a WSGI app (Flask, Django...) or an ASGI app (Starlette, FastAPI...), told
        apart by its ``__call__``; an ASGI app runs on an event loop of its own (needs httpx, the
        ``asgi`` extra), which :meth:`close` stops.

        :param base_url: ``http(s)://host[:port][/path]``, such as the production service's URL
            ``https://orders-abc123-uc.a.run.app``; the longest mounted prefix wins. The app
            sees the request's whole path (a ``/path`` here is not taken off it).
        :raises ValueError: if ``base_url`` is not an http(s) URL.
        :raises TypeError: if ``app`` is not callable (``"service:api"`` text is not an app).
        :raises ImportError: for an ASGI app without httpx installed.
        """
        self.transport.mount(base_url, app)

    # ---------------------------------------------------------------- Pub/Sub targets

    def _in_process(self) -> InProcessPublisher:
        if not isinstance(self.publisher, InProcessPublisher):
            raise TypeError(
                "published() and push() need the default in-process publisher; this "
                f"cloud_scheduler publishes through {type(self.publisher).__name__}."
            )
        return self.publisher

    def published(self, topic: str | None = None) -> list[PubsubMessage]:
        """Messages Pub/Sub jobs published, in order (``.data`` bytes, ``.text``,
        ``.attributes``, ``.message_id``, ``.publish_time`` on the virtual clock, ``.pushes``).

        :param topic: topic ID (project ``my-project``) or full name; every topic by default.
        :raises TypeError: when a publisher other than the in-process one was passed.
        """
        return self._in_process().published(topic)

    def push(self, topic: str, to: str, subscription: str | None = None) -> str:
        """Push every later message of ``topic`` to ``to`` as a Pub/Sub push request: a POST
        of ``{"message": {"data" (base64), "attributes", "messageId", "publishTime", …},
        "subscription"}``, in-process when ``to`` is mounted, on the virtual clock.

        :param topic: topic ID or full name.
        :param to: the push endpoint URL (mount its app first).
        :param subscription: subscription ID or full name (default ``<topic>-push``).
        :return: the subscription's full name (the envelope's ``subscription``).
        :raises TypeError: when a publisher other than the in-process one was passed.
        """
        return self._in_process().subscribe_push(topic, to, subscription)

    # The job methods are the emulator's own (same signatures and docstrings).
    create_job = _emulator_method(Emulator.create_job)

    def load_jobs(self, path: str | Path) -> list[Job]:
        """Create every job of a jobs file, the YAML or JSON list ``scheduler-emulator start
        --jobs`` takes (short names get the emulator's project and location); each first fires
        after the clock's instant, as :meth:`create_job`'s jobs do.

        :return: the jobs created, in file order.
        :raises ConfigurationError: naming the file, the job, the field and the value.
        """
        emulator = self.emulator
        jobs = load_jobs_file(path, project=emulator.project, location=emulator.location)
        return [emulator.create_job(job) for job in jobs]

    def load_faults(self, path: str | Path) -> FaultPlan:
        """Add the rules of a fault plan file (the YAML or JSON ``scheduler-emulator start
        --faults`` takes) to :attr:`faults`, and take its seed (0 when it names none); warn
        (``UserWarning``) about each rule of the plan that never acts, and, once jobs exist,
        each whose job pattern matches none of them, as the daemon does.

        :raises InvalidArgument: naming the file and each problem.
        :return: :attr:`faults`.
        """
        loaded, plan = load_fault_file(path), self.faults
        plan.seed = loaded.seed
        for rule in loaded.rules:
            plan.add(rule)
        ids = [job.job_id for job in self.emulator.list_jobs()]  # (trial 155: a misspelt job)
        for note in plan.shadowed() + plan.unmatched(ids):
            warnings.warn(f"{path}: {note}", stacklevel=2)
        return plan

    get_job = _emulator_method(Emulator.get_job)
    pause_job = _emulator_method(Emulator.pause_job)
    resume_job = _emulator_method(Emulator.resume_job)
    delete_job = _emulator_method(Emulator.delete_job)

    # ---------------------------------------------------------------- time

    now = _emulator_method(Emulator.now)

    def advance(self, delta: timedelta | float) -> datetime:
        """Advance the clock by ``delta`` (timedelta or seconds), delivering everything that
        falls due in order, retries included; returns the new instant, once the Cloud Run
        executions started on the way have ended (their tasks run in real time)."""
        with self.transport.virtual_time():
            now = self.clock.advance(delta)
        self.emulator.cloud_run.settle()
        return now

    def move_to(self, instant: datetime) -> datetime:
        """Move the clock to ``instant`` (aware), delivering everything due on the way; returns
        once the Cloud Run executions started on the way have ended."""
        with self.transport.virtual_time():
            now = self.clock.move_to(instant)
        self.emulator.cloud_run.settle()
        return now

    def run_job(self, name: str, *, schedule_time: datetime | None = None) -> Job:
        """Force a run now (RunJob), even while paused or running; the attempt is delivered
        before this returns. Its ``X-CloudScheduler-ScheduleTime`` is the job's next scheduled
        time (none for English-like schedules, or with ``force_run_schedule_time="omit"``), or
        ``schedule_time`` (aware): run as if scheduled then (:meth:`Emulator.run_job`).
        """
        with self.transport.virtual_time():
            return self.emulator.run_job(name, schedule_time=schedule_time)

    # ---------------------------------------------------------------- Cloud Run jobs

    def define_cloud_run_job(
        self,
        name: str,
        command: Sequence[str] | Callable[[], int | None],
        *,
        args: Sequence[str] = (),
        task_count: int = 1,
        parallelism: int = 0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: str = "600s",
        env: Mapping[str, str] | None = None,
    ) -> str:
        """Define a Cloud Run job that a scheduler job's ``jobs/J:run`` URI (or the Admin API)
        runs as local processes, and return its full name
        (``projects/P/locations/L/jobs/J``).

        :param name: the Cloud Run job's ID.
        :param command: the process to start (``["python", "export.py"]``), or a module-level
            function run in a fresh Python process whose return value is the task's exit
            status (``None`` is 0); it reads the task from ``os.environ``
            (``CLOUD_RUN_TASK_INDEX``...).
        :param args: the container's arguments, after ``command``: what a run's
            ``containerOverrides`` ``args`` replace.
        :param task_count: tasks per execution; ``parallelism``: at most this many at once (0:
            all); ``max_retries``: retries of a failed task; ``timeout``: each task attempt's
            (``"600s"``); ``env``: the container's environment variables.
        :raises TypeError: for a function that cannot be imported by name (a lambda, a
            nested function, or one of a module not on ``sys.path``).
        :raises InvalidArgument: for a value Cloud Run refuses, naming it, or a ``name``
            defined already.
        """
        __tracebackhide__ = True  # a refusal is shown at the test's line (trial 228: 40 lines)
        variables = dict(env or {})
        if callable(command):
            qualname, module = getattr(command, "__qualname__", ""), command.__module__
            if "<" in qualname:
                raise TypeError(
                    f"{qualname} cannot be run in a task process; define it at module level."
                )
            try:  # the task process imports it by name (trial 228: --import-mode=importlib)
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                raise TypeError(
                    f"{module}:{qualname} cannot be run in a task process: it imports the module "
                    f"{module!r} by name, which is not on sys.path (as under pytest "
                    "--import-mode=importlib); define the function in a module on sys.path."
                )
            target = f"{module}:{qualname}"
            code = f"from scheduler_emulator.runtime import run_callable; run_callable({target!r})"
            argv: str | list[str] = [sys.executable, "-c", code]
            variables.setdefault("PYTHONPATH", os.pathsep.join(p or os.getcwd() for p in sys.path))
        else:  # (a string is refused as the daemon's files refuse it, not split into letters)
            argv = command if isinstance(command, str) else list(command)
        container = {
            "command": argv,
            "args": args if isinstance(args, str) else list(args),
            "env": [{"name": k, "value": v} for k, v in variables.items()],
        }
        task = {"maxRetries": max_retries, "timeout": timeout, "containers": [container]}
        execution = {"taskCount": task_count, "parallelism": parallelism, "template": task}
        definition = {"name": name, "template": execution}
        try:
            job = parse_cloud_run_job(
                definition, project=self.emulator.project, location=self.emulator.location
            )
        except InvalidArgument as exc:  # named by the keyword, not the definition's field
            message = exc.message
            for path, keyword in _KEYWORDS:
                message = message.replace(f": {path}", f": define_cloud_run_job's {keyword}")
            raise InvalidArgument(message) from None
        if any(defined.name == job.name for defined in self.emulator.cloud_run.jobs()):
            raise InvalidArgument(  # (trial 228: the second replaced the first, unsaid)
                f"define_cloud_run_job: Cloud Run job {name!r} is defined already in this test; "
                "give the other one another name."
            )
        self.emulator.cloud_run.define(job)
        return job.name

    def executions(self, job: str | None = None) -> list[Execution]:
        """The Cloud Run executions in creation order, optionally of one Cloud Run job (ID or
        full name); each with its ``state`` and task ``attempts`` (exit code, output)."""
        found = self.emulator.cloud_run.store.list(limit=None)
        return [e for e in found if job is None or job in (e.job.name, e.job.job_id)]

    def assert_executed(
        self, job: str, count: int | None = None, state: str | None = "SUCCEEDED"
    ) -> list[Execution]:
        """Assert on the executions of the Cloud Run job ``job`` (ID or full name); return the
        matching ones. An execution matches when its state is ``state`` (``"SUCCEEDED"``,
        ``"FAILED"``, ``"INTERRUPTED"``, ``"RUNNING"``; ``None``: any). With ``count``, exactly
        that many must match; without it, at least one.

        :raises AssertionError: listing every execution of the job, when it was created, its
            state and each task attempt's exit code (and a failed one's last line of stderr),
            with the clock's instant.
        :raises ValueError: for a ``state`` that is none of those (in any case).
        """
        __tracebackhide__ = True
        state = state.upper() if state else state  # (a trial's "succeeded" matched nothing)
        if state is not None and state not in EXECUTION_STATES:
            raise ValueError(f"state must be one of {', '.join(EXECUTION_STATES)}; got {state!r}.")
        executions = self.executions(job)
        matching = [e for e in executions if state is None or e.state == state]
        if (count is None and matching) or len(matching) == count:
            return matching
        wanted = "at least one" if count is None else str(count)
        lines = [
            f"expected {wanted} execution{'' if count in (None, 1) else 's'} of Cloud Run job "
            f"{job!r}"
            + (f" in state {state}" if state else "")
            + f"; {len(matching)} of {len(executions)} matched at {iso(self.now())}:"
        ]
        for e in executions:
            codes = ", ".join(  # a failure's last line of stderr, as the executions view's
                f"task {a.index} attempt {a.attempt}: {a.stopped or a.exit_code}"
                + (f" ({said[-1]})" if not a.ok and (said := a.stderr.strip().splitlines()) else "")
                for a in sorted(e.attempts, key=attrgetter("index", "attempt"))  # (task order)
            )
            created = iso(e.create_time)
            lines.append(
                f"  {e.execution_id} created {created} {e.state} ({codes or 'no task attempts'})"
            )
        if not executions:
            ids, short = [j.job_id for j in self.emulator.cloud_run.jobs()], job.rsplit("/", 1)[-1]
            near = difflib.get_close_matches(short, ids, n=1) if short not in ids else []
            meant = f"; did you mean {near[0]!r}?" if near else ""  # (trial 228: a typo)
            lines.append(
                f"  (no executions; Cloud Run jobs defined: {', '.join(ids) or 'none'}{meant})"
            )
            for j in self.emulator.list_jobs():  # (trial 228: asserted before it was due)
                target = j.http_target.uri if j.http_target else ""
                if (
                    cloud_run_job_of(target) == short
                    and j.schedule_time
                    and j.state.name == "ENABLED"
                ):
                    lines.append(
                        f"  scheduler job {j.job_id} runs it next at {iso(j.schedule_time)} "
                        "(advance the clock to it)"
                    )
            for a in self.attempts():  # the scheduler's failed calls to a :run (a misspelt job's
                if a.runs_cloud_run_job and a.code != "OK":  # too), and why each failed
                    lines.append(f"  scheduler job {a.job_id}: {failure_reason(a, width=1000)}")
        raise AssertionError("\n".join(lines))

    # ---------------------------------------------------------------- history and assertions

    attempts = _emulator_method(Emulator.attempts)
    attempts_page = _emulator_method(Emulator.attempts_page)
    skipped_runs = _emulator_method(Emulator.skipped_runs)
    _next_runs = _emulator_method(Emulator._next_runs)

    def _attempt_hint(self, attempt: Attempt) -> str | None:
        """Say so when a failed attempt's URL is not mounted (it went nowhere), or its App
        Engine service has none (trial 157: "is not mounted" of an empty URL)."""
        url = attempt.request.get("url", "")
        if attempt.response_status is None and not url and attempt.code == "FAILED_PRECONDITION":
            job = self.emulator.job_config(attempt.job)  # (trial 215: "default" of any service)
            target = job.app_engine_http_target if job is not None else None
            service = target.service if target is not None and target.service else "default"
            return (
                "map its App Engine service with the marker's app_engine_urls= "
                f'({{"{service}": "http://app.test"}}) and mount an app at that URL.'
            )
        if (
            attempt.response_status is None
            and self.transport.find(url) is None
            and "mount" not in attempt.debug_info  # it says so already
        ):
            mounted = ", ".join(sorted(self.transport.mounted)) or "none"
            return f"{url} is not mounted (mounted: {mounted})."
        return None
