"""One port for REST and gRPC: each accepted connection is routed by its first bytes.

The daemon's HTTP server hands every new connection to :class:`ConnectionRouter` in the
connection's own thread, before reading a request. The router peeks (``MSG_PEEK``: nothing is
consumed) at most 24 bytes:

- the HTTP/2 client preface ``PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n`` (every gRPC client sends
  it first; a grpc-go client sends nothing before it, so request headers cannot be waited
  for) → gRPC: the connection is spliced, byte for byte in both directions, to the grpcio
  server of :class:`~scheduler_emulator.server.grpc_api.GrpcBackend` on a private Unix socket.
  Without the ``[grpc]`` extra the connection gets a minimal HTTP/2 answer instead: every call
  ends with ``UNIMPLEMENTED`` and a message naming the extra (:func:`answer_unimplemented`);
- a first byte ``0x16`` (a TLS ClientHello: a client that expects TLS) → one line in the
  daemon's log saying the emulator serves plaintext, and the connection is closed at once, so
  the client fails fast instead of retrying a garbled handshake;
- anything else → the HTTP/1.1 server, as before (REST, gcloud, ``/_emulator/``).

This is how Google's gapic-showcase test server, etcd and fake-gcs-server put both protocols
on one port. The extra cost of a gRPC call is the splice: two local socket hops each way
(docs/performance.md).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from typing import Any

from ..runtime._emulator import Emulator

logger = logging.getLogger("scheduler_emulator")

#: The HTTP/2 client connection preface (RFC 9113, section 3.4).
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: The first byte of a TLS record carrying a handshake (a ClientHello).
TLS_HANDSHAKE = 0x16
#: Seconds between two log lines about TLS clients (the first is logged at once).
TLS_LOG_INTERVAL = 60.0
#: Where the plaintext and TLS recipes are explained.
DOCS_ANCHOR = "docs/api.md#grpc"
_CHUNK = 256 * 1024


def sniff(sock: socket.socket, timeout: float) -> str:
    """Tell what a new connection speaks from its first bytes, consuming none of them.

    :param sock: the accepted connection.
    :param timeout: seconds to wait for the first bytes.
    :return: ``"h2"`` (the HTTP/2 preface), ``"tls"`` (a TLS handshake), ``"silent"`` (nothing
        within ``timeout``, or reset: to be closed, as the HTTP server closes a silent
        connection), ``"http"`` (anything else, including a connection closed at once).
    """
    deadline = time.monotonic() + timeout
    sock.settimeout(timeout)
    while True:
        try:
            data = sock.recv(len(HTTP2_PREFACE), socket.MSG_PEEK)
        except OSError:
            return "silent"
        if not data:
            return "http"
        if data[0] == TLS_HANDSHAKE:
            return "tls"
        if not HTTP2_PREFACE.startswith(data):
            return "http"
        if len(data) == len(HTTP2_PREFACE):
            return "h2"
        if time.monotonic() >= deadline:  # a preface sent a byte at a time, then stopped
            return "silent"
        time.sleep(0.001)  # part of the preface is here; the rest is on its way


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes from ``source`` to ``sink`` until ``source`` ends; then end ``sink``'s
    sending side."""
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def splice(client: socket.socket, unix_path: str) -> None:
    """Connect to ``unix_path`` and copy bytes both ways until both directions end.

    Runs in the caller's thread (client → backend) and one more thread (backend → client).
    """
    client.settimeout(None)  # a gRPC channel may stay idle for long; the backend keeps it
    backend = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        backend.connect(unix_path)
    except OSError as exc:
        logger.warning("gRPC backend unreachable at %s: %s", unix_path, exc)
        backend.close()
        return
    back = threading.Thread(target=_pump, args=(backend, client), name="grpc-splice", daemon=True)
    back.start()
    try:
        _pump(client, backend)
        back.join()
    finally:
        backend.close()


# ------------------------------------------------------------------ no grpcio: UNIMPLEMENTED

_SETTINGS, _HEADERS, _PING, _GOAWAY = 0x4, 0x1, 0x6, 0x7
_ACK, _END_STREAM, _END_HEADERS = 0x1, 0x1, 0x4


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        len(payload).to_bytes(3, "big")
        + bytes([kind, flags])
        + (stream & 0x7FFFFFFF).to_bytes(4, "big")
        + payload
    )


def _hpack_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _literal(name: str, value: str) -> bytes:
    """An HPACK literal header field without indexing, new name, no Huffman coding."""
    raw_name, raw_value = name.encode(), value.encode()
    return (
        b"\x00"
        + _hpack_int(len(raw_name), 7)
        + raw_name
        + _hpack_int(len(raw_value), 7)
        + raw_value
    )


def _grpc_message(text: str) -> str:
    """Percent-encode a grpc-message value (gRPC over HTTP/2: bytes outside 0x20–0x7E, and %)."""
    return "".join(
        chr(b) if 0x20 <= b <= 0x7E and b != 0x25 else f"%{b:02X}" for b in text.encode()
    )


def unimplemented_headers(message: str) -> bytes:
    """The HPACK block of a trailers-only gRPC response with status UNIMPLEMENTED (12)."""
    return (
        b"\x88"  # :status 200 (static table index 8)
        + _literal("content-type", "application/grpc")
        + _literal("grpc-status", "12")
        + _literal("grpc-message", _grpc_message(message))
    )


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def answer_unimplemented(sock: socket.socket, message: str, timeout: float) -> None:
    """Speak just enough HTTP/2 to end every call on the connection with ``UNIMPLEMENTED`` and
    ``message``; close after ``timeout`` seconds without a frame, or at most 64 frames.
    """
    sock.settimeout(timeout)
    block = unimplemented_headers(message)
    try:
        if _read_exactly(sock, len(HTTP2_PREFACE)) is None:
            return
        sock.sendall(_frame(_SETTINGS, 0, 0))
        last_stream = 0
        for _ in range(64):
            head = _read_exactly(sock, 9)
            if head is None:
                return
            length = int.from_bytes(head[:3], "big")
            kind, flags = head[3], head[4]
            stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            payload = _read_exactly(sock, length) if length else b""
            if payload is None:
                return
            if kind == _SETTINGS and not flags & _ACK:
                sock.sendall(_frame(_SETTINGS, _ACK, 0))
            elif kind == _PING and not flags & _ACK:
                sock.sendall(_frame(_PING, _ACK, 0, payload))
            elif kind == _HEADERS and stream > last_stream:
                last_stream = stream
                sock.sendall(_frame(_HEADERS, _END_STREAM | _END_HEADERS, stream, block))
            elif kind == _GOAWAY:
                return
    except OSError:
        return
    finally:
        with contextlib.suppress(OSError):
            sock.sendall(_frame(_GOAWAY, 0, 0, (0).to_bytes(8, "big")))


NO_GRPC_MESSAGE = (
    "This scheduler-emulator has no gRPC support installed; install it with "
    "pip install 'cloud-scheduler-emulator[grpc]', or use the REST transport (docs/api.md#grpc)."
)


class ConnectionRouter:
    """Routes each connection of the daemon's port by its first bytes (see the module doc).

    :param emulator: the emulator the gRPC surface serves.
    :param grpc: serve gRPC (needs the ``[grpc]`` extra); ``False`` answers HTTP/2 connections
        with ``UNIMPLEMENTED`` as if the extra were missing.
    :param sniff_timeout: seconds to wait for a connection's first bytes.
    """

    def __init__(self, emulator: Emulator, *, grpc: bool = True, sniff_timeout: float) -> None:
        from .grpc_api import grpc_available

        self.emulator = emulator
        self.sniff_timeout = sniff_timeout
        #: Whether HTTP/2 connections reach a gRPC server (grpcio installed and not disabled).
        self.serves_grpc = grpc and grpc_available()
        self.backend: Any = None  # the GrpcBackend, started by the first HTTP/2 connection
        self._lock = threading.Lock()
        self._closed = False
        #: When the TLS line was last logged (monotonic seconds): a TLS client on its default
        #: retry reconnects every few seconds, and the line says the same thing each time.
        self._tls_logged_at: float | None = None

    def grpc_backend(self) -> Any:
        """The gRPC server, started on first use (REST-only use never starts it); ``None``
        when gRPC is not served or the router is closed."""
        with self._lock:
            if self.backend is None and self.serves_grpc and not self._closed:
                from .grpc_api import GrpcBackend

                self.backend = GrpcBackend(self.emulator)
            return self.backend

    def _log_tls(self, sock: socket.socket) -> None:
        """Log the TLS line, at most once per :data:`TLS_LOG_INTERVAL` seconds."""
        now = time.monotonic()
        with self._lock:
            last = self._tls_logged_at
            if last is not None and now - last < TLS_LOG_INTERVAL:
                return
            self._tls_logged_at = now
        host, port = sock.getsockname()[:2]
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        logger.warning(
            "a TLS client connected to %s: the emulator serves plaintext; see %s",
            address,
            DOCS_ANCHOR,
        )

    def __call__(self, sock: socket.socket, client_address: Any) -> bool:
        """Handle ``sock`` if it is not HTTP/1.x.

        :return: ``True`` when the connection was handled here (the caller closes it);
            ``False`` to serve it as HTTP/1.x.
        """
        kind = sniff(sock, self.sniff_timeout)
        if kind == "http":
            return False
        if kind == "silent":
            return True
        if kind == "tls":
            self._log_tls(sock)
            return True
        backend = self.grpc_backend()
        if backend is not None:
            splice(sock, backend.path)
        else:
            answer_unimplemented(sock, NO_GRPC_MESSAGE, self.sniff_timeout)
        return True

    def close(self) -> None:
        """Stop the gRPC server (its spliced connections end with it)."""
        with self._lock:
            self._closed = True
            backend, self.backend = self.backend, None
        if backend is not None:
            backend.close()
