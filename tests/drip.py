"""A raw-socket HTTP target that misbehaves on purpose: drips, hangs, or sends a big body.

Every connection gets its own thread; the server is bounded (each connection ends after
``limit_seconds`` at most) and listens on loopback only.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class DripTarget:
    """How the target answers each request.

    :param mode: ``"ok"`` (200 at once, small body), ``"drip_headers"`` (the status line one
        byte per ``interval``), ``"drip_body"`` (headers at once, then the body one byte per
        ``interval``), ``"hang"`` (read the request, never answer), ``"close"`` (read the
        request, close the connection without an answer), ``"big_body"`` (200 with a
        body of ``body_bytes``, sent at once), ``"raw"`` (``raw`` as sent, whatever it is,
        then nothing more).
    :param interval: seconds between dripped bytes.
    :param limit_seconds: a connection is closed after this long whatever the mode.
    """

    mode: str = "drip_body"
    interval: float = 0.05
    limit_seconds: float = 30.0
    body_bytes: int = 0
    raw: bytes = b""
    connections: int = 0
    requests: int = 0
    received: list[bytes] = field(default_factory=list)  # each request as sent (head + body)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def handle(self, conn: socket.socket) -> None:
        with self.lock:
            self.connections += 1
        conn.settimeout(self.limit_seconds)
        pace = threading.Event()  # never set: the target's own pacing between bytes
        try:
            while not self.stop.is_set():
                request = _read_request(conn)
                if request is None:
                    return
                with self.lock:
                    self.requests += 1
                    self.received.append(request)
                if self.mode == "close":
                    return
                if self.mode in ("hang", "raw"):
                    conn.sendall(self.raw if self.mode == "raw" else b"")
                    self.stop.wait(self.limit_seconds)
                    return
                if self.mode == "ok":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    continue
                if self.mode == "big_body":
                    head = f"HTTP/1.1 200 OK\r\nContent-Length: {self.body_bytes}\r\n\r\n"
                    conn.sendall(head.encode())
                    chunk = b"x" * 65536
                    left = self.body_bytes
                    while left > 0:
                        conn.sendall(chunk[: min(left, len(chunk))])
                        left -= len(chunk)
                    continue
                body = b"x" * 10_000
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                slow, fast = (head, b"") if self.mode == "drip_headers" else (body, head)
                conn.sendall(fast)
                for i in range(len(slow)):
                    if self.stop.is_set():
                        return
                    conn.sendall(slow[i : i + 1])
                    pace.wait(self.interval)
                if self.mode == "drip_headers":
                    conn.sendall(body)
        except OSError:
            return
        finally:
            conn.close()


def _read_request(conn: socket.socket) -> bytes | None:
    """Read one request (headers and a Content-Length body); ``None`` on end of stream."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return head + b"\r\n\r\n" + rest


@contextmanager
def drip_server(target: DripTarget) -> Iterator[str]:
    """Serve ``target`` on a free loopback port; yield its base URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    listener.settimeout(0.1)
    port = listener.getsockname()[1]

    def accept() -> None:
        while not target.stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=target.handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        target.stop.set()
        thread.join(5)
        listener.close()
