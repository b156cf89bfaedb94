"""Talking to the Firebase Emulator Suite: where the Functions emulator is, what it lists.

- ``GET http://<hub>/emulators`` (the hub, ``firebase emulators:start``'s port 4400 by default)
  says where each emulator listens: ``{"functions": {"host", "port"}, ...}``.
- ``GET http://<functions>/backends`` (firebase-tools ``functionsEmulator.ts``, "used by the
  Emulator UI") lists the loaded functions.
- ``POST http://<functions>/functions/projects/<project>/triggers/<key>`` runs a function; the
  404 of an unknown key lists the valid keys (``<region>-<name>-<generation>``).

Standard library only (``urllib``); every call is bounded by a timeout.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

#: Where ``firebase emulators:start`` puts the hub unless firebase.json says otherwise.
DEFAULT_HUB = "127.0.0.1:4400"
#: The environment variable firebase-tools sets to the hub's address for the processes it runs.
HUB_ENV = "FIREBASE_EMULATOR_HUB"
#: Trigger key asked for to get the list of valid ones (no function has this name).
PROBE_KEY = "scheduler-emulator-probe"
#: Seconds one call to the hub or the Functions emulator may take.
TIMEOUT_SECONDS = 5.0


class Unreachable(Exception):
    """Nothing (or something else) answered at an address; the message says which and why."""


class WrongEmulator(Unreachable):
    """The address answers, but as the other Firebase emulator (the hub where the Functions
    emulator was expected, or the reverse); the message says which flag to use instead."""


class NoFunctions(Unreachable):
    """The Functions emulator answers but lists no function (still loading, or its source
    failed to load)."""


def _answers_json(url: str, timeout: float) -> bool:
    """Does ``GET url`` answer a JSON object?"""
    try:
        return isinstance(_get_json(url, timeout), dict)
    except Unreachable:
        return False


def _get_json(url: str, timeout: float) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - http only
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise Unreachable(f"GET {url} answered {exc.code}") from exc
    except (OSError, ValueError) as exc:
        raise Unreachable(f"GET {url} failed: {getattr(exc, 'reason', exc)}") from exc


def _get_json_or_wrong_emulator(
    address: str, path: str, other_path: str, wrong: str, timeout: float
) -> Any:
    """``GET http://ADDRESS/PATH`` as JSON, telling the other emulator's port apart.

    :param address: ``HOST:PORT``.
    :param path: what this emulator serves (``/emulators`` on the hub, ``/backends`` on the
        Functions emulator).
    :param other_path: what the other one serves.
    :param wrong: the message when ``path`` answers 404 but ``other_path`` answers JSON.
    :raises WrongEmulator: with ``wrong``, in that case.
    :raises Unreachable: when ``address`` does not answer JSON at ``path`` otherwise.
    """
    try:
        return _get_json(f"http://{address}{path}", timeout)
    except Unreachable as exc:
        if "answered 404" in str(exc) and _answers_json(f"http://{address}{other_path}", timeout):
            raise WrongEmulator(wrong) from None
        raise


def functions_address(hub: str, timeout: float = TIMEOUT_SECONDS) -> str | None:
    """Where the Functions emulator listens, as the hub says.

    :param hub: ``HOST:PORT`` of the Emulator Suite's hub.
    :return: ``HOST:PORT``, or ``None`` when the hub lists no Functions emulator (yet).
    :raises WrongEmulator: when ``hub`` answers 404 to ``/emulators`` but lists functions at
        ``/backends``: the Functions emulator's port was given for the hub's.
    :raises Unreachable: when the hub does not answer (or answers something else).
    """
    emulators = _get_json_or_wrong_emulator(
        hub,
        "/emulators",
        "/backends",
        f"{hub} looks like the Functions emulator, not the Emulator Suite's hub (it "
        f"answers 404 to GET /emulators but lists functions at GET /backends): give it "
        f"with --functions {hub} (start: --firebase-functions {hub})",
        timeout,
    )
    info = emulators.get("functions") if isinstance(emulators, dict) else None
    if not isinstance(info, dict) or "port" not in info:
        return None
    host = str(info.get("host") or "127.0.0.1")
    if host in ("0.0.0.0", "::", "[::]"):  # listening everywhere: reach it on loopback
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{info['port']}"


def backends(functions: str, timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:
    """The Functions emulator's ``GET /backends`` answer.

    :raises WrongEmulator: when ``functions`` answers 404 to ``/backends`` but lists emulators
        at ``/emulators``: the hub's port was given for the Functions emulator's.
    :raises Unreachable: when it does not answer with JSON.
    """
    answer = _get_json_or_wrong_emulator(
        functions,
        "/backends",
        "/emulators",
        f"{functions} looks like the Emulator Suite's hub, not the Functions emulator "
        f"(it answers 404 to GET /backends but lists emulators at GET /emulators): give "
        f"it with --hub {functions} (start: --firebase {functions})",
        timeout,
    )
    if not isinstance(answer, dict):
        raise Unreachable(f"GET http://{functions}/backends did not answer a JSON object")
    return answer


def not_found_text(functions: str, project: str, timeout: float = TIMEOUT_SECONDS) -> str:
    """The text of the 404 the Functions emulator answers for an unknown trigger key (it lists
    the valid keys; see :func:`~scheduler_emulator.tools.firebase.functions.
    valid_trigger_keys`).

    :raises Unreachable: when it does not answer, or answers something other than 404.
    """
    url = f"http://{functions}/functions/projects/{project}/triggers/{PROBE_KEY}"
    request = urllib.request.Request(url, data=b"{}", method="POST")  # noqa: S310
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            raise Unreachable(f"POST {url} answered {response.status}, not 404")
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise Unreachable(f"POST {url} answered {exc.code}, not 404") from exc
        return exc.read().decode("utf-8", "replace")
    except OSError as exc:
        raise Unreachable(f"POST {url} failed: {getattr(exc, 'reason', exc)}") from exc


def trigger_url(functions: str, project: str, key: str) -> str:
    """The URL that runs the function of trigger key ``key``."""
    return f"http://{functions}/functions/projects/{project}/triggers/{key}"
