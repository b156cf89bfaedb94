"""The timer router under ASGI: Starlette, FastAPI, or any ASGI 3 app.

:class:`TimerAsgiMiddleware` is what :meth:`TimerRouter.asgi
<scheduler_emulator.service.TimerRouter.asgi>` returns and what :meth:`TimerRouter.init_app
<scheduler_emulator.service.TimerRouter.init_app>` adds to a Starlette or FastAPI app::

    router = TimerRouter()

    @router.timer("nightly")
    async def sweep(request: TimerRequest) -> None: ...

    application = router.asgi(any_asgi_app)     # a plain ASGI wrapper
    router.init_app(fastapi_app)                # or: fastapi_app.add_middleware(
                                                #   TimerAsgiMiddleware, router=router)

It answers exactly what the WSGI middleware answers (the same :meth:`TimerRouter.prepare
<scheduler_emulator.service.TimerRouter.prepare>` and :meth:`~scheduler_emulator.service.
TimerRouter.outcome`), with the same log lines. This module imports the standard library only:
no Starlette, no httpx.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .request import (
    EXCEPTION_ENVIRON_KEY,
    PROPAGATE_EXCEPTIONS_KEY,
    CaseInsensitiveHeaders,
    Router,
    TimerRequest,
    refuse_behind_a_token_check,
)

#: An ASGI 3 application: ``await app(scope, receive, send)``.
AsgiApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]

__all__ = ["AsgiApp", "TimerAsgiMiddleware", "route_path"]


def route_path(scope: MutableMapping[str, Any]) -> str:
    """The path an ASGI request routes on: ``scope["path"]`` less the ``root_path`` it starts
    with (as Starlette routes), so that it matches what WSGI's ``PATH_INFO`` holds.

    :param scope: an HTTP scope.
    :return: the decoded path, ``"/"`` at least.
    """
    path = str(scope.get("path") or "/")
    root = str(scope.get("root_path") or "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


async def _read_body(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message.get("type") != "http.request":  # http.disconnect
            break
        chunks.append(bytes(message.get("body", b"")))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def answer(
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    status: int,
    headers: tuple[tuple[str, str], ...] | list[tuple[str, str]],
    body: bytes,
) -> None:
    """Send one whole HTTP answer over ASGI: ``status``, ``headers`` (name, value; Latin-1) and
    ``body``."""
    raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    """Answer a server's lifespan messages when there is no wrapped app to answer them."""
    while True:
        message = await receive()
        kind = message.get("type")
        if kind == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif kind == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class TimerAsgiMiddleware:
    """ASGI middleware: the timer routes first, then ``app`` (404 without one).

    Its signature is Starlette's middleware convention, so ``app.add_middleware(
    TimerAsgiMiddleware, router=router)`` works as well as ``router.asgi(app)``.

    :param app: the wrapped ASGI 3 app for every other path (and for websocket and lifespan
        scopes), or ``None``.
    :param router: the router serving the timer routes (also ``self.timer_router``).
    """

    def __init__(self, app: AsgiApp | None, router: Router) -> None:
        refuse_behind_a_token_check(app)
        self.app = app
        self.timer_router = router

    def __repr__(self) -> str:
        return f"TimerAsgiMiddleware({self.app!r}, router={self.timer_router!r})"

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        """Serve one ASGI connection.

        :param scope: the connection scope; an HTTP scope gets ``EXCEPTION_ENVIRON_KEY`` when a
            handler raised.
        :param receive: the ASGI ``receive`` awaitable.
        :param send: the ASGI ``send`` awaitable.
        :raises Exception: the handler's exception, when the scope sets
            ``PROPAGATE_EXCEPTIONS_KEY`` (after the 500 was sent, as Starlette's error
            middleware does).
        """

        name = self.timer_router.match(route_path(scope)) if scope["type"] == "http" else None
        if name is None:
            if self.app is not None:
                await self.app(scope, receive, send)
            elif scope["type"] == "lifespan":
                await _lifespan(receive, send)
            elif scope["type"] == "http":
                await answer(send, 404, [("Content-Length", "0")], b"")
            return
        request = TimerRequest(
            headers=CaseInsensitiveHeaders(
                (key.decode("latin-1"), value.decode("latin-1"))
                for key, value in scope.get("headers", ())
            ),
            body=await _read_body(receive),
            method=str(scope.get("method", "GET")).upper(),
            path=route_path(scope),
        )
        response = await self.timer_router.dispatch_async(request, name)
        assert response is not None
        await answer(send, response.status, response.headers, response.body)
        if response.background is not None:  # a returned Starlette response's, as it runs them
            await response.background()
        if response.exception is not None:
            scope[EXCEPTION_ENVIRON_KEY] = response.exception
            if scope.get(PROPAGATE_EXCEPTIONS_KEY):
                raise response.exception
