"""``scheduler-emulator firebase`` and ``start --firebase``: the bridge in the daemon.

``scheduler-emulator firebase [--hub HOST:PORT | --functions HOST:PORT] [--project P] [start's
options]`` is ``scheduler-emulator start --firebase HUB_HOST:PORT`` (or ``--firebase-functions
HOST:PORT``) with the same options: one daemon serves the v1 API and the clock, and keeps one
job per scheduled function of the Functions emulator (docs/firebase.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import IO

from ...runtime._emulator import Emulator
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
from .functions import project_of

_HUB_HELP = (
    "the Firebase Emulator Suite's hub, asked where the Functions emulator is (default: "
    f"${HUB_ENV}, else {DEFAULT_HUB}); nothing answering there exits 2"
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
        help="keep one job per scheduled function of a Firebase Functions emulator: " + _HUB_HELP,
    )
    group.add_argument(
        "--firebase-functions", metavar="HOST:PORT", help="as --firebase, given " + _FUNCTIONS_HELP
    )


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``firebase`` (its help; the command line is rewritten by :func:`start_argv`)."""
    firebase = sub.add_parser(
        "firebase",
        help="run the daemon with jobs for a Firebase Functions emulator's scheduled functions",
        description="The same as `start --firebase HUB_HOST:PORT`: run the daemon and keep one "
        "job per scheduled function (v1 pubsub.schedule, v2 onSchedule) of a running Firebase "
        "Functions emulator, as `firebase deploy` would, delivering each run to the function. "
        "Every option of `start` applies too. See docs/firebase.md.",
    )
    where = firebase.add_mutually_exclusive_group()
    where.add_argument("--hub", metavar="HOST:PORT", help=_HUB_HELP)
    where.add_argument("--functions", metavar="HOST:PORT", help=_FUNCTIONS_HELP)
    firebase.add_argument(
        "--project",
        help="project of the jobs and the daemon's default project; refused when it is not the "
        "Functions emulator's (default: the Functions emulator's project)",
    )


def start_argv(argv: Sequence[str]) -> list[str]:
    """Rewrite ``firebase …`` as the ``start …`` command it stands for; anything else (and
    ``firebase --help``) is returned unchanged.

    ``--hub X`` becomes ``--firebase X``, ``--functions X`` ``--firebase-functions X``; neither
    gives ``--firebase`` the default hub.
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
        if name in ("--hub", "--functions"):
            flag = "--firebase" if name == "--hub" else "--firebase-functions"
            chosen = True
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


def project_given(args: argparse.Namespace) -> bool:
    """Was ``--project`` given on the command line (``start`` marks it ``project_given``)?"""
    return bool(getattr(args, "project_given", False))


def bridge_from_args(
    args: argparse.Namespace, emulator: Emulator, out: IO[str]
) -> FirebaseBridge | None:
    """The bridge ``start``'s flags ask for (not started), or ``None``.

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
        say=out,
    )


def check_hub(args: argparse.Namespace) -> None:
    """Stop before anything starts (ConfigurationError: exit 2) when ``--firebase``'s hub does
    not answer (naming the address and where it came from), when the two Firebase addresses
    look swapped, or when ``--project`` is not the project of a Functions emulator that
    already answers (one that does not answer yet is waited for, and checked then)."""
    functions = args.firebase_functions
    if args.firebase is not None:
        hub = args.firebase or default_hub()
        require_hub(hub, hub_label(args.firebase or None))
        try:
            functions = client.functions_address(hub)
        except Unreachable:  # gone meanwhile: the bridge waits for it
            return
    elif functions is not None:
        check_functions(functions)
    if functions is None or not project_given(args):
        return
    try:
        found = project_of(client.backends(functions))
    except Unreachable:
        return
    check_project(args.project, found, functions)
