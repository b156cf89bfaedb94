"""Talking to the Firebase Emulator Suite: where the Functions emulator is, what it lists.

- ``GET http://<hub>/emulators`` (the hub, ``firebase emulators:start``'s port 4400 by default)
  says where each emulator listens: ``{"functions": {"host", "port"}, ...}``.
- ``GET http://<functions>/backends`` (firebase-tools ``functionsEmulator.ts``, "used by the
  Emulator UI") lists the loaded functions.
- ``POST http://<functions>/functions/projects/<project>/triggers/<key>`` runs a function; the
  404 of an unknown key lists the valid keys (``<region>-<name>-<generation>``).

Every call goes through the daemon's HTTP client
(:class:`~scheduler_emulator.HttpTransport`), whose deadline bounds the whole
request — connecting, the headers and the body, however slowly the other side answers — and
whose body read stops at :data:`MAX_ANSWER_BYTES`: whatever answers at the address (a port
that drips one byte a second, one that is not HTTP, a ``Content-Length`` of 23 digits), a
call ends within its timeout with :class:`Unreachable` and a one-line reason.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any

from ...domain.redirects import ResponseSample
from ...runtime import HttpTransport
from ...wire import host_port

#: Where ``firebase emulators:start`` puts the hub unless firebase.json says otherwise.
DEFAULT_HUB = "127.0.0.1:4400"
#: The environment variable firebase-tools sets to the hub's address for the processes it runs.
HUB_ENV = "FIREBASE_EMULATOR_HUB"
#: Trigger key asked for to get the list of valid ones (no function has this name).
PROBE_KEY = "scheduler-emulator-probe"
#: Seconds one call to the hub or the Functions emulator may take, everything included.
TIMEOUT_SECONDS = 5.0
#: Bytes of one answer read at most (``/backends`` of 10,000 functions is about 7 MB).
MAX_ANSWER_BYTES = 64 << 20
_http: HttpTransport | None = None
_http_lock = threading.Lock()


class Unreachable(Exception):
    """Nothing (or something else) answered at an address; the message says which and why."""


class WrongEmulator(Unreachable):
    """The address answers, but as the other Firebase emulator (the hub where the Functions
    emulator was expected, or the reverse); the message says which flag to use instead."""


class NoFunctions(Unreachable):
    """The Functions emulator answers but lists no function (still loading, or its source
    failed to load)."""


def _client() -> HttpTransport:
    """The one HTTP client of these calls (made on first use; its connections are kept)."""
    global _http
    with _http_lock:
        if _http is None:
            _http = HttpTransport(max_body_bytes=MAX_ANSWER_BYTES + 1)
        return _http


def fetch(method: str, url: str, timeout: float, body: bytes = b"") -> tuple[int, bytes]:
    """One request, bounded in total time and answer size.

    :param method: ``GET`` or ``POST`` (a JSON ``body``).
    :param url: ``http://HOST:PORT/path``.
    :param timeout: seconds the whole request may take (connecting, headers and body).
    :return: the status and the body (at most :data:`MAX_ANSWER_BYTES`).
    :raises Unreachable: in one line, when nothing answers, the answer is not HTTP, takes
        longer than ``timeout`` or is larger than :data:`MAX_ANSWER_BYTES`.
    """
    sample = ResponseSample(MAX_ANSWER_BYTES + 1)
    headers = {"Content-Type": "application/json"} if body else {}
    try:
        status = _client().request(method, url, headers, body, max(timeout, 0.001), sample)
    except TimeoutError:
        raise Unreachable(
            f"{method} {url} gave no complete answer within {timeout:.3g} s"
        ) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        reason = str(getattr(exc, "strerror", None) or exc) or type(exc).__name__
        raise Unreachable(f"{method} {url} failed: {reason.splitlines()[0][:200]}") from None
    if len(sample.body) > MAX_ANSWER_BYTES:
        raise Unreachable(
            f"{method} {url} answered more than {MAX_ANSWER_BYTES >> 20} MB, the most read"
        )
    return status, bytes(sample.body)


def _answers_json(url: str, timeout: float) -> bool:
    """Does ``GET url`` answer a JSON object?"""
    try:
        return isinstance(_get_json(url, timeout), dict)
    except Unreachable:
        return False


def get_raw(url: str, timeout: float) -> bytes:
    """``GET url``'s body, which must come with a 200.

    :raises Unreachable: see :func:`fetch`; also for another status (``answered 404``).
    """
    status, body = fetch("GET", url, timeout)
    if status != 200:
        raise Unreachable(f"GET {url} answered {status}")
    return body


def parse_json(url: str, body: bytes) -> Any:
    """``body`` as JSON.

    :raises Unreachable: naming ``url`` when it is not JSON.
    """
    try:
        return json.loads(body)
    except ValueError as exc:
        raise Unreachable(f"GET {url} did not answer JSON ({exc})") from None


def _get_json(url: str, timeout: float) -> Any:
    return parse_json(url, get_raw(url, timeout))


def _get_or_wrong_emulator(
    address: str, path: str, other_path: str, wrong: str, timeout: float
) -> bytes:
    """``GET http://ADDRESS/PATH``'s body, telling the other emulator's port apart.

    :param address: ``HOST:PORT``.
    :param path: what this emulator serves (``/emulators`` on the hub, ``/backends`` on the
        Functions emulator).
    :param other_path: what the other one serves.
    :param wrong: the message when ``path`` answers 404 but ``other_path`` answers JSON.
    :raises WrongEmulator: with ``wrong``, in that case.
    :raises Unreachable: when ``address`` does not answer 200 at ``path`` otherwise.
    """
    try:
        return get_raw(f"http://{address}{path}", timeout)
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
    url = f"http://{hub}/emulators"
    body = _get_or_wrong_emulator(
        hub,
        "/emulators",
        "/backends",
        f"{hub} looks like the Functions emulator, not the Emulator Suite's hub (it "
        f"answers 404 to GET /emulators but lists functions at GET /backends): give it "
        f"with --functions {hub} (start: --firebase-functions {hub})",
        timeout,
    )
    emulators = parse_json(url, body)
    info = emulators.get("functions") if isinstance(emulators, dict) else None
    if not isinstance(info, dict) or "port" not in info:
        return None
    port, host = info["port"], info.get("host") or "127.0.0.1"
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise Unreachable(f"GET {url} lists the Functions emulator at port {port!r}: not a port")
    if not isinstance(host, str) or not host or any(c in host for c in "/?#@ "):
        raise Unreachable(f"GET {url} lists the Functions emulator at host {host!r}: not a host")
    if host in ("0.0.0.0", "::", "[::]"):  # listening everywhere: reach it on loopback
        host = "127.0.0.1"
    return host_port(host.strip("[]"), port)


def backends(functions: str, timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:
    """The Functions emulator's ``GET /backends`` answer.

    :raises WrongEmulator: when ``functions`` answers 404 to ``/backends`` but lists emulators
        at ``/emulators``: the hub's port was given for the Functions emulator's.
    :raises Unreachable: when it does not answer with a JSON object.
    """
    url = f"http://{functions}/backends"
    answer = parse_json(url, backends_raw(functions, timeout))
    if not isinstance(answer, dict):
        raise Unreachable(f"GET {url} did not answer a JSON object")
    return answer


def backends_raw(functions: str, timeout: float = TIMEOUT_SECONDS) -> bytes:
    """The body of the Functions emulator's ``GET /backends`` answer, unparsed (see
    :func:`backends`)."""
    return _get_or_wrong_emulator(
        functions,
        "/backends",
        "/emulators",
        f"{functions} looks like the Emulator Suite's hub, not the Functions emulator "
        f"(it answers 404 to GET /backends but lists emulators at GET /emulators): give "
        f"it with --hub {functions} (start: --firebase {functions})",
        timeout,
    )


def not_found_text(functions: str, project: str, timeout: float = TIMEOUT_SECONDS) -> str:
    """The text of the 404 the Functions emulator answers for an unknown trigger key (it lists
    the valid keys; see :func:`~scheduler_emulator.tools.firebase.functions.
    valid_trigger_keys`).

    :raises Unreachable: when it does not answer, or answers something other than 404.
    """
    url = trigger_url(functions, project, PROBE_KEY)
    status, body = fetch("POST", url, timeout, b"{}")
    if status != 404:
        raise Unreachable(f"POST {url} answered {status}, not 404")
    return body.decode("utf-8", "replace")


def trigger_url(functions: str, project: str, key: str) -> str:
    """The URL that runs the function of trigger key ``key``."""
    return f"http://{functions}/functions/projects/{project}/triggers/{key}"
