"""The ``start`` flags for Pub/Sub and App Engine targets, and the Pub/Sub emulator gcloud ships.

- ``--pubsub-emulator-host HOST:PORT`` (default: ``$PUBSUB_EMULATOR_HOST``): Pub/Sub jobs
  publish to that emulator. With neither, their attempts fail saying how to set one.
- ``--with-pubsub [PORT]``: start ``gcloud beta emulators pubsub start --host-port=127.0.0.1:PORT``
  (a free port without ``PORT``), wait for it, publish to it, create the loaded jobs' topics
  (production never creates topics), stop it on exit.
- ``--app-engine-url URL`` / ``--app-engine-url SERVICE=URL`` (repeatable): where App Engine
  targets' requests go.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import IO

from ..domain.errors import ConfigurationError
from ..domain.resources import Job
from ..runtime import (
    EmulatorPublisher,
    NoPublisher,
    Publisher,
    ensure_topics,
    parse_app_engine_urls,
    pubsub_library_missing,
)
from ..wire import check_host_port

__all__ = [
    "ENV_VAR",
    "PubsubEmulatorProcess",
    "STARTUP_TIMEOUT",
    "TargetsSetup",
    "add_arguments",
    "configure",
    "free_port",
    "group_alive",
]

#: How long ``--with-pubsub`` waits for the Pub/Sub emulator to answer (seconds; its JVM
#: usually starts in 2–5 s).
STARTUP_TIMEOUT = 90.0
ENV_VAR = "PUBSUB_EMULATOR_HOST"


def add_arguments(start: argparse.ArgumentParser, port: Callable[[str], int]) -> None:
    """Add the Pub/Sub and App Engine flags to the ``start`` subcommand (``port`` reads a port
    number, as ``--port`` does)."""
    pubsub = start.add_mutually_exclusive_group()
    pubsub.add_argument(
        "--pubsub-emulator-host",
        metavar="HOST:PORT",
        help=f"Pub/Sub emulator that Pub/Sub jobs publish to (default: ${ENV_VAR})",
    )
    pubsub.add_argument(
        "--with-pubsub",
        nargs="?",
        const=0,
        type=port,
        metavar="PORT",
        help="start the Pub/Sub emulator gcloud ships on 127.0.0.1:PORT (default: a free port), "
        "create the loaded jobs' topics in it, and stop it on exit (needs gcloud and Java)",
    )
    start.add_argument(
        "--app-engine-url",
        action="append",
        default=[],
        metavar="[SERVICE=]URL",
        help="local base URL of App Engine targets: URL for every service, SERVICE=URL for "
        "one; repeatable",
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@dataclass
class PubsubEmulatorProcess:
    """The Pub/Sub emulator gcloud ships, run as a child process in its own process group.

    :param port: where it listens on 127.0.0.1; a free port by default.
    :param project: the project it is started for.
    """

    port: int = 0
    project: str = "my-project"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT`` (what ``PUBSUB_EMULATOR_HOST`` would hold)."""
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = STARTUP_TIMEOUT) -> PubsubEmulatorProcess:
        """Start it and wait until it answers HTTP on its port.

        :raises ConfigurationError: when gcloud or Java is missing, or it does not answer
            within ``timeout`` seconds (the message carries the end of its output).
        """
        gcloud = shutil.which("gcloud")
        if gcloud is None:
            raise ConfigurationError(
                "--with-pubsub needs gcloud on PATH (the Google Cloud CLI with the "
                "pubsub-emulator component: apt-get install google-cloud-cli-pubsub-emulator, "
                "or gcloud components install pubsub-emulator)."
            )
        if shutil.which("java") is None:
            raise ConfigurationError(
                "--with-pubsub needs Java on PATH: the Pub/Sub emulator is a Java program "
                "(install a JRE 11 or newer, e.g. apt-get install default-jre-headless)."
            )
        if self.port and _listening(self.port):  # (trial 102: 105 s of polling another server)
            raise ConfigurationError(
                f"--with-pubsub {self.port}: something already listens on {self.host}; give a "
                "free port, or --with-pubsub alone for one."
            )
        self.port = self.port or free_port()
        command = [gcloud, "beta", "emulators", "pubsub", "start"]
        command += [f"--host-port={self.host}", f"--project={self.project}"]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() ends gcloud and its JVM
        )
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break
                import requests  # only here: the daemon starts without loading it

                with suppress(requests.RequestException):
                    if requests.get(f"http://{self.host}/", timeout=2).status_code == 200:
                        return self
                time.sleep(0.2)
        except BaseException:  # a signal or Ctrl-C while it starts: stopped, not orphaned
            self.stop()
            raise
        output = self._output()
        self.stop()
        raise ConfigurationError(
            f"the Pub/Sub emulator did not start on {self.host} within {timeout:g} s "
            f"(is the pubsub-emulator component installed?). Its output ended with: {output}"
        )

    def _output(self) -> str:
        if self.process is None or self.process.stdout is None or self.process.poll() is None:
            return "(still running)"
        return self.process.stdout.read().decode(errors="replace")[-800:].strip() or "(none)"

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the emulator's process group (SIGTERM, then SIGKILL after ``timeout`` s) and
        return once every process of it has exited: gcloud exits before the JVM it started has
        shut down, and that JVM answers on the port until it has. (Not once nothing answers on
        the port: when the emulator had died, another one there held a stop 15 s, trial 153.)"""
        process, self.process = self.process, None
        if process is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while (process.poll() is None or group_alive(process.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout)
        if process.stdout is not None:
            process.stdout.close()


def group_alive(group: int) -> bool:
    """Whether a process of the process group ``group`` (a process ID that leads one) is still
    running."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _lacking(host: str, given: str, topics: Sequence[str], most: int = 20) -> list[str]:
    """What the Pub/Sub emulator at ``host`` (named by ``given``) lacks for the Pub/Sub jobs'
    ``topics``, checked over its REST API (the first ``most``): an answer at all, or the
    topics (trial 102: each was found at the job's first attempt)."""
    import requests  # only here: the daemon starts without loading it

    try:
        absent = [
            topic
            for topic in topics[:most]
            if requests.get(f"http://{host}/v1/{topic}", timeout=2).status_code == 404
        ]
    except requests.RequestException:
        return [
            f"nothing answers at {given} {host}: Pub/Sub jobs' attempts fail UNAVAILABLE "
            f"until a Pub/Sub emulator does (gcloud beta emulators pubsub start "
            f"--host-port={host})."
        ] * bool(topics)
    return [
        f"topic {topic} does not exist in the Pub/Sub emulator at {host}: its jobs' attempts "
        f"fail NOT_FOUND until it is created (curl -X PUT http://{host}/v1/{topic})."
        for topic in absent
    ]


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # (the CLI says "interrupted" and exits 130)


def _listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class TargetsSetup:
    """What ``start`` needs for Pub/Sub and App Engine targets (see :func:`configure`)."""

    publisher: Publisher
    app_engine_urls: dict[str, str]
    pubsub_process: PubsubEmulatorProcess | None = None
    description: str = ""

    def add_topics(self, jobs: Sequence[Job], out: IO[str]) -> None:
        """Create in the Pub/Sub emulator ``--with-pubsub`` started (if any) the topics of
        ``jobs`` (the data directory's: trial 229's failed NOT_FOUND), named in
        :attr:`description`; one the emulator refuses is a warning on ``out``."""
        topics = [job.pubsub_target.topic_name for job in jobs if job.pubsub_target]
        if self.pubsub_process is None or not topics:
            return
        try:
            created = ensure_topics(self.pubsub_process.host, topics)
        except RuntimeError as exc:
            print(f"warning: --with-pubsub: {exc}", file=out)
            return
        if created:
            self.description += (
                f", created topic(s) {', '.join(created)} of the data directory's jobs"
            )

    def close(self) -> None:
        """Stop the Pub/Sub emulator ``--with-pubsub`` started, if any."""
        if isinstance(self.publisher, EmulatorPublisher):
            self.publisher.close()
        if self.pubsub_process is not None:
            self.pubsub_process.stop()


def configure(
    args: argparse.Namespace,
    jobs: Sequence[Job],
    out: IO[str],
    environ: dict[str, str] | None = None,
) -> TargetsSetup:
    """Read the flags (and ``$PUBSUB_EMULATOR_HOST``); start the Pub/Sub emulator for
    ``--with-pubsub`` and create the topics of ``jobs`` in it (in the main thread, a SIGTERM
    from then on raises :class:`KeyboardInterrupt`, until the daemon handles it); check an
    emulator given by address for them, warning on ``out``.

    :raises ConfigurationError: for a bad ``--app-engine-url`` or Pub/Sub emulator address
        (``HOST:PORT``), a missing google-cloud-pubsub
        with ``--with-pubsub`` (naming the ``[pubsub]`` extra), or an emulator that fails.
    """
    environ = dict(os.environ) if environ is None else environ
    try:
        urls = parse_app_engine_urls(args.app_engine_url)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from exc
    topics = list(dict.fromkeys(job.pubsub_target.topic_name for job in jobs if job.pubsub_target))
    if args.with_pubsub is not None:
        missing = pubsub_library_missing()
        if missing is not None:
            raise ConfigurationError("--with-pubsub: " + missing.split(". ", 1)[1])
        if threading.current_thread() is threading.main_thread():  # (trial 102: orphaned)
            # A SIGTERM from here until the daemon handles it raises, so that the emulator is
            # stopped (its own process group outlives this process otherwise).
            signal.signal(signal.SIGTERM, _interrupted)
        process = PubsubEmulatorProcess(args.with_pubsub, args.project).start()
        try:
            created = ensure_topics(process.host, topics)
        except BaseException as exc:
            process.stop()
            if isinstance(exc, RuntimeError):
                raise ConfigurationError(str(exc)) from exc
            raise
        note = f", created topic(s) {', '.join(created)} (production would not)" if created else ""
        return TargetsSetup(
            EmulatorPublisher(process.host), urls, process, f"Pub/Sub emulator {process.host}{note}"
        )
    given, host = "--pubsub-emulator-host", args.pubsub_emulator_host  # '' is refused, not unset
    if host is None:
        given, host = f"${ENV_VAR}", environ.get(ENV_VAR) or None
    if host is not None:
        try:
            check_host_port(host, given, "localhost:8085")
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        missing = pubsub_library_missing()
        for warning in [missing] if missing is not None else _lacking(host, given, topics):
            out.write(f"warning: {warning}\n")
        return TargetsSetup(EmulatorPublisher(host), urls, None, f"Pub/Sub emulator {host}")
    return TargetsSetup(NoPublisher(), urls, None, "")
