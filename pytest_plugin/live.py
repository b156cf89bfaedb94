"""A live ``scheduler-emulator`` daemon in a subprocess, for tests that need a real socket
(gcloud, the client libraries, a service in another process)."""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from scheduler_emulator.domain.attempt_assertions import AttemptAssertions
from scheduler_emulator.domain.attempts import Attempt, iso
from scheduler_emulator.domain.codec import job_from_json, job_to_json
from scheduler_emulator.domain.names import generate_job_id, qualify_job_name
from scheduler_emulator.domain.resources import Job
from scheduler_emulator.runtime import JWKS_PATH, TOKENINFO_PATH, advance_seconds
from scheduler_emulator.server.daemon import env_vars
from scheduler_emulator.service import forget_in_memory_runs
from scheduler_emulator.tools.views import DaemonClient
from scheduler_emulator.wire import parse_timestamp

__all__ = ["LiveScheduler"]

#: Seconds :meth:`LiveScheduler.close` waits for the daemon to exit on SIGTERM before SIGKILL.
CLOSE_GRACE_SECONDS = 5
#: Lines of the daemon's stdout :attr:`LiveScheduler.output` keeps, the newest.
OUTPUT_LINES = 10_000

#: ``cloud_scheduler``'s methods that a daemon in another process has no counterpart of.
_IN_PROCESS_ONLY = frozenset(
    ("mount", "faults", "published", "push", "load_jobs", "get_job", "pause_job", "resume_job",
     "delete_job", "executions", "assert_executed", "define_cloud_run_job", "allow_network")
)  # fmt: skip
_LISTENING = re.compile(r"listening on (http://(?:[\d.]+|\[[\da-f:.]+\]):\d+)")


class _NotFound(AssertionError):
    """A 404 from the daemon (an unknown job)."""


class _Admin(DaemonClient):
    """:class:`LiveScheduler`'s calls: a refused one raises AssertionError (:class:`_NotFound`
    for a 404) with the method, path and the daemon's answer."""

    def refused(self, path: str, response: Any) -> Exception:
        kind = _NotFound if response.status_code == 404 else AssertionError
        try:  # the error envelope's message, not its JSON
            said = str(response.json()["error"]["message"])
        except (ValueError, KeyError, TypeError):
            said = response.text
        return kind(
            f"{response.request.method} {response.request.path_url} answered "
            f"{response.status_code}: {said}"
        )


class LiveScheduler(AttemptAssertions):
    """``scheduler-emulator start --port 0 …`` in a subprocess; ``with LiveScheduler(…) as
    daemon:`` closes it at the end of the block.

    :param args: extra ``start`` flags (``--in-memory``, ``--clock manual``, ``--jobs FILE`` …);
        a ``--port`` among them replaces the free port.
    :param project: the project of :attr:`env` and of short job names.
    :param startup_timeout: seconds to wait for the daemon to listen.
    :raises RuntimeError: if the daemon exits or does not listen in time (with its stderr).
    """

    def __init__(self, *args: str, project: str = "my-project", startup_timeout: float = 30):
        self.project = project
        self.args = args
        self.process = subprocess.Popen(
            [*self._command(), "start", "--port", "0", "--project", project, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        #: The daemon's newest :data:`OUTPUT_LINES` lines of stdout: its startup line, then
        #: its execution log (JSON lines: a session-long daemon's would grow without bound).
        self.output: deque[str] = deque(maxlen=OUTPUT_LINES)
        self._lines: queue.Queue[str] = queue.Queue()
        self.first_line = ""
        self._pumper = threading.Thread(target=self._pump, daemon=True)
        self._pumper.start()
        self.url = self._wait_for_url(startup_timeout)
        self._admin = _Admin(*self.host_port, timeout=120)
        self.session = self._admin.session  # for raw requests (tests, bench)

    def _command(self) -> list[str]:
        """The command line before ``start`` (a subclass may wrap the daemon)."""
        return [sys.executable, "-m", "scheduler_emulator"]

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            if not self.first_line:  # (only the startup waits on them: not the whole log)
                self._lines.put(line)
        self._lines.put("")

    def _wait_for_url(self, timeout: float) -> str:
        problem = f"the daemon printed no listening line within {timeout} s"
        with contextlib.suppress(queue.Empty):
            while line := self._lines.get(timeout=timeout):  # "": stdout ended
                if match := _LISTENING.search(line):
                    self.first_line = line
                    return match.group(1)
            stderr = self.process.stderr.read() if self.process.stderr else ""
            problem = f"the daemon exited early: {stderr.strip()}"
        self.close()
        raise RuntimeError(problem)

    # ---------------------------------------------------------------- addresses

    @property
    def host_port(self) -> tuple[str, int]:
        """``(host, port)`` the daemon listens on."""
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        return host.strip("[]"), int(port)

    @property
    def env(self) -> dict[str, str]:
        """The variables ``scheduler-emulator env-init`` prints, for gcloud subprocesses."""
        return env_vars(*self.host_port, self.project)

    def client(self, transport: str | None = None, async_: bool = False) -> Any:
        """A ``google.cloud.scheduler_v1.CloudSchedulerClient`` bound to the daemon, as
        :func:`scheduler_emulator.client` makes it: ``"rest"`` (default) or ``"grpc"``, and with
        ``async_`` a ``CloudSchedulerAsyncClient`` (gRPC, its default then; make it in the loop
        that uses it).

        :raises ValueError: for an unknown transport, or ``async_`` with ``"rest"``.
        :raises ImportError: if ``google-cloud-scheduler`` is not installed.
        """
        from scheduler_emulator import client

        transport = transport or ("grpc" if async_ else "rest")  # (trial 143)
        return client(transport, async_, host=self.url.removeprefix("http://"))

    # ---------------------------------------------------------------- tokens (OIDC and OAuth)

    @property
    def certs_url(self) -> str:
        """URL of the daemon's signing keys as a JWK Set (``certs_url`` of
        ``verify_scheduler_token`` and google-auth's ``verify_token``)."""
        return self.url + JWKS_PATH

    @property
    def token_time(self) -> str:
        """The daemon's ``--token-time``: ``"emulator"`` (default) or ``"real"``."""
        # read here, as the CLI would: the plugin does not load the CLI
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        parser.add_argument("--token-time", default="emulator")
        return str(parser.parse_known_args(self.args)[0].token_time)

    def verify_oidc(
        self, token: str, audience: str, *, now: datetime | None = None, **options: Any
    ) -> dict[str, Any]:
        """Verify an ID token the daemon minted against its :attr:`certs_url`; return the claims.

        Checked at the daemon's clock (``GET /_emulator/clock``), or at real time when the
        daemon runs with ``--token-time real``, unless ``now`` is given.

        :param token: the token, or an ``Authorization`` value (``"Bearer …"``).
        :param audience: the ``aud`` the token must carry.
        :param options: further keywords of ``verify_scheduler_token`` (``issuers``, ``email``…).
        :raises TokenError: expired, mis-signed, wrong audience… (``scheduler_emulator.service``).
        """
        from scheduler_emulator.service.auth import verify_id_token

        if now is None and self.token_time == "emulator":
            now = self.now()
        return verify_id_token(
            token, audience=audience, certs_url=self.certs_url, now=now, **options
        )

    def tokeninfo(self, access_token: str) -> dict[str, Any]:
        """``GET /_emulator/oauth2/tokeninfo`` for an OAuth token the daemon minted.

        :raises AssertionError: for an unknown or expired token (tokeninfo's 400).
        """
        token = access_token.removeprefix("Bearer ").strip()
        return self._admin.get(TOKENINFO_PATH, {"access_token": token})

    # ---------------------------------------------------------------- jobs

    def _job_name(self, name: str) -> str:
        config = self._admin.get("/_emulator/config")
        return qualify_job_name(name, config["project"], config["location"])

    def create_job(
        self, job: Job | Mapping[str, Any] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Create a job on the daemon (CreateJob over REST) from what ``cloud_scheduler``'s
        :meth:`~pytest_plugin.CloudScheduler.create_job` takes: a :class:`Job`, its REST JSON
        or keywords in snake_case; a short ``name`` gets the daemon's project and location.

        :raises InvalidArgument: for an invalid field, checked here as the daemon checks it.
        :raises AssertionError: when the daemon refuses it (409 for a job of that name).
        :return: the daemon's answer, the job as stored in its REST JSON (``state``,
            ``scheduleTime``…).
        """
        if not isinstance(job, Job):
            data = {**(job or {}), **fields}
            data["name"] = self._job_name(data.get("name") or generate_job_id())
            job = job_from_json(data)
        parent = job.name.rsplit("/jobs/", 1)[0]
        return self._admin.call("POST", f"/v1/{parent}/jobs", body=job_to_json(job))

    def run_job(self, name: str) -> dict[str, Any]:
        """Force a run now (RunJob over REST) of the job ``name`` (ID or full name). It answers
        once the run is accepted: :meth:`advance` ``(0)`` waits for its first attempt.

        :raises AssertionError: for an unknown job (404).
        :return: the daemon's answer, the job in its REST JSON."""
        return self._admin.call("POST", f"/v1/{self._job_name(name)}:run", body={})

    def __getattr__(self, name: str) -> Any:
        if name in _IN_PROCESS_ONLY:
            raise AttributeError(
                f"LiveScheduler has no {name}: it is a daemon in another process, driven over "
                "its APIs — jobs with .create_job(...), .client() or gcloud (.env); fault rules "
                "with a POST of the rule to .url + '/_emulator/faults'; Cloud Run jobs from its "
                "--cloud-run-jobs file, their executions at .url + '/_emulator/executions' "
                '(docs/testing.md, "cloud_scheduler_server — a live daemon").'
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ---------------------------------------------------------------- admin endpoints

    def reset(self, clock_time: datetime | None = None) -> None:
        """Delete every job, attempt and fault rule; on a manual clock, optionally set it to
        ``clock_time``. This process's in-memory run-once guard stores are emptied too
        (:func:`~scheduler_emulator.service.forget_in_memory_runs`): the next test's runs start
        at the same instants, and a guard kept at module level would answer them as done."""
        forget_in_memory_runs()
        body = {} if clock_time is None else {"clockTime": iso(clock_time)}
        self._admin.call("POST", "/_emulator/reset", body=body)
        self._admin.call("DELETE", "/_emulator/faults")  # (a daemon's reset keeps them)

    def advance(self, delta: timedelta | float) -> Any:
        """Advance the daemon's manual clock; answers once everything due has been delivered.

        :raises ClockError: for a ``delta`` the in-process fixture refuses too (a datetime, a
            negative amount), naming it.
        """
        seconds = advance_seconds(delta)
        return self._admin.call("POST", "/_emulator/clock:advance", body={"seconds": seconds})

    def move_to(self, instant: datetime) -> Any:
        """Move the daemon's manual clock to ``instant`` (aware)."""
        return self._admin.call("POST", "/_emulator/clock:moveTo", body={"time": iso(instant)})

    def now(self) -> datetime:
        """The daemon's clock (``GET /_emulator/clock``), aware UTC."""
        return parse_timestamp(str(self._admin.get("/_emulator/clock")["now"]))

    def attempts(self, job: str | None = None) -> list[Attempt]:
        """The whole attempt history (optionally of one job) in start order: every page of
        ``GET /_emulator/attempts``, 1000 at a time, as
        :class:`~scheduler_emulator.domain.attempts.Attempt` records — the same fields and
        types as ``cloud_scheduler.attempts()`` (``attempt["code"]``, the dict access of
        earlier releases, still works). For a long history use :meth:`attempts_page`."""
        query = {"pageSize": 1000, "job": job or None}
        entries = self._admin.pages("/_emulator/attempts", "attempts", query)
        return [Attempt.from_json(entry) for entry in entries]

    def _attempts_of(self, job: str) -> list[Attempt]:
        try:
            return self.attempts(job)
        except _NotFound:  # no such job and no attempt recorded for one of that name
            return []

    def _next_runs(self) -> dict[str, tuple[str, str | None]]:
        config = self._admin.get("/_emulator/config")
        parent = f"/v1/projects/{config['project']}/locations/{config['location']}/jobs"
        jobs = self._admin.get(parent, {"pageSize": 500}).get("jobs", [])
        return {
            str(j["name"]).rsplit("/", 1)[-1]: (str(j.get("state")), j.get("scheduleTime"))
            for j in jobs
        }

    def skipped(self, job: str | None = None) -> list[dict[str, Any]]:
        """Every scheduled time that got no run (a run was still going, or the daemon was
        down; optionally of one job), in the order they were recorded: every page of
        ``GET /_emulator/skipped``, 1000 at a time.

        :raises AssertionError: for a refused request (404 for an unknown job).
        """
        query = {"pageSize": 1000, "job": job or None}
        return list(self._admin.pages("/_emulator/skipped", "skipped", query))

    def attempts_page(
        self,
        job: str | None = None,
        *,
        run_id: int | None = None,
        start_after: datetime | None = None,
        start_before: datetime | None = None,
        page_size: int | None = None,
        page_token: str = "",
    ) -> tuple[list[Attempt], str]:
        """One page of ``GET /_emulator/attempts`` (:class:`Attempt` records) and the next
        page's token (``""`` on the last page); the parameters are those of
        :meth:`Emulator.attempts_page <scheduler_emulator.Emulator.attempts_page>`.

        :raises AssertionError: for a refused request (400 naming the parameter, 404 for an
            unknown job), with the daemon's answer.
        """
        query = {  # requests leaves out a None
            "job": job or None,
            "run": run_id,
            "startAfter": iso(start_after),
            "startBefore": iso(start_before),
            "pageSize": page_size,
            "pageToken": page_token or None,
        }
        answer = self._admin.get("/_emulator/attempts", query)
        page = [Attempt.from_json(entry) for entry in answer["attempts"]]
        return page, str(answer.get("nextPageToken", ""))

    # ---------------------------------------------------------------- lifecycle

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` and wait; return the exit code."""
        self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)

    def __enter__(self) -> LiveScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the daemon if it still runs — SIGTERM, so that it stops its Cloud Run tasks and
        closes its store (a killed daemon's tasks outlive it); SIGKILL if it has not exited
        within :data:`CLOSE_GRACE_SECONDS` — and release its pipes."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=CLOSE_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self._pumper.join(5)  # its last lines read: closing under it would fail its read
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        if (session := getattr(self, "session", None)) is not None:
            session.close()
