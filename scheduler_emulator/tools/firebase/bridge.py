"""The bridge: keeps one job per scheduled function of a Firebase Functions emulator.

:class:`FirebaseBridge` reads the Functions emulator's ``GET /backends`` (found through the
Emulator Suite's hub, or given), creates the job ``firebase deploy`` would create for each
scheduled function (:mod:`~scheduler_emulator.tools.firebase.functions`), and delivers them to
the emulator's trigger route (:mod:`~scheduler_emulator.tools.firebase.delivery`). Started, it
looks again every ``poll_interval`` seconds: new functions get a job, changed ones an updated
job (state and history kept), deleted ones lose theirs, and a reload's new trigger keys are
picked up. The jobs are ordinary jobs: the v1 API, pause/resume/run, faults, the clock and the
dashboard all apply. A job the bridge made carries the ``firebase-schedule-`` prefix; any such
job of the project whose function is gone is deleted, as the next ``firebase deploy`` would, and
so is a job it made in a project it no longer uses.

Each function is taken alone: one that cannot become a job is skipped with one line naming it,
the field and the value. Each look is bounded in time and size
(:mod:`~scheduler_emulator.tools.firebase.client`), and a look that finds the same answers as
the last one (by digest) and all its jobs in place does nothing more.

In a test, on a manual clock::

    emulator = Emulator(ManualClock(datetime(2026, 1, 5, tzinfo=UTC)), project="demo-app")
    bridge = FirebaseBridge(emulator, functions="127.0.0.1:5001")
    bridge.sync()                       # the jobs now exist
    emulator.advance(timedelta(days=7)) # each run is delivered to the Functions emulator
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from ...domain.codec import job_from_json
from ...domain.errors import ConfigurationError, InvalidArgument, NotFound
from ...domain.resources import Job, State
from ...domain.schedule import is_english_like
from ...realtime import real_monotonic
from ...runtime._emulator import Emulator
from . import client
from .client import NoFunctions, Unreachable, WrongEmulator
from .delivery import FirebaseDispatcher, Route
from .functions import (
    DEFAULT_APP_ENGINE_LOCATION,
    JOB_ID_PREFIX,
    app_engine_location,
    loading_codebases,
    project_of,
    scheduled_functions,
    trigger_keys,
    triggers,
    valid_trigger_keys,
)

#: Seconds between two looks at the Functions emulator.
DEFAULT_POLL_INTERVAL = 1.0
#: Seconds the Functions emulator may list no function before the bridge hints at load errors.
DEFAULT_EMPTY_HINT_AFTER = 10.0
#: Seconds between two lines saying that the bridge still waits for the Functions emulator.
WAITING_REMINDER = 60.0
#: Target kinds whose dispatcher the bridge wraps (v2 jobs are HTTP, v1 jobs Pub/Sub).
_KINDS = ("HTTP", "PUBSUB")


def _project_hub() -> str | None:
    """The hub's address the current directory's ``firebase.json`` sets (``emulators.hub``:
    its ``port``, its ``host`` or 127.0.0.1), or ``None``."""
    try:
        hub = json.loads(Path("firebase.json").read_text(encoding="utf-8"))["emulators"]["hub"]
        return f"{hub.get('host') or '127.0.0.1'}:{int(hub['port'])}"
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return None


def default_hub() -> str:
    """The hub's address: ``$FIREBASE_EMULATOR_HUB``, else the one ``./firebase.json`` sets
    (trial 79: its hub on another port was not found), else ``127.0.0.1:4400``."""
    return os.environ.get(client.HUB_ENV) or _project_hub() or client.DEFAULT_HUB


def hub_label(given: str | None) -> str:
    """The hub's address as messages name it, saying where it came from: ``H (--hub, or
    start's --firebase)`` when given, else ``H (from $FIREBASE_EMULATOR_HUB)``, ``H (from
    ./firebase.json)`` or ``127.0.0.1:4400 (the default …)``."""
    if given:
        return f"{given} (--hub, or start's --firebase)"
    if os.environ.get(client.HUB_ENV):
        return f"{default_hub()} (from ${client.HUB_ENV})"
    if found := _project_hub():
        return f"{found} (from ./firebase.json's emulators.hub)"
    return (
        f"{client.DEFAULT_HUB} (the default: neither --hub nor ${client.HUB_ENV} is set, and "
        "no firebase.json here sets emulators.hub)"
    )


def require_hub(
    hub: str, label: str | None = None, timeout: float = client.TIMEOUT_SECONDS
) -> None:
    """Make sure the Emulator Suite's hub answers at ``hub`` (``HOST:PORT``).

    :param label: how messages name the address (:func:`hub_label`); default ``--hub <hub>``.
    :param timeout: seconds the hub may take to answer, everything included.
    :raises ConfigurationError: naming the address when nothing answers there, or when the
        Functions emulator answers there instead (suggesting ``--functions``).
    """
    try:
        client.functions_address(hub, timeout)
    except WrongEmulator as exc:
        raise ConfigurationError(str(exc) + ".") from None
    except Unreachable as exc:
        raise ConfigurationError(
            f"no Firebase Emulator Suite hub answers at {label or f'--hub {hub}'} ({exc}). "
            "Start it first (firebase emulators:start --only functions --project "
            "demo-…), or give the Functions emulator's address with --functions HOST:PORT "
            "(start: --firebase-functions)."
        ) from None


def check_functions(
    functions: str, timeout: float = client.TIMEOUT_SECONDS
) -> dict[str, object] | None:
    """Refuse a ``--functions`` address where the hub answers instead (nothing answering, or
    something else, is fine: the bridge waits for it and says what it finds).

    :param timeout: seconds the look may take, everything included.
    :raises ConfigurationError: suggesting ``--hub`` when ``functions`` is the hub's address.
    :return: the ``/backends`` answer, ``None`` when there was none.
    """
    try:
        return client.backends(functions, timeout)
    except WrongEmulator as exc:
        raise ConfigurationError(str(exc) + ".") from None
    except Unreachable:
        return None


def check_project(project: str, found: str | None, where: str) -> None:
    """Refuse a project that is not the Functions emulator's own.

    The Functions emulator's trigger route ignores the project in its path, so a mistyped
    project would otherwise give jobs, topics and token audiences of a project nothing else
    uses.

    :param project: the project asked for (``--project``).
    :param found: the Functions emulator's project (:func:`~scheduler_emulator.tools.firebase.
        functions.project_of`), ``None`` when unknown (then nothing is checked).
    :param where: the Functions emulator's address, for the message.
    :raises ConfigurationError: when they differ, naming both.
    """
    if found is not None and found != project:
        raise ConfigurationError(
            f"--project {project} is not the project of the Functions emulator at {where}, "
            f"which runs {found} (firebase emulators:start --project {found}): give "
            f"--project {found}, or leave --project out to use the Functions emulator's."
        )


@dataclass
class SyncResult:
    """What one look at the Functions emulator changed.

    :param functions: the scheduled functions found.
    :param created: names of the jobs created.
    :param updated: names of the jobs whose configuration changed.
    :param deleted: names of the jobs deleted (their function is gone).
    :param skipped: one line for each function that got no job (``no job for function
        <name>: <field> <value> …``) and each entry of ``/backends`` of an unknown shape.
    :param unchanged: ``True`` when the Functions emulator answered exactly as at the last look
        and every job it gave is still there: nothing was done.
    """

    functions: int = 0
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unchanged: bool = False


class FirebaseBridge:
    """Jobs for the scheduled functions of a Functions emulator, kept in sync (see the module).

    :param emulator: the emulator the jobs live in; its HTTP and Pub/Sub dispatchers are
        wrapped at once (:meth:`close` puts them back).
    :param hub: ``HOST:PORT`` of the Emulator Suite's hub (default: ``$FIREBASE_EMULATOR_HUB``,
        else ``127.0.0.1:4400``), asked where the Functions emulator is.
    :param functions: ``HOST:PORT`` of the Functions emulator itself (instead of ``hub``).
    :param project: project of the jobs and the trigger routes; default: the Functions
        emulator's project (read from its functions' ``/backends`` labels), else the
        emulator's. A project that differs from the Functions emulator's is refused
        (:meth:`sync` raises :class:`ConfigurationError`; started, the bridge says so).
    :param adopt_project: without ``project``, make the Functions emulator's project the
        emulator's default project too (``emulator.project``: short job IDs, ``/_emulator/
        config``); the daemon does this when ``--project`` is not given.
    :param audience: ``aud`` of v2 jobs' OIDC tokens; default: each function's
        production-style URL (``https://<region>-<project>.cloudfunctions.net/<name>``).
    :param app_engine_location: the project's App Engine location, where ``firebase deploy``
        puts v1 functions' jobs (default ``us-central1``; an App Engine location ID such as
        ``europe-west`` means ``europe-west1``, as firebase-tools reads it). v2 functions'
        jobs are in the function's region.
    :param poll_interval: seconds between two looks once :meth:`start` ed.
    :param empty_hint_after: seconds the Functions emulator may list no function before the
        started bridge says to look for load errors in its log (a missing ``runtime``...).
    :param say: where progress lines go (``"firebase: created job …"``); default: nowhere.
        Every line is also kept in :attr:`messages`.
    :raises ValueError: when both ``hub`` and ``functions`` are given, or for an
        ``app_engine_location`` that is not a location.
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
        empty_hint_after: float = DEFAULT_EMPTY_HINT_AFTER,
        adopt_project: bool = False,
        app_engine_location: str | None = None,
        say: IO[str] | None = None,
    ) -> None:
        if hub and functions:
            raise ValueError("give the hub or the Functions emulator, not both.")
        self.app_engine = (
            _app_engine(app_engine_location) if app_engine_location else DEFAULT_APP_ENGINE_LOCATION
        )
        self.emulator = emulator
        self.functions = functions
        self.hub = None if functions else (hub or default_hub())
        self.hub_label = None if functions else hub_label(hub)
        self.project = project
        self.adopt_project = adopt_project and not project
        self.empty_hint_after = empty_hint_after
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
        self._waiting_said: float | None = None  # when it last said it waits
        self._empty_since: float | None = None  # monotonic time the emulator first listed none
        self._refused: str | None = None  # the last refusal said
        # Digests of the last look's /backends and trigger keys, and its project, once it made
        # the jobs: a look that finds the same does nothing more.
        self._seen: tuple[bytes, bytes, str] | None = None
        self._last = SyncResult()  # what the last look found
        self._said_skips: set[str] = set()  # lines about skipped functions already said
        self._wrapped = {kind: emulator.dispatchers.get(kind) for kind in _KINDS}
        for kind, inner in self._wrapped.items():
            if inner is not None:
                emulator.set_dispatcher(
                    kind,
                    FirebaseDispatcher(inner, emulator.transport, self.routes, self._look_again),
                )

    # ---------------------------------------------------------------- looking

    @property
    def where(self) -> str:
        """What the bridge watches, for messages (``hub 127.0.0.1:4400``)."""
        return f"the hub at {self.hub_label}" if self.hub else f"--functions {self.functions}"

    def routes(self) -> Mapping[str, Route]:
        """Job name -> where its attempts go (the last look's)."""
        return self._routes

    def functions_address(self, timeout: float = client.TIMEOUT_SECONDS) -> str | None:
        """Where the Functions emulator listens (``HOST:PORT``), ``None`` when the hub lists
        none yet.

        :param timeout: seconds asking the hub may take, everything included.
        :raises Unreachable: when the hub does not answer.
        """
        if self.functions:
            return self.functions
        assert self.hub is not None
        return client.functions_address(self.hub, timeout)

    def _look_again(self) -> None:
        """A delivery met a 404 (a reload gave new trigger keys): look now, in full."""
        self._seen = None
        self._wake.set()

    def check_hub(self) -> None:
        """Make sure the hub answers (nothing to check with ``functions``).

        :raises ConfigurationError: naming the address when nothing answers there.
        """
        if self.hub:
            require_hub(self.hub, self.hub_label)

    def sync(self) -> SyncResult:
        """Look at the Functions emulator once and bring the jobs in line with its functions.

        :raises Unreachable: when the hub or the Functions emulator does not answer;
            :class:`~scheduler_emulator.tools.firebase.client.NoFunctions` when it lists no
            function at all (still loading its source, or failing to); no job is changed then.
        :raises ConfigurationError: when ``project`` is not the Functions emulator's project;
            no job is changed then.
        :return: what changed.
        """
        with self._sync_lock:
            return self._sync()

    def _sync(self) -> SyncResult:
        # One look, every request in it bounded by one deadline (client.TIMEOUT_SECONDS).
        deadline = real_monotonic() + client.TIMEOUT_SECONDS

        def left() -> float:
            return deadline - real_monotonic()

        address = self.functions_address(left())
        if address is None:
            raise Unreachable(f"the hub at {self.hub} lists no Functions emulator yet")
        raw = client.backends_raw(address, left())
        raw_digest = hashlib.blake2b(raw).digest()
        seen = self._seen
        # The same /backends answer as at the last look: the same project, no need to parse it.
        read: tuple[object, list[str], str] | None = None
        if seen is not None and seen[0] == raw_digest:
            project = seen[2]
        else:
            read = self._read(address, raw)
            project = read[2]
        probe = client.not_found_text(address, project, left())
        now_seen = (raw_digest, hashlib.blake2b(probe.encode()).digest(), project)
        emulator = self.emulator
        if now_seen == seen and all(emulator.has_job(name) for name in self._routes):
            return replace(self._last, created=[], updated=[], deleted=[], unchanged=True)
        answer, refused_labels, project = read or self._read(address, raw)
        keys = trigger_keys(valid_trigger_keys(probe))
        functions, skipped = scheduled_functions(answer)
        result = SyncResult(functions=len(functions), skipped=skipped)  # odd entries too
        wanted = {}
        routes: dict[str, Route] = {}
        for fn in functions:
            key = keys.get(fn.id)
            if key is None:
                result.skipped.append(
                    f"no job for function {fn.name}: the Functions emulator has no trigger "
                    f"for {fn.id}"
                )
                continue
            url = client.trigger_url(address, project, key)
            try:
                job = job_from_json(
                    fn.job_json(project, url, audience=self.audience, app_engine=self.app_engine)
                )
            except InvalidArgument as exc:  # a schedule, time zone or retry value we refuse
                result.skipped.append(f"no job for function {fn.name}: {exc.describe()}")
                continue
            wanted[job.name] = (fn, job)
            routes[job.name] = Route(url, not fn.v2, float(fn.attempt_deadline_seconds))
        made = set(self._routes)  # the last look's jobs (another project's, if it changed)
        self._routes = routes | {n: r for n, r in self._routes.items() if n not in wanted}
        for name, (fn, job) in wanted.items():
            before = self.emulator.get_job(name) if self.emulator.has_job(name) else None
            if before is not None and _configuration(before) == _configuration(job):
                continue
            self.emulator.upsert_job(job)
            if before is None:
                result.created.append(name)
                english = fn.v2 and is_english_like(job.schedule)  # (trial 190: unsaid)
                self._say(
                    f"created job {job.name.rsplit('/', 1)[-1]} for {fn.platform} function "
                    f"{fn.name} ({fn.schedule!r}, {job.time_zone}) -> {routes[name].url}"
                    + "; an English-like schedule sends no ScheduleTime header, so its "
                    "event.scheduleTime reads real time, not a manual clock (give it a cron "
                    "schedule to test across virtual days)" * english
                )
            else:
                result.updated.append(name)
                self._say(
                    f"updated job {name.rsplit('/', 1)[-1]} ({fn.schedule!r}, {job.time_zone})"
                )
        prefix = f"projects/{project}/locations/"
        loading, kept = loading_codebases(answer), []
        for job in self.emulator.list_jobs():
            job_id = job.name.rsplit("/", 1)[-1]
            if job.name in wanted or not (job.name.startswith(prefix) or job.name in made):
                continue
            if job_id.startswith(JOB_ID_PREFIX) and loading and job.name.startswith(prefix):
                kept.append(job.name)  # (trial 156: its codebase may be the one still loading)
            elif job_id.startswith(JOB_ID_PREFIX):
                try:
                    self.emulator.delete_job(job.name)
                except NotFound:  # deleted meanwhile through the API
                    continue
                result.deleted.append(job.name)
                if job.name.startswith(prefix):
                    self._say(f"deleted job {job_id}: its function is gone")
                else:  # (trial 101: it read as the job just created, gone at once)
                    self._say(
                        f"deleted job {job_id} of project {job.name.split('/')[1]}: the Functions "
                        f"emulator runs project {project} now"
                    )
        self._routes = routes | {n: r for n, r in self._routes.items() if n in kept}
        result.skipped = [  # (trial 227: a fix saved and hot-reloaded made no job, unsaid)
            line if not line.startswith("no job for") or "has no trigger" in line else
            f"{line}{'' if line.endswith(('.', '?')) else '.'} Fix it, then restart firebase "
            "emulators:start (a hot reload keeps a function's old options)."
            for line in result.skipped
        ]  # fmt: skip
        lines = refused_labels + result.skipped
        if kept:
            lines.append(
                f"kept {len(kept)} job(s) whose function is not listed "
                f"({', '.join(n.rsplit('/', 1)[-1] for n in kept)}): "
                f"{loading} codebase(s) of the Functions emulator list no function yet, as "
                "while it loads them; such a job is deleted once every codebase lists some"
            )
        for line in lines:
            if line not in self._said_skips:
                self._say(line)
        self._said_skips = set(lines)
        self._seen, self._last = now_seen, result
        return result

    def _read(self, address: str, raw: bytes) -> tuple[object, list[str], str]:
        """Parse ``/backends``' answer and settle the project of the jobs (checking a given
        one, adopting the Functions emulator's when asked to).

        :return: the answer, lines about malformed project labels, the project.
        :raises Unreachable: for an answer that is not JSON of the known shape;
            :class:`NoFunctions` when it lists no function.
        :raises ConfigurationError: when ``project`` is not the Functions emulator's.
        """
        answer = client.parse_json(f"http://{address}/backends", raw)
        try:
            entries, odd = triggers(answer)
        except ValueError as exc:
            raise Unreachable(f"{exc}; is {address} the Functions emulator?") from None
        if not entries:
            # Starting (or restarting) emulators list nothing until the source is loaded: keep
            # the jobs rather than delete them all.
            raise NoFunctions(
                f"the Functions emulator at {address} lists no functions yet"
                + (f" ({'; '.join(odd)})" if odd else "")
            )
        found, refused_labels = project_of(answer)
        if self.project is not None:
            check_project(self.project, found, address)
        elif found is not None and self.adopt_project and self.emulator.project != found:
            self._adopt(found)
        return answer, refused_labels, self.project or found or self.emulator.project

    def _adopt(self, project: str) -> None:
        """Make ``project`` the emulator's default project (see ``adopt_project``)."""
        emulator = self.emulator
        was = emulator.project
        emulator.project = project
        emulator.options = replace(emulator.options, project=project)
        publisher = getattr(emulator, "publisher", None)
        if publisher is not None and isinstance(getattr(publisher, "project", None), str):
            publisher.project = project  # short topic IDs of jobs created from now on
        self._say(
            f"the daemon's default project is now {project}, the Functions emulator's "
            f"(was {was}; give --project to choose it)"
        )

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

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                address = self.functions_address()
                self.sync()
            except ConfigurationError as exc:  # a --project the Functions emulator does not run
                if self._refused != str(exc):
                    self._say(f"refusing to make jobs: {exc}")
                    self._refused = str(exc)
                self._connected = None
            except Unreachable as exc:
                self._note_empty(exc)
                said, now = self._waiting_said, time.monotonic()
                if said is None or now - said >= WAITING_REMINDER:  # (trial 79: said once)
                    lost = f" (lost it at {self._connected})" if self._connected else ""
                    self._say(
                        f"{'' if said is None else 'still '}waiting for the Functions emulator"
                        f"{lost}: {exc}; watching {self.where}"
                    )
                    self._waiting_said = now
                self._connected = None
            except Exception as exc:  # noqa: BLE001 - a bad answer must not end the thread
                line = f"could not read the Functions emulator's functions: {exc}"
                if not self.messages or self.messages[-1] != line:  # once, not every second
                    self._say(line)
            else:
                self._empty_since = None
                self._refused = None
                if self._connected != address:
                    self._say(f"watching the Functions emulator at {address}")
                    self._connected = address
                    self._waiting_said = None
            self._wake.wait(self.poll_interval)
            self._wake.clear()

    def _note_empty(self, exc: Unreachable) -> None:
        """Hint at load errors once the Functions emulator has listed no function for
        ``empty_hint_after`` seconds."""
        if not isinstance(exc, NoFunctions):
            self._empty_since = None
            return
        now = time.monotonic()
        if self._empty_since is None:
            self._empty_since = now
        elif now - self._empty_since >= self.empty_hint_after:
            self._say(
                f"the Functions emulator lists no functions after {self.empty_hint_after:g} s: "
                "check its log (the firebase emulators:start terminal) for load errors, such "
                'as a missing runtime ("`runtime` field is required but was not found in '
                'firebase.json or package.json": add "runtime": "nodejs20" to '
                "firebase.json's functions block)"
            )
            self._empty_since = float("inf")  # said once per wait

    def close(self) -> None:
        """Stop looking and put the wrapped dispatchers back (jobs stay)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for kind, inner in self._wrapped.items():
            if inner is not None:
                self.emulator.set_dispatcher(kind, inner)

    def __enter__(self) -> FirebaseBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _say(self, line: str) -> None:
        self.messages.append(line)
        if self._say_to is not None:
            print(f"firebase: {line}", file=self._say_to, flush=True)


def _app_engine(location: str) -> str:
    """:func:`~scheduler_emulator.tools.firebase.functions.app_engine_location`, its error
    naming the option."""
    try:
        return app_engine_location(location)
    except ValueError as exc:
        raise ValueError(f"app_engine_location: {exc}") from None


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
