"""The timer router under ASGI: the same answers and log lines as under WSGI.

Each request of the routing table is sent to four servings of one service — WSGI middleware,
the plain ASGI wrapper, a Starlette app and a FastAPI app (both through ``init_app``) — and
every one must answer the same status, content type and body, and log the same lines. The ASGI
apps are called through httpx's ``ASGITransport`` (no socket).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import fastapi
import httpx
import pydantic
import pytest
import starlette.applications
import starlette.background
import starlette.responses
import starlette.routing
from starlette.requests import Request
from werkzeug.test import Client

from scheduler_emulator.service import (
    EXCEPTION_ENVIRON_KEY,
    RunOnceGuard,
    TimerAsgiMiddleware,
    TimerRequest,
    TimerRouter,
    find_router,
)
from scheduler_emulator.service.auth import (
    MalformedTokenError,
    verify_scheduler_token,
    verify_scheduler_token_async,
)
from scheduler_emulator.service.router import run_awaitable

LOGGER = "scheduler_emulator.service"
PROBLEM_500 = (
    b'{"detail":"The server could not complete this request.",'
    b'"type":"urn:hardened:problem:internal-server-error",'
    b'"title":"Internal Server Error","status":500}'
)

#: The ASGI scope of a request whose bearer token is not a JWT.
NOT_A_JWT_SCOPE = {
    "type": "http",
    "method": "POST",
    "path": "/",
    "headers": [(b"authorization", b"Bearer not-a-jwt")],
}


class Order(pydantic.BaseModel):
    sku: str
    quantity: int = 1


@dataclass
class Answer:
    status: int
    content_type: str | None
    body: bytes
    exception: Any = None


@dataclass
class Service:
    """The example timers (nightly, report, explode), sync and async alike, recording each run."""

    prefix: str = "/_triggers/timer/"
    runs: list[tuple[str, Any]] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)

    def router(self) -> TimerRouter:
        router = TimerRouter(self.prefix)

        @router.timer("nightly")
        async def nightly(request: TimerRequest) -> None:
            await asyncio.sleep(0)
            self.runs.append(("nightly", request.schedule_time_header))

        @router.timer("report")
        async def report(order: Order) -> None:
            self.runs.append(("report", order))

        @router.timer("sync")
        def sync(request: TimerRequest) -> None:
            self.threads.append(threading.current_thread().name)
            self.runs.append(("sync", request.method))

        @router.timer("explode")
        async def explode() -> None:
            raise RuntimeError("disk full")

        async def sweep() -> None:
            self.runs.append(("sweep", None))

        @router.timer("unawaited")
        async def unawaited() -> Any:
            return sweep()  # (a trial's handler: the attempt read OK and nothing ran)

        return router


def web_routes(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"web " + environ["PATH_INFO"].encode()]


async def asgi_web_routes(scope: Any, receive: Any, send: Any) -> None:
    body = b"web " + scope["path"].encode()
    headers = [(b"content-type", b"text/plain")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def web(request: Request) -> starlette.responses.Response:
    return starlette.responses.PlainTextResponse("web " + request.url.path)


def serve_wsgi(service: Service) -> Callable[..., Answer]:
    client = Client(service.router().wsgi(web_routes))

    def send(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        response = client.open(path, method=method, headers=headers, data=body)
        exception = response.request.environ.get(EXCEPTION_ENVIRON_KEY)
        return Answer(response.status_code, response.content_type, response.get_data(), exception)

    return send


def asgi_sender(app: Any) -> Callable[..., Answer]:
    def send(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
                return await client.request(method, path, headers=headers, content=body)

        response = asyncio.run(go())
        return Answer(response.status_code, response.headers.get("content-type"), response.content)

    return send


def serve_plain_asgi(service: Service) -> Callable[..., Answer]:
    return asgi_sender(service.router().asgi(asgi_web_routes))


def serve_starlette(service: Service) -> Callable[..., Answer]:
    app = starlette.applications.Starlette(
        routes=[starlette.routing.Route("/{path:path}", web, methods=["GET", "POST"])]
    )
    service.router().init_app(app)
    return asgi_sender(app)


def serve_fastapi(service: Service) -> Callable[..., Answer]:
    app = fastapi.FastAPI()
    app.add_api_route("/{path:path}", web, methods=["GET", "POST"])
    service.router().init_app(app)
    return asgi_sender(app)


SERVINGS = {
    "wsgi": serve_wsgi,
    "asgi": serve_plain_asgi,
    "starlette": serve_starlette,
    "fastapi": serve_fastapi,
}


def from_job(job: str) -> dict[str, str]:
    return {
        "User-Agent": "Google-Cloud-Scheduler",
        "X-CloudScheduler": "true",
        "X-CloudScheduler-JobName": job,
        "X-CloudScheduler-ScheduleTime": "2026-09-24T02:00:00Z",
    }


REQUESTS = [
    pytest.param("POST", "/_triggers/timer/nightly", from_job("nightly"), b"", id="ran"),
    pytest.param("GET", "/_triggers/timer/nightly/?x=1", {}, b"", id="slash-and-query"),
    pytest.param("POST", "/_triggers/timer/nightly", from_job("weekly"), b"", id="job-mismatch"),
    pytest.param("POST", "/_triggers/timer/weekly", {}, b"", id="no-handler"),
    pytest.param("POST", "/_triggers/timer/Nightly", {}, b"", id="other-case"),
    pytest.param("POST", "/_triggers/timer/report", {}, b"", id="empty-body"),
    pytest.param("POST", "/_triggers/timer/report", {}, b"{oops", id="not-json"),
    pytest.param("POST", "/_triggers/timer/report", {}, b'{"quantity": "x"}', id="no-bind"),
    pytest.param("POST", "/_triggers/timer/report", {}, b'{"sku": "A-1"}', id="pydantic"),
    pytest.param("POST", "/_triggers/timer/explode", {}, b"", id="raised"),
    pytest.param("POST", "/_triggers/timer/unawaited", {}, b"", id="unawaited"),
    pytest.param("PUT", "/_triggers/timer/sync", {}, b"", id="sync-handler"),
    pytest.param("GET", "/orders/7", {}, b"", id="web-route"),
]


class TestTheSameAnswersUnderWsgiAndAsgi:
    @pytest.mark.parametrize(("method", "path", "headers", "body"), REQUESTS)
    def test_every_serving_answers_and_logs_as_the_wsgi_middleware(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        seen: dict[str, tuple[Any, ...]] = {}
        for kind, serve in SERVINGS.items():
            caplog.clear()
            service = Service()
            answer = serve(service)(method, path, headers, body)
            logs = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOGGER]
            content_type = (answer.content_type or "").split(";")[0] if answer.body else None
            seen[kind] = (answer.status, content_type, answer.body, logs, service.runs)
        assert seen["asgi"] == seen["wsgi"]
        assert seen["starlette"] == seen["wsgi"]
        assert seen["fastapi"] == seen["wsgi"]

    @pytest.mark.parametrize("kind", list(SERVINGS))
    def test_a_raising_handler_answers_the_500_problem_and_logs_its_traceback(
        self, kind: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        answer = SERVINGS[kind](Service())("POST", "/_triggers/timer/explode", {}, b"")
        assert (answer.status, answer.body) == (500, PROBLEM_500)
        assert answer.content_type == "application/problem+json"
        [record] = [r for r in caplog.records if r.name == LOGGER]
        assert record.getMessage() == (
            "TIMER /explode failed with 500: its handler raised RuntimeError."
        )
        assert record.exc_info is not None

    @pytest.mark.parametrize("kind", list(SERVINGS))
    @pytest.mark.filterwarnings("error::RuntimeWarning")  # ("coroutine … was never awaited")
    def test_a_coroutine_returned_unawaited_is_a_500_that_says_so(
        self, kind: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        service = Service()
        answer = SERVINGS[kind](service)("POST", "/_triggers/timer/unawaited", {}, b"")
        assert (answer.status, answer.body, service.runs) == (500, PROBLEM_500, [])
        [record] = [r for r in caplog.records if r.name == LOGGER]
        assert record.getMessage() == (
            "TIMER /unawaited failed with 500: its handler returned an awaitable it did not "
            "await: write return await …."
        )
        assert "sweep" in str(record.exc_info[1]) and "without awaiting it" in str(
            record.exc_info[1]
        )

    @pytest.mark.parametrize("kind", list(SERVINGS))
    def test_the_payload_binds_to_a_pydantic_model(self, kind: str) -> None:
        service = Service()
        answer = SERVINGS[kind](service)("POST", "/_triggers/timer/report", {}, b'{"sku": "B"}')
        assert answer.status == 200
        assert service.runs == [("report", Order(sku="B"))]

    @pytest.mark.parametrize("kind", ["asgi", "starlette", "fastapi"])
    def test_another_prefix_leaves_the_default_path_to_the_web_routes(self, kind: str) -> None:
        service = Service(prefix="jobs")
        send = SERVINGS[kind](service)
        assert send("POST", "/jobs/nightly", {}, b"").status == 200
        assert send("POST", "/_triggers/timer/nightly", {}, b"").body == (
            b"web /_triggers/timer/nightly"
        )
        assert service.runs == [("nightly", None)]


class TestAsyncHandlers:
    def test_a_sync_handler_under_asgi_runs_off_the_event_loop_thread(self) -> None:
        service = Service()
        loop_threads: list[str] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            loop_threads.append(threading.current_thread().name)
            await service.router().asgi()(scope, receive, send)

        assert asgi_sender(app)("POST", "/_triggers/timer/sync", {}, b"").status == 200
        assert service.threads and service.threads != loop_threads

    def test_an_async_handler_under_wsgi_runs_to_completion(self) -> None:
        service = Service()
        answer = serve_wsgi(service)("POST", "/_triggers/timer/nightly", from_job("nightly"), b"")
        assert answer.status == 200
        assert service.runs == [("nightly", "2026-09-24T02:00:00Z")]

    def test_an_async_handler_under_wsgi_called_from_async_code_still_runs(self) -> None:
        service = Service()
        send = serve_wsgi(service)

        async def from_a_coroutine() -> Answer:
            return send("POST", "/_triggers/timer/nightly", {}, b"")

        assert asyncio.run(from_a_coroutine()).status == 200
        assert service.runs == [("nightly", None)]

    def test_invoke_returns_the_coroutine_and_run_awaitable_runs_it(self) -> None:
        router = TimerRouter()

        @router.timer("report")
        async def report(order: dict[str, Any]) -> int:
            await asyncio.sleep(0)
            return len(order)

        assert run_awaitable(router.invoke("report", {"a": 1, "b": 2})) == 2

    def test_the_plain_wrapper_without_an_app_answers_404_and_lifespan(self) -> None:
        app = TimerRouter().asgi()
        assert asgi_sender(app)("GET", "/elsewhere", {}, b"").status == 404

        async def lifespan() -> list[str]:
            sent: list[str] = []
            inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

            async def receive() -> dict[str, str]:
                return inbox.pop(0)

            async def send(message: dict[str, str]) -> None:
                sent.append(message["type"])

            await app({"type": "lifespan"}, receive, send)
            return sent

        assert asyncio.run(lifespan()) == [
            "lifespan.startup.complete",
            "lifespan.shutdown.complete",
        ]

    def test_find_router_finds_it_behind_starlette_fastapi_and_the_wrapper(self) -> None:
        router = TimerRouter()
        starlette_app = starlette.applications.Starlette()
        fastapi_app = fastapi.FastAPI()
        router.init_app(starlette_app)
        router.init_app(fastapi_app)
        router.init_app(fastapi_app)  # again: nothing happens
        assert find_router(starlette_app) is router
        assert find_router(fastapi_app) is router
        assert find_router(router.asgi(asgi_web_routes)) is router
        assert isinstance(router.asgi(), TimerAsgiMiddleware)
        with pytest.raises(ValueError, match="already serves timers"):
            TimerRouter().init_app(fastapi_app)


class TestRunOnceGuardInAsyncHandlers:
    def make(self) -> tuple[TimerRouter, list[str]]:
        guard = RunOnceGuard()
        router = guard.install(TimerRouter())
        runs: list[str] = []

        @router.timer("nightly")
        @guard.once
        async def nightly(order: Order) -> None:
            await asyncio.sleep(0)
            runs.append(order.sku)

        @router.timer("slow")
        @guard.once
        async def slow() -> None:
            # a second delivery of the same run while this one holds the lease
            inner = await router.dispatch_async(
                TimerRequest(headers=from_job("slow"), path="/_triggers/timer/slow")
            )
            assert inner is not None
            runs.append(f"inner answered {inner.status}")

        return router, runs

    def test_a_duplicate_delivery_answers_200_without_running_again(self) -> None:
        router, runs = self.make()
        send = asgi_sender(router.asgi())
        for _ in range(2):
            answer = send("POST", "/_triggers/timer/nightly", from_job("nightly"), b'{"sku": "A"}')
            assert answer.status == 200
        assert runs == ["A"]

    def test_missing_headers_answer_400_and_a_run_in_progress_409(self) -> None:
        router, runs = self.make()
        send = asgi_sender(router.asgi())
        assert send("POST", "/_triggers/timer/nightly", {}, b'{"sku": "A"}').status == 400
        assert send("POST", "/_triggers/timer/slow", from_job("slow"), b"").status == 200
        assert runs == ["inner answered 409"]

    @pytest.mark.parametrize("kind", ["async", "sync"])
    def test_a_returned_error_response_fails_the_attempt_and_the_retry_runs_again(
        self, kind: str
    ) -> None:
        """A trial's FastAPI handler returned JSONResponse(..., status_code=503): the router
        answered 200 and the guard counted the run done, so the work was lost, unretried."""
        guard = RunOnceGuard()
        router = guard.install(TimerRouter())
        answers = [503, 200]
        runs: list[int] = []

        def work() -> starlette.responses.JSONResponse:
            runs.append(answers[len(runs)])
            return starlette.responses.JSONResponse({"busy": True}, status_code=runs[-1])

        async def work_async() -> starlette.responses.JSONResponse:
            return work()

        router.timer("nightly")(guard.once(work_async if kind == "async" else work))
        app = fastapi.FastAPI()
        router.init_app(app)
        send = asgi_sender(app)
        first, retry, duplicate = (
            send("POST", "/_triggers/timer/nightly", from_job("nightly"), b"") for _ in range(3)
        )
        assert (first.status, first.content_type, first.body) == (
            503, "application/json", b'{"busy":true}'
        )  # fmt: skip
        assert (retry.status, duplicate.status) == (200, 200)
        assert duplicate.body.startswith(b"Already completed by an earlier delivery")  # trial 100
        assert runs == [503, 200]  # the retry ran the work again; the duplicate did not

    @pytest.mark.parametrize("kind", ["async", "sync"])
    def test_a_returned_responses_background_task_runs_after_the_answer(self, kind: str) -> None:
        """Trial 128: ``Response(background=BackgroundTask(...))`` was answered and its task
        dropped, in tests and in production alike."""
        router, ran = TimerRouter(), []

        def report() -> starlette.responses.Response:
            task = starlette.background.BackgroundTask(ran.append, "follow-up")
            return starlette.responses.Response(status_code=204, background=task)

        async def report_async() -> starlette.responses.Response:
            return report()

        router.timer("report")(report_async if kind == "async" else report)
        app = fastapi.FastAPI()
        router.init_app(app)
        answer = asgi_sender(app)("POST", "/_triggers/timer/report", from_job("report"), b"")
        assert (answer.status, ran) == (204, ["follow-up"])

    def test_the_guard_also_works_when_wsgi_runs_the_async_handler(self) -> None:
        router, runs = self.make()
        client = Client(router.wsgi())
        for _ in range(2):
            response = client.post(
                "/_triggers/timer/nightly", headers=from_job("nightly"), data=b'{"sku": "W"}'
            )
            assert response.status_code == 200
        assert runs == ["W"]


class TestTokensFromAsyncHandlers:
    @pytest.mark.parametrize(
        "carrier",
        [NOT_A_JWT_SCOPE, Request(NOT_A_JWT_SCOPE)],
        ids=["asgi-scope", "starlette-request"],
    )
    def test_a_starlette_request_and_an_asgi_scope_carry_the_bearer_token(
        self, carrier: Any
    ) -> None:
        with pytest.raises(MalformedTokenError, match="not a JWT"):
            verify_scheduler_token(carrier, audience="a", keys={"keys": []})

    def test_the_async_variant_raises_the_same_token_errors(self) -> None:
        from scheduler_emulator.service import TokenError

        async def verify() -> None:
            await verify_scheduler_token_async({}, audience="a", keys={"keys": []})

        with pytest.raises(TokenError, match="no Authorization header"):
            asyncio.run(verify())


@pytest.fixture(autouse=True)
def _errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
