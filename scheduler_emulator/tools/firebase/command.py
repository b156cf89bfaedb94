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

from ...runtime.emulator import Emulator
from ...runtime.options import DEFAULT_PROJECT
from .bridge import FirebaseBridge, default_hub, require_hub
from .client import DEFAULT_HUB, HUB_ENV

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
        "--project", help="project of the jobs (default: the Functions emulator's project)"
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


def bridge_from_args(
    args: argparse.Namespace, emulator: Emulator, out: IO[str]
) -> FirebaseBridge | None:
    """The bridge ``start``'s flags ask for (not started), or ``None``."""
    if not wanted(args):
        return None
    return FirebaseBridge(
        emulator,
        hub=args.firebase or None,
        functions=args.firebase_functions,
        project=None if args.project == DEFAULT_PROJECT else args.project,
        say=out,
    )


def check_hub(args: argparse.Namespace) -> None:
    """Stop before anything starts (ConfigurationError: exit 2, naming the address) when
    ``--firebase``'s hub does not answer."""
    if args.firebase is not None:
        require_hub(args.firebase or default_hub())
