"""The bridge: keeps one job per scheduled function of a Firebase Functions emulator.

:class:`FirebaseBridge` reads the Functions emulator's ``GET /backends`` (found through the
Emulator Suite's hub, or given), creates the job ``firebase deploy`` would create for each
scheduled function (:mod:`~scheduler_emulator.tools.firebase.functions`), and delivers them to
the emulator's trigger route (:mod:`~scheduler_emulator.tools.firebase.delivery`). Started, it
looks again every ``poll_interval`` seconds: new functions get a job, changed ones an updated
job (state and history kept), deleted ones lose theirs, and a reload's new trigger keys are
picked up. The jobs are ordinary jobs: the v1 API, pause/resume/run, faults, the clock and the
dashboard all apply. A job the bridge made carries the ``firebase-schedule-`` prefix; any such
job of the project whose function is gone is deleted, as the next ``firebase deploy`` would.

In a test, on a manual clock::

    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-app")
    bridge = FirebaseBridge(emulator, functions="127.0.0.1:5001")
    bridge.sync()                       # the jobs now exist
    emulator.advance(timedelta(days=7)) # each run is delivered to the Functions emulator
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import IO

from ...domain.codec import job_from_json
from ...domain.errors import ConfigurationError, NotFound
from ...domain.resources import Job, State
from ...runtime.emulator import Emulator
from . import client
from .client import Unreachable
from .delivery import FirebaseDispatcher, Route
from .functions import (
    JOB_ID_PREFIX,
    project_of,
    scheduled_functions,
    trigger_key,
    valid_trigger_keys,
)

#: Seconds between two looks at the Functions emulator.
DEFAULT_POLL_INTERVAL = 1.0
#: Target kinds whose dispatcher the bridge wraps (v2 jobs are HTTP, v1 jobs Pub/Sub).
_KINDS = ("HTTP", "PUBSUB")


def default_hub() -> str:
    """The hub's address: ``$FIREBASE_EMULATOR_HUB``, else ``127.0.0.1:4400``."""
    return os.environ.get(client.HUB_ENV) or client.DEFAULT_HUB


def require_hub(hub: str) -> None:
    """Make sure the Emulator Suite's hub answers at ``hub`` (``HOST:PORT``).

    :raises ConfigurationError: naming the address when nothing answers there.
    """
    try:
        client.functions_address(hub)
    except Unreachable as exc:
        raise ConfigurationError(
            f"nothing answers at --hub {hub}, the Firebase Emulator Suite's hub ({exc}). "
            "Start it first (firebase emulators:start --only functions --project demo-…), "
            "or give the Functions emulator's address with --functions HOST:PORT."
        ) from None


@dataclass
class SyncResult:
    """What one look at the Functions emulator changed.

    :param functions: the scheduled functions found.
    :param created: names of the jobs created.
    :param updated: names of the jobs whose configuration changed.
    :param deleted: names of the jobs deleted (their function is gone).
    :param skipped: ``function ID: why`` for functions that got no job.
    """

    functions: int = 0
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class FirebaseBridge:
    """Jobs for the scheduled functions of a Functions emulator, kept in sync (see the module).

    :param emulator: the emulator the jobs live in; its HTTP and Pub/Sub dispatchers are
        wrapped at once (:meth:`close` puts them back).
    :param hub: ``HOST:PORT`` of the Emulator Suite's hub (default: ``$FIREBASE_EMULATOR_HUB``,
        else ``127.0.0.1:4400``), asked where the Functions emulator is.
    :param functions: ``HOST:PORT`` of the Functions emulator itself (instead of ``hub``).
    :param project: project of the jobs and the trigger routes; default: the Functions
        emulator's project (read from its functions), else the emulator's.
    :param audience: ``aud`` of v2 jobs' OIDC tokens; default: each function's
        production-style URL (``https://<region>-<project>.cloudfunctions.net/<name>``).
    :param poll_interval: seconds between two looks once :meth:`start` ed.
    :param say: where progress lines go (``"firebase: created job …"``); default: nowhere.
        Every line is also kept in :attr:`messages`.
    :raises ValueError: when both ``hub`` and ``functions`` are given.
    """

    def __init__(
        self,
        emulator: Emulator,
        *,
        hub: str | None = None,
        functions: str | None = None,
        project: str | None = None,
        audience: str | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        say: IO[str] | None = None,
    ) -> None:
        if hub and functions:
            raise ValueError("give the hub or the Functions emulator, not both.")
        self.emulator = emulator
        self.functions = functions
        self.hub = None if functions else (hub or default_hub())
        self.project = project
        self.audience = audience
        self.poll_interval = poll_interval
        self.messages: list[str] = []
        self._say_to = say
        self._routes: Mapping[str, Route] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sync_lock = threading.Lock()
        self._connected: str | None = None  # where the Functions emulator was last reached
        self._waiting_said = False
        engine = emulator.engine
        self._wrapped = {kind: engine.dispatchers.get(kind) for kind in _KINDS}
        for kind, inner in self._wrapped.items():
            if inner is not None:
                engine.dispatchers[kind] = FirebaseDispatcher(
                    inner, engine.transport, self.routes, self._wake.set
                )

    # ---------------------------------------------------------------- looking

    @property
    def where(self) -> str:
        """What the bridge watches, for messages (``hub 127.0.0.1:4400``)."""
        return f"hub {self.hub}" if self.hub else f"Functions emulator {self.functions}"

    def routes(self) -> Mapping[str, Route]:
        """Job name -> where its attempts go (the last look's)."""
        return self._routes

    def functions_address(self) -> str | None:
        """Where the Functions emulator listens (``HOST:PORT``), ``None`` when the hub lists
        none yet.

        :raises Unreachable: when the hub does not answer.
        """
        if self.functions:
            return self.functions
        assert self.hub is not None
        return client.functions_address(self.hub)

    def check_hub(self) -> None:
        """Make sure the hub answers (nothing to check with ``functions``).

        :raises ConfigurationError: naming the address when nothing answers there.
        """
        if self.hub:
            require_hub(self.hub)

    def sync(self) -> SyncResult:
        """Look at the Functions emulator once and bring the jobs in line with its functions.

        :raises Unreachable: when the hub or the Functions emulator does not answer, or lists no
            function at all (still loading its source); no job is changed then.
        :return: what changed.
        """
        with self._sync_lock:
            return self._sync()

    def _sync(self) -> SyncResult:
        address = self.functions_address()
        if address is None:
            raise Unreachable(f"the hub at {self.hub} lists no Functions emulator yet")
        answer = client.backends(address)
        if not any(b.get("functionTriggers") for b in answer.get("backends") or [] if b):
            # Starting (or restarting) emulators list nothing until the source is loaded: keep
            # the jobs rather than delete them all.
            raise Unreachable(f"the Functions emulator at {address} lists no functions yet")
        project = self.project or project_of(answer) or self.emulator.project
        keys = valid_trigger_keys(client.not_found_text(address, project))
        result = SyncResult()
        wanted = {}
        routes: dict[str, Route] = {}
        for fn in scheduled_functions(answer):
            result.functions += 1
            key = trigger_key(fn.id, keys)
            if key is None:
                result.skipped.append(f"{fn.id}: the Functions emulator has no trigger for it")
                continue
            url = client.trigger_url(address, project, key)
            try:
                job = job_from_json(fn.job_json(project, url, audience=self.audience))
            except ValueError as exc:  # InvalidArgument: a schedule or time zone we refuse
                result.skipped.append(f"{fn.id}: {exc}")
                continue
            wanted[job.name] = (fn, job)
            routes[job.name] = Route(url, not fn.v2, float(fn.attempt_deadline_seconds))
        self._routes = routes | {n: r for n, r in self._routes.items() if n not in wanted}
        engine = self.emulator.engine
        for name, (fn, job) in wanted.items():
            before = engine.get_job(name) if engine.has_job(name) else None
            self.emulator.upsert_job(job)
            if before is None:
                result.created.append(name)
                self._say(
                    f"created job {job.name.rsplit('/', 1)[-1]} for {fn.platform} function "
                    f"{fn.name} ({fn.schedule!r}, {job.time_zone}) -> {routes[name].url}"
                )
            elif _configuration(before) != _configuration(job):
                result.updated.append(name)
                self._say(
                    f"updated job {name.rsplit('/', 1)[-1]} ({fn.schedule!r}, {job.time_zone})"
                )
        prefix = f"projects/{project}/locations/"
        for job in self.emulator.list_jobs():
            job_id = job.name.rsplit("/", 1)[-1]
            if job.name in wanted or not job.name.startswith(prefix):
                continue
            if job_id.startswith(JOB_ID_PREFIX):
                try:
                    self.emulator.delete_job(job.name)
                except NotFound:  # deleted meanwhile through the API
                    continue
                result.deleted.append(job.name)
                self._say(f"deleted job {job_id}: its function is gone")
        self._routes = routes
        for skipped in result.skipped:
            self._say(f"no job for {skipped}")
        return result

    # ---------------------------------------------------------------- running

    def start(self) -> FirebaseBridge:
        """Check the hub, then keep looking in a thread (a first look is made at once).

        Until the Functions emulator answers, the bridge says it is waiting and keeps trying.

        :raises ConfigurationError: when nothing answers at the hub's address.
        """
        self.check_hub()
        self._thread = threading.Thread(target=self._run, name="firebase-bridge", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """Look again now rather than at the next interval."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                address = self.functions_address()
                self.sync()
            except Unreachable as exc:
                if not self._waiting_said:
                    lost = f" (lost it at {self._connected})" if self._connected else ""
                    self._say(
                        f"waiting for the Functions emulator{lost}: {exc}; watching {self.where}"
                    )
                    self._waiting_said = True
                self._connected = None
            except Exception as exc:  # noqa: BLE001 - a bad answer must not end the thread
                line = f"could not read the Functions emulator's functions: {exc!r}"
                if not self.messages or self.messages[-1] != line:  # once, not every second
                    self._say(line)
            else:
                if self._connected != address:
                    self._say(f"watching the Functions emulator at {address}")
                    self._connected = address
                    self._waiting_said = False
            self._wake.wait(self.poll_interval)
            self._wake.clear()

    def close(self) -> None:
        """Stop looking and put the wrapped dispatchers back (jobs stay)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        engine = self.emulator.engine
        for kind, inner in self._wrapped.items():
            if inner is not None:
                engine.dispatchers[kind] = inner

    def __enter__(self) -> FirebaseBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _say(self, line: str) -> None:
        self.messages.append(line)
        if self._say_to is not None:
            print(f"firebase: {line}", file=self._say_to, flush=True)


def _configuration(job: Job) -> Job:
    """``job`` without its output-only fields (what ``firebase deploy`` sets)."""
    return replace(
        job,
        state=State.ENABLED,
        status=None,
        schedule_time=None,
        last_attempt_time=None,
        user_update_time=None,
    )
