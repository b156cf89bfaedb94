"""``scheduler-emulator firebase`` and ``start --firebase``: the bridge in the daemon.

``scheduler-emulator firebase [--hub HOST:PORT | --functions HOST:PORT] [--project P] [start's
options]`` is ``scheduler-emulator start --firebase HUB_HOST:PORT`` (or ``--firebase-functions
HOST:PORT``) with the same options: one daemon serves the v1 API and the clock, and keeps one
job per scheduled function of the Functions emulator (docs/firebase.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any

from ...domain.errors import ConfigurationError
from ...domain.resources import Job
from ...realtime import real_monotonic
from ...runtime._emulator import Emulator
from ...wire import check_host_port, is_loopback
from ..views import rule_argument
from . import client
from .bridge import (
    FirebaseBridge,
    check_functions,
    check_project,
    default_hub,
    hub_label,
    require_hub,
)
from .client import DEFAULT_HUB, HUB_ENV, Unreachable
from .functions import JOB_ID_PREFIX, app_engine_location, project_of

_HUB_HELP = (
    "the Firebase Emulator Suite's hub, asked where the Functions emulator is ({}: "
    f"${HUB_ENV}, else ./firebase.json's emulators.hub, else {DEFAULT_HUB}); no hub answering "
    "there exits 2"
)
#: Seconds the checks before the daemon listens may take at most, all requests included: the
#: daemon listens within about two seconds whatever answers at the Firebase addresses.
START_CHECK_SECONDS = 1.0
_APP_ENGINE_HELP = (
    "the project's App Engine location, where firebase deploy puts v1 (pubsub.schedule) "
    "functions' jobs (default: us-central1; an App Engine location ID such as europe-west means "
    "europe-west1); v2 functions' jobs are in the function's region"
)
_FUNCTIONS_HELP = (
    "the Functions emulator itself; until it answers the daemon says it is waiting and keeps "
    "looking"
)


def add_start_arguments(start: argparse.ArgumentParser) -> None:
    """Add ``--firebase`` and ``--firebase-functions`` to ``start``."""
    group = start.add_mutually_exclusive_group()
    group.add_argument(
        "--firebase",
        metavar="HUB_HOST:PORT",
        type=_address_argument(client.DEFAULT_HUB),
        help="keep one job per scheduled function of a Firebase Functions emulator: "
        + _HUB_HELP.format("an empty value means"),
    )
    group.add_argument(
        "--firebase-functions",
        metavar="HOST:PORT",
        type=_address_argument("127.0.0.1:5001"),
        help="as --firebase, given " + _FUNCTIONS_HELP,
    )
    start.add_argument(
        "--firebase-app-engine-location",
        metavar="LOCATION",
        type=rule_argument(app_engine_location),
        help="with --firebase or --firebase-functions: " + _APP_ENGINE_HELP,
    )


def _address_argument(example: str) -> Callable[[str], Any]:
    """A Firebase address flag's argparse ``type``: ``HOST:PORT`` (``example`` in its message),
    or empty for ``--firebase``'s default hub."""
    return rule_argument(lambda text: text and check_host_port(text, "the address", example))


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``firebase`` (its help; the command line is rewritten by :func:`start_argv`)."""
    firebase = sub.add_parser(
        "firebase",
        help="run the daemon with jobs for a Firebase Functions emulator's scheduled functions",
        description="The same as `start --firebase HUB_HOST:PORT`: run the daemon and keep one "
        "job per scheduled function (v1 pubsub.schedule, v2 onSchedule) of a running Firebase "
        "Functions emulator, as `firebase deploy` would, delivering each run to the function. "
        "Every option of `start` applies too (`scheduler-emulator start --help` lists them: "
        "--port, --clock, --in-memory…). See docs/firebase.md.",
    )
    where = firebase.add_mutually_exclusive_group()
    where.add_argument("--hub", metavar="HOST:PORT", help=_HUB_HELP.format("default"))
    where.add_argument("--functions", metavar="HOST:PORT", help=_FUNCTIONS_HELP)
    firebase.add_argument("--app-engine-location", metavar="LOCATION", help=_APP_ENGINE_HELP)
    firebase.add_argument(
        "--project",
        help="project of the jobs and the daemon's default project; refused when it is not the "
        "Functions emulator's (default: the Functions emulator's project)",
    )


_REWRITTEN = {
    "--hub": "--firebase",
    "--functions": "--firebase-functions",
    "--app-engine-location": "--firebase-app-engine-location",
}
#: ``start``'s words a refusal of ``firebase …`` (parsed as ``start …``) says in its own.
SPOKEN = {"scheduler-emulator start": "scheduler-emulator firebase"} | {
    meant: said for said, meant in _REWRITTEN.items()
}


def start_argv(argv: Sequence[str]) -> list[str]:
    """Rewrite ``firebase …`` as the ``start …`` command it stands for; anything else (and
    ``firebase --help``) is returned unchanged.

    ``--hub X`` becomes ``--firebase X``, ``--functions X`` ``--firebase-functions X``
    (neither gives ``--firebase`` the default hub), ``--app-engine-location X``
    ``--firebase-app-engine-location X``.
    """
    args = list(argv)
    if args[:1] != ["firebase"] or "-h" in args or "--help" in args:
        return args
    rest = args[1:]
    out = ["start"]
    chosen = False
    i = 0
    while i < len(rest):
        arg = rest[i]
        name, eq, value = arg.partition("=")
        if name in _REWRITTEN:
            flag = _REWRITTEN[name]
            chosen = chosen or name != "--app-engine-location"
            if eq:
                out.append(f"{flag}={value}")
            else:
                out.append(flag)
                if i + 1 < len(rest):
                    out.append(rest[i + 1])
                    i += 1
        else:
            out.append(arg)
        i += 1
    if not chosen:
        out.append("--firebase=")  # the default hub ($FIREBASE_EMULATOR_HUB, else 4400)
    return out


def wanted(args: argparse.Namespace) -> bool:
    """Did the command line ask for the bridge?"""
    return args.firebase is not None or args.firebase_functions is not None


def unbridged(args: argparse.Namespace, jobs: Sequence[Job]) -> list[Job]:
    """The jobs of ``jobs`` that are not the bridge's, when ``start``'s flags ask for one: the
    bridge POSTs a v1 function's Pub/Sub job to its trigger route, and the Functions emulator
    checks no token (trial 164: a restart warned that they had nowhere to publish, and that
    their tokens were stamped with the manual clock's time)."""
    bridged = wanted(args)
    return [job for job in jobs if not (bridged and job.job_id.startswith(JOB_ID_PREFIX))]


def project_given(args: argparse.Namespace) -> bool:
    """Was ``--project`` given on the command line (``start`` marks it ``project_given``)?"""
    return bool(getattr(args, "project_given", False))


def bridge_from_args(
    args: argparse.Namespace, emulator: Emulator, out: IO[str]
) -> FirebaseBridge | None:
    """The bridge ``start``'s flags ask for (not started), or ``None``; it says what it does
    (``firebase: created job …``) on ``out`` (the daemon's stderr: trial 135's ``jq`` read its
    lines among the JSON execution log on stdout).

    With ``--project`` the bridge uses that project (and refuses a Functions emulator running
    another); without it, the Functions emulator's project becomes the daemon's default
    project too.
    """
    if not wanted(args):
        return None
    given = project_given(args)
    return FirebaseBridge(
        emulator,
        hub=args.firebase or None,
        functions=args.firebase_functions,
        project=args.project if given else None,
        adopt_project=not given,
        app_engine_location=args.firebase_app_engine_location,
        say=out,
    )


def check_hub(args: argparse.Namespace) -> None:
    """Stop before anything starts (ConfigurationError: exit 2) when ``--firebase``'s hub does
    not answer (naming the address and where it came from), when the two Firebase addresses
    look swapped, when ``--project`` is not the project of a Functions emulator that
    already answers (one that does not answer yet is waited for, and checked then), or when
    ``--firebase-app-engine-location`` is given without the bridge. Without ``--project``,
    with ``--jobs``, a Functions emulator that already answers gives its project to
    ``args.project`` (said on stderr), so that the jobs files' jobs are made in it too.

    All of it takes at most :data:`START_CHECK_SECONDS`: a Functions emulator that answers
    slowly, or not in HTTP, is left to the bridge, which says what it found."""
    if args.firebase_app_engine_location and not wanted(args):
        raise ConfigurationError(
            "--firebase-app-engine-location is for the Firebase bridge: give --firebase or "
            "--firebase-functions too (or use scheduler-emulator firebase --app-engine-location)."
        )
    for address in (args.firebase, args.firebase_functions):  # (trial 101: waited for ever)
        host, _, port = (address or "").rpartition(":")
        if port == str(args.port) and (host.strip("[]") == args.host or is_loopback(host)):
            raise ConfigurationError(
                f"{address} is this daemon's own address (--port {args.port}), not the Firebase "
                "emulators': give the hub's or the Functions emulator's, as firebase "
                "emulators:start prints them."
            )
    deadline = real_monotonic() + START_CHECK_SECONDS

    def left() -> float:
        return deadline - real_monotonic()

    functions = args.firebase_functions
    answer = None
    if args.firebase is not None:
        hub = args.firebase or default_hub()
        require_hub(hub, hub_label(args.firebase or None), left())
        try:
            functions = client.functions_address(hub, left())
        except Unreachable:  # gone meanwhile: the bridge waits for it
            return
    elif functions is not None:
        answer = check_functions(functions, left())
    if functions is None or not (project_given(args) or args.jobs):
        return
    if answer is None:
        try:
            answer = client.backends(functions, left())
        except Unreachable:
            return
    found = project_of(answer)[0]
    if project_given(args):
        check_project(args.project, found, functions)
    elif found is not None and found != args.project:  # (trial 209: they stayed in my-project)
        print(
            f"firebase: the daemon's default project is now {found}, the Functions emulator's "
            f"(was {args.project}; give --project to choose it): --jobs files' jobs are made in "
            "it",
            file=sys.stderr,
        )
        args.project = found
