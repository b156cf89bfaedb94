"""The timer router over WSGI: matching, answers and log lines.

Which requests reach a timer (any method; the prefix matched case-sensitively; a job-name header
absent or naming the same timer) and what each outcome answers and logs (200 when the handler
returns; 500 when it raises, the names disagree or no handler has the name; 400 when the body
does not bind): each case is a test here, through werkzeug's test client (no socket). The
router's module docstring sketches these rules; the tables of plain cases are in
cases/router.toml.
"""

from __future__ import annotations

import functools
import io
import logging
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from werkzeug.test import Client, EnvironBuilder
from werkzeug.wrappers import Response

from scheduler_emulator.service import (
    EXCEPTION_ENVIRON_KEY,
    PROPAGATE_EXCEPTIONS_KEY,
    Timer,
    TimerRequest,
    TimerRouter,
    UnknownTimerError,
)
from tests.service.apps import Order, SeedTimers
from tests.support import case_table

LOGGER = "scheduler_emulator.service"
PROBLEM_500 = (
    b'{"detail":"The server could not complete this request.",'
    b'"type":"urn:hardened:problem:internal-server-error",'
    b'"title":"Internal Server Error","status":500}'
)
MISMATCH = (
    "Cloud Scheduler job '{job}' posted to the timer route '{route}'. The name in the target URL "
    "and the job's own name have to agree."
)


def from_job(job: str, **extra: str) -> dict[str, str]:
    """The headers Cloud Scheduler sends for a run of ``job``."""
    return {
        "User-Agent": "Google-Cloud-Scheduler",
        "X-CloudScheduler": "true",
        "X-CloudScheduler-JobName": job,
        "X-CloudScheduler-ScheduleTime": "2026-09-24T02:00:00Z",
        **extra,
    }


def sent_by(job: str) -> dict[str, str]:
    """The headers of a run of ``job`` (:func:`from_job`), or none for ``""`` (sent by hand)."""
    return from_job(job) if job else {}


def web_routes(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The service's own routes: 200 ``web <path>`` for every path."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"web " + environ["PATH_INFO"].encode()]


class Service(SeedTimers):
    """:class:`~tests.service.apps.SeedTimers` with werkzeug's test client in front."""

    def __init__(self, prefix: str = "/_triggers/timer/", app: Any = None) -> None:
        super().__init__(prefix, app)
        self.client = Client(self.router)

    def send(
        self,
        path: str,
        method: str = "POST",
        headers: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> Any:
        return self.client.open(path, method=method, headers=headers or {}, data=body)

    @property
    def ran(self) -> list[str]:
        return [name for name, _ in self.runs]


@pytest.fixture
def service() -> Service:
    """The example service: timers on the default prefix, no web routes (other paths: 404)."""
    return Service()


def timer_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


class TestSeedRequestTable:
    """Which requests reach the ``nightly`` timer, case by case."""

    @case_table(__file__, "seed_requests")
    def test_request_reaches_the_nightly_handler_or_answers_as_the_seed_lists(
        self, service: Service, method: str, path: str, job: str, status: int, reached: bool
    ) -> None:
        response = service.send(path, method, sent_by(job))

        assert response.status_code == status
        assert response.data == b""
        assert service.ran == (["nightly"] if reached else [])


class TestMatching:
    @case_table(__file__, "match")
    def test_match_returns_the_name_after_the_prefix_or_none(self, path: str, name: str) -> None:
        assert TimerRouter().match(path) == (name or None)

    @case_table(__file__, "web_paths")
    def test_paths_that_are_not_timer_routes_reach_the_wrapped_app(self, path: str) -> None:
        service = Service(app=web_routes)

        response = service.send(path, headers=from_job("nightly"))

        assert (response.status_code, response.data) == (200, b"web " + path.encode())
        assert service.runs == []

    @pytest.mark.parametrize("path", ["/", "/orders/17", "/_triggers/timer/"])
    def test_without_a_wrapped_app_every_other_path_answers_an_empty_404(
        self, service: Service, path: str
    ) -> None:
        response = service.send(path)

        assert (response.status_code, response.data) == (404, b"")

    @pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
    def test_any_http_method_reaches_the_handler(self, service: Service, method: str) -> None:
        response = service.send("/_triggers/timer/nightly", method, from_job("nightly"))

        assert response.status_code == 200
        (_, request), *_ = service.runs
        assert request.method == method

    def test_trailing_slash_is_dropped(self, service: Service) -> None:
        response = service.send("/_triggers/timer/nightly/", headers=from_job("nightly"))

        assert response.status_code == 200
        assert service.ran == ["nightly"]

    def test_query_string_never_reaches_the_handler(self, service: Service) -> None:
        response = service.send("/_triggers/timer/nightly?force=1", headers=from_job("nightly"))

        assert response.status_code == 200
        (_, request), *_ = service.runs
        assert request.path == "/_triggers/timer/nightly"
        assert not any("force" in value for value in request.headers.values())

    def test_percent_encoded_path_is_decoded_before_matching(self, service: Service) -> None:
        response = service.send("/_triggers/timer/night%6Cy", headers=from_job("nightly"))

        assert response.status_code == 200
        assert service.ran == ["nightly"]


class TestPrefix:
    @case_table(__file__, "prefixes")
    def test_prefix_gets_a_leading_and_a_trailing_slash(self, given: str, normalised: str) -> None:
        assert TimerRouter(given).prefix == normalised

    def test_default_prefix_is_triggers_timer(self) -> None:
        assert TimerRouter().prefix == "/_triggers/timer/"

    @pytest.mark.parametrize("prefix", ["/jobs?x=1", "/jobs#top"])
    def test_prefix_that_is_not_a_path_is_refused(self, prefix: str) -> None:
        with pytest.raises(ValueError, match="is not a URL path"):
            TimerRouter(prefix)

    @pytest.mark.parametrize(
        ("path", "status", "reached"),
        [
            pytest.param("/jobs/nightly", 200, True, id="new-prefix"),
            pytest.param("/_triggers/timer/nightly", 404, False, id="default-prefix-is-web"),
        ],
    )
    def test_another_prefix_serves_the_timers_and_the_default_goes_to_the_web_routes(
        self, path: str, status: int, reached: bool
    ) -> None:
        service = Service(prefix="jobs")

        response = service.send(path, headers=from_job("nightly"))

        assert response.status_code == status
        assert service.ran == (["nightly"] if reached else [])


class TestOutcomes:
    """Each outcome of a timer run: status, body and log line."""

    @case_table(__file__, "outcomes")
    def test_outcome_answers_and_logs_as_the_table_says(
        self,
        service: Service,
        caplog: pytest.LogCaptureFixture,
        path: str,
        job: str,
        status: int,
        answer: str,
        logged: str,
    ) -> None:
        response = service.send(path, headers=sent_by(job))

        assert (response.status_code, response.data) == (status, answer.encode())
        records = [(r.levelno, r.getMessage()) for r in timer_records(caplog)]
        assert records == ([(logging.ERROR, logged)] if logged else [])

    def test_handler_that_raised_answers_problem_json(self, service: Service) -> None:
        response = service.send("/_triggers/timer/explode")

        assert response.headers["Content-Type"] == "application/problem+json"
        assert response.headers["Content-Length"] == str(len(PROBLEM_500))

    def test_handler_exception_is_logged_with_its_traceback(
        self, service: Service, caplog: pytest.LogCaptureFixture
    ) -> None:
        service.send("/_triggers/timer/explode")

        (record,) = timer_records(caplog)
        assert record.exc_info is not None
        assert record.exc_info[0] is RuntimeError
        assert "disk full" in caplog.text
        assert "raise RuntimeError" in caplog.text

    def test_payload_handler_with_an_empty_body_answers_400_and_logs_no_json_tokens(
        self, service: Service, caplog: pytest.LogCaptureFixture
    ) -> None:
        response = service.send("/_triggers/timer/report", headers=from_job("report"))

        assert response.status_code == 400
        (record,) = timer_records(caplog)
        assert record.levelno == logging.WARNING
        assert record.getMessage().startswith(
            "TIMER /report refused with 400: The input does not contain any JSON tokens."
        )
        assert service.runs == []

    @pytest.mark.parametrize(
        ("body", "error"),
        [
            pytest.param(b"{sku: A-1}", "The body is not valid JSON", id="not-json"),
            pytest.param(b'{"sku": 7}', "Expected a string, got the number 7.", id="wrong-type"),
            pytest.param(b"[]", "Expected an object (Order), got an array.", id="wrong-shape"),
        ],
    )
    def test_body_that_does_not_bind_answers_400_naming_the_parameter(
        self, service: Service, caplog: pytest.LogCaptureFixture, body: bytes, error: str
    ) -> None:
        response = service.send("/_triggers/timer/report", headers=from_job("report"), body=body)

        assert response.status_code == 400
        assert response.headers["Content-Type"] == "application/problem+json"
        problem = response.get_json()
        assert problem["title"] == "One or more validation errors occurred."
        assert problem["status"] == 400
        ((path, (message,)),) = problem["errors"].items()
        assert path.split(".")[0] == "order"
        assert error in message
        (record,) = timer_records(caplog)
        assert record.levelno == logging.WARNING
        assert record.getMessage().startswith("TIMER /report refused with 400: ")
        assert error in record.getMessage()
        assert service.runs == []

    def test_validation_problem_body_is_exactly_this_json(self, service: Service) -> None:
        response = service.send("/_triggers/timer/report", body=b'{"sku": "A-1", "qty": 2}')

        assert response.data == (
            b'{"type":"https://tools.ietf.org/html/rfc9110#section-15.5.1",'
            b'"title":"One or more validation errors occurred.","status":400,'
            b'"errors":{"order.qty":["Order has no field \'qty\'; its fields are sku, quantity."]}}'
        )

    def test_job_name_is_compared_before_the_handler_is_looked_up(
        self, service: Service, caplog: pytest.LogCaptureFixture
    ) -> None:
        response = service.send("/_triggers/timer/Nightly", headers=from_job("nightly"))

        assert response.status_code == 500
        assert [r.getMessage() for r in timer_records(caplog)] == [
            MISMATCH.format(job="nightly", route="Nightly")
        ]

    def test_job_name_mismatch_runs_no_handler(self, service: Service) -> None:
        service.send("/_triggers/timer/report", headers=from_job("weekly"), body=b"{}")

        assert service.runs == []

    @pytest.mark.parametrize(
        "header",
        ["X-CloudScheduler-JobName", "x-cloudscheduler-jobname", "X-CLOUDSCHEDULER-JOBNAME"],
    )
    def test_job_name_header_is_found_whatever_its_case(
        self, service: Service, caplog: pytest.LogCaptureFixture, header: str
    ) -> None:
        response = service.send("/_triggers/timer/nightly", headers={header: "weekly"})

        assert response.status_code == 500
        assert [r.getMessage() for r in timer_records(caplog)] == [
            MISMATCH.format(job="weekly", route="nightly")
        ]

    @pytest.mark.parametrize(
        "job",
        [
            pytest.param("nightly", id="short-name"),
            pytest.param("projects/my-project/locations/us-central1/jobs/nightly", id="resource"),
        ],
    )
    def test_job_name_header_may_hold_the_short_or_the_full_resource_name(
        self, service: Service, job: str
    ) -> None:
        response = service.send("/_triggers/timer/nightly", headers=from_job(job))

        assert response.status_code == 200
        assert service.ran == ["nightly"]

    def test_handler_return_value_is_not_the_answer(self) -> None:
        router = TimerRouter()
        router.timer("nightly")(lambda: {"swept": 3})

        response = Client(router).post("/_triggers/timer/nightly")

        assert (response.status_code, response.data) == (200, b"")

    @pytest.mark.parametrize(
        ("returned", "status", "body"),
        [
            pytest.param(
                lambda: Response(b"ledger busy", status=503, content_type="text/plain"),
                503, b"ledger busy", id="werkzeug-response",
            ),
            pytest.param(lambda: ("ledger busy", "503 SERVICE UNAVAILABLE"), 503, b"ledger busy",
                         id="flask-tuple"),
            pytest.param(lambda: ("", 204, {"X-A": "1"}), 204, b"", id="flask-2xx-tuple"),
            pytest.param(lambda: (3, "swept"), 200, b"", id="a-tuple-not-a-response"),
        ],
    )  # fmt: skip
    def test_a_response_the_handler_returns_is_answered_with_its_status(
        self,
        returned: Callable[[], Any],
        status: int,
        body: bytes,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """A trial's FastAPI handler returned its 503: answered 200, the run counted done."""
        router = TimerRouter()
        router.timer("nightly")(returned)
        with caplog.at_level(logging.WARNING, logger="scheduler_emulator.service"):
            response = Client(router).post("/_triggers/timer/nightly")
        assert (response.status_code, response.data) == (status, body)
        warned = [
            r.getMessage() for r in caplog.records if "its handler returned" in r.getMessage()
        ]
        assert warned == ([] if status < 300 else [
            f"TIMER /nightly answered {status}: its handler returned that status; the attempt "
            "fails and is retried under the job's retry config."
        ])  # fmt: skip

    def test_handler_exception_is_left_in_the_environ_for_an_in_process_caller(
        self, service: Service
    ) -> None:
        environ = EnvironBuilder("/_triggers/timer/explode", method="POST").get_environ()
        statuses: list[str] = []

        body = service.router(environ, lambda status, headers: statuses.append(status))

        assert (statuses, b"".join(body)) == (["500 Internal Server Error"], PROBLEM_500)
        exception = environ[EXCEPTION_ENVIRON_KEY]
        assert isinstance(exception, RuntimeError)
        assert str(exception) == "disk full"

    def test_propagate_key_raises_the_handlers_own_exception_instead_of_answering_500(
        self, service: Service, caplog: pytest.LogCaptureFixture
    ) -> None:
        with pytest.raises(RuntimeError, match="disk full"):
            service.client.post(
                "/_triggers/timer/explode", environ_overrides={PROPAGATE_EXCEPTIONS_KEY: True}
            )

        assert [r.levelno for r in timer_records(caplog)] == [logging.ERROR]

    def test_base_exceptions_are_not_turned_into_answers(self) -> None:
        router = TimerRouter()

        @router.timer("stop")
        def stop() -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            Client(router).post("/_triggers/timer/stop")


class TestWhatTheHandlerGets:
    def test_handler_reads_the_schedule_time_as_in_the_seeds_exchange(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        router = TimerRouter()
        orders = logging.getLogger("orders")

        @router.timer("nightly")
        def on_nightly(request: TimerRequest) -> None:
            scheduled = request.headers.get("X-CloudScheduler-ScheduleTime", "")
            orders.warning("Sweep scheduled for %s", scheduled)

        response = Client(router).post("/_triggers/timer/nightly", headers=from_job("nightly"))

        assert response.status_code == 200
        assert [r.getMessage() for r in caplog.records if r.name == "orders"] == [
            "Sweep scheduled for 2026-09-24T02:00:00Z"
        ]

    def test_every_header_reaches_the_handler_and_looks_up_in_any_case(
        self, service: Service
    ) -> None:
        service.send(
            "/_triggers/timer/nightly",
            headers=from_job("nightly", **{"X-Trace": "abc", "Content-Type": "text/plain"}),
            body=b"hello",
        )

        (_, request), *_ = service.runs
        assert request.headers["x-cloudscheduler"] == "true"
        assert request.headers["USER-AGENT"] == "Google-Cloud-Scheduler"
        assert request.headers["x-trace"] == "abc"
        assert request.headers["content-type"] == "text/plain"
        assert request.job_name == "nightly"
        assert request.schedule_time_header == "2026-09-24T02:00:00Z"
        assert request.schedule_time is not None
        assert request.schedule_time.isoformat() == "2026-09-24T02:00:00+00:00"
        assert request.body == b"hello"

    def test_request_sent_by_hand_has_no_job_name_or_schedule_time(self, service: Service) -> None:
        service.send("/_triggers/timer/nightly")

        (_, request), *_ = service.runs
        assert (request.job_name, request.schedule_time, request.schedule_time_header) == (
            None,
            None,
            None,
        )

    @pytest.mark.parametrize(
        "content_type",
        [
            pytest.param(None, id="none"),
            pytest.param("application/octet-stream", id="scheduler-default"),
            pytest.param("text/plain", id="text"),
            pytest.param("application/json", id="json"),
        ],
    )
    def test_payload_binds_from_json_whatever_the_content_type(
        self, service: Service, content_type: str | None
    ) -> None:
        headers = from_job("report")
        if content_type:
            headers["Content-Type"] = content_type

        response = service.send("/_triggers/timer/report", headers=headers, body=b'{"sku":"A-1"}')

        assert response.status_code == 200
        assert service.runs == [("report", Order("A-1"))]

    def test_zero_argument_handler_ignores_the_body(self) -> None:
        router = TimerRouter()
        runs: list[str] = []
        router.timer("nightly")(lambda: runs.append("ran"))

        response = Client(router).post("/_triggers/timer/nightly", data=b"not json at all")

        assert response.status_code == 200
        assert runs == ["ran"]

    def test_handler_may_take_the_request_and_the_payload_in_either_order(self) -> None:
        router = TimerRouter()
        runs: list[tuple[str, Any, str]] = []

        @router.timer("first")
        def first(request: TimerRequest, order: Order) -> None:
            runs.append(("first", order, request.path))

        @router.timer("second")
        def second(order: Order, request: TimerRequest) -> None:
            runs.append(("second", order, request.path))

        client = Client(router)
        for name in ("first", "second"):
            assert client.post(f"/_triggers/timer/{name}", data=b'{"sku":"X"}').status_code == 200

        assert runs == [
            ("first", Order("X"), "/_triggers/timer/first"),
            ("second", Order("X"), "/_triggers/timer/second"),
        ]

    def test_chunked_body_without_content_length_is_read(self, service: Service) -> None:
        response = service.client.post(
            "/_triggers/timer/report",
            input_stream=io.BytesIO(b'{"sku":"A-1"}'),
            environ_overrides={"wsgi.input_terminated": True},
        )

        assert response.status_code == 200
        assert service.runs == [("report", Order("A-1"))]


class Sweeper:
    """A callable object used as a handler."""

    def __init__(self) -> None:
        self.orders: list[Order] = []

    def __call__(self, order: Order) -> None:
        self.orders.append(order)


def _with_prefix(prefix: str, order: Order, request: TimerRequest) -> str:
    return f"{prefix}{order.sku}@{request.path}"


class TestRegistration:
    @case_table(__file__, "invalid_names")
    def test_invalid_name_raises_value_error_naming_it_at_registration(self, name: str) -> None:
        with pytest.raises(ValueError, match="is not valid") as raised:
            TimerRouter().timer(name)

        assert repr(name) in str(raised.value)

    def test_the_decorator_without_its_name_says_how_to_write_it(self) -> None:
        with pytest.raises(TypeError) as raised:  # (trial 210: "Timer name <function …")
            TimerRouter().timer(_with_prefix)  # type: ignore[arg-type]

        assert str(raised.value) == (
            "@router.timer needs the timer's name: write @router.timer('_with_prefix') above "
            f"{__name__}._with_prefix, not @router.timer."
        )

    @pytest.mark.parametrize("name", ["nightly", "Nightly-2", "report_v2", "a" * 500, "0"])
    def test_letters_digits_hyphens_and_underscores_are_valid_names(self, name: str) -> None:
        router = TimerRouter()
        router.timer(name)(lambda: None)

        assert list(router.timers) == [name]

    def test_registering_a_name_twice_raises_value_error_naming_it(self) -> None:
        router = TimerRouter()
        router.timer("nightly")(lambda: None)

        with pytest.raises(ValueError, match="Timer 'nightly' is already registered"):
            router.timer("nightly")

    def test_two_pending_decorators_for_one_name_raise_when_the_second_decorates(self) -> None:
        router = TimerRouter()
        first, second = router.timer("nightly"), router.timer("nightly")
        first(lambda: None)

        with pytest.raises(ValueError, match="'nightly' is already registered"):
            second(lambda: None)

    def test_names_differing_in_case_are_different_timers(self) -> None:
        router = TimerRouter()
        router.timer("nightly")(lambda: None)
        router.timer("Nightly")(lambda: None)

        assert sorted(router.timers) == ["Nightly", "nightly"]

    def test_decorator_returns_the_function_unchanged(self) -> None:
        router = TimerRouter()

        def sweep() -> None: ...

        assert router.timer("nightly")(sweep) is sweep

    def test_timers_describe_each_handlers_parameters(self, service: Service) -> None:
        nightly, report, explode = (
            service.router.timers[n] for n in ("nightly", "report", "explode")
        )

        assert (nightly.payload_param, nightly.payload_type, nightly.request_param) == (
            None,
            None,
            "request",
        )
        assert (report.payload_param, report.payload_type, report.request_param) == (
            "order",
            Order,
            None,
        )
        assert (explode.payload_param, explode.request_param) == (None, None)
        assert isinstance(report, Timer)

    def test_timers_mapping_is_read_only(self, service: Service) -> None:
        with pytest.raises(TypeError):
            service.router.timers["weekly"] = service.router.timers["nightly"]  # type: ignore[index]

    def test_unannotated_parameter_takes_the_json_value_as_it_is(self) -> None:
        router = TimerRouter()
        seen: list[Any] = []
        router.timer("raw")(lambda payload: seen.append(payload))

        Client(router).post("/_triggers/timer/raw", data=b'{"a": [1, 2.5, null]}')

        assert router.timers["raw"].payload_type is Any
        assert seen == [{"a": [1, 2.5, None]}]

    @pytest.mark.parametrize(
        ("handler", "error"),
        [
            pytest.param(
                lambda a, b: None, "at most one payload parameter", id="two-payload-parameters"
            ),
            pytest.param(
                functools.partial(lambda a, b: None),
                "at most one payload parameter",
                id="partial-with-two-parameters",
            ),
        ],
    )
    def test_handler_signature_that_cannot_be_filled_raises_type_error(
        self, handler: Callable[..., Any], error: str
    ) -> None:
        with pytest.raises(TypeError, match=error):
            TimerRouter().timer("nightly")(handler)

    def test_two_timer_request_parameters_raise_type_error(self) -> None:
        def handler(first: TimerRequest, second: TimerRequest) -> None: ...

        with pytest.raises(TypeError, match=r"@timer\('nightly'\).*takes first, second"):
            TimerRouter().timer("nightly")(handler)

    def test_a_coroutine_handler_is_registered_as_async(self) -> None:
        async def handler() -> None: ...

        router = TimerRouter()
        router.timer("nightly")(handler)
        assert router.timers["nightly"].is_async

    def test_class_as_handler_raises_type_error(self) -> None:
        with pytest.raises(TypeError, match="is a function or method"):
            TimerRouter().timer("nightly")(Order)

    def test_annotation_that_does_not_resolve_raises_type_error(self) -> None:
        def handler(order: NotDefinedAnywhere) -> None: ...  # type: ignore[name-defined]  # noqa: F821

        with pytest.raises(TypeError, match="annotations do not resolve"):
            TimerRouter().timer("nightly")(handler)

    def test_payload_type_json_cannot_bind_raises_type_error_at_registration(self) -> None:
        def handler(blob: bytes) -> None: ...

        with pytest.raises(TypeError, match="'blob' is annotated bytes, which a JSON body"):
            TimerRouter().timer("nightly")(handler)

    def test_callable_object_partial_and_positional_only_handlers_are_called(self) -> None:
        router = TimerRouter()
        sweeper = Sweeper()
        router.timer("object")(sweeper)
        router.timer("partial")(functools.partial(_with_prefix, "P:"))

        def positional(order: Order, request: TimerRequest, /) -> str:
            return f"{order.sku}@{request.path}"

        def keyword_only(*args: Any, order: Order, **kwargs: Any) -> str:
            return f"{order.sku} {args} {kwargs}"

        router.timer("positional")(positional)
        router.timer("keyword")(keyword_only)
        client = Client(router)

        statuses = [
            client.post(f"/_triggers/timer/{name}", data=b'{"sku":"S"}').status_code
            for name in ("object", "partial", "positional", "keyword")
        ]

        assert statuses == [200, 200, 200, 200]
        assert sweeper.orders == [Order("S")]
        request = TimerRequest(path="/p")
        assert router.invoke("partial", Order("S"), request) == "P:S@/p"
        assert router.invoke("positional", Order("S"), request) == "S@/p"
        assert router.invoke("keyword", Order("S")) == "S () {}"


class TestInvoke:
    """Function style: the handler is called directly, without HTTP."""

    def test_payload_is_passed_as_it_is(self) -> None:
        router = TimerRouter()
        received: list[Any] = []
        router.timer("report")(lambda order: received.append(order))
        order = Order("A-1")

        router.invoke("report", order)

        assert received[0] is order

    def test_payload_is_not_bound_or_checked(self) -> None:
        router = TimerRouter()
        received: list[Any] = []

        @router.timer("report")
        def report(order: Order) -> None:
            received.append(order)

        router.invoke("report", {"not": "an order"})

        assert received == [{"not": "an order"}]

    def test_handler_without_a_payload_parameter_ignores_the_payload(self) -> None:
        router = TimerRouter()
        router.timer("nightly")(lambda: "swept")

        assert router.invoke("nightly", Order("ignored")) == "swept"

    def test_request_parameter_gets_no_headers_and_an_empty_body_by_default(self) -> None:
        router = TimerRouter(prefix="jobs")
        received: list[TimerRequest] = []

        @router.timer("nightly")
        def nightly(request: TimerRequest) -> None:
            received.append(request)

        router.invoke("nightly")

        (request,) = received
        assert (dict(request.headers), request.body, request.method) == ({}, b"", "POST")
        assert request.path == "/jobs/nightly"
        assert request.schedule_time is None

    def test_given_request_is_passed_and_its_job_name_is_not_checked(self) -> None:
        router = TimerRouter()
        received: list[TimerRequest] = []
        router.timer("nightly")(lambda request: received.append(request))

        @router.timer("tagged")
        def tagged(request: TimerRequest) -> str | None:
            return request.job_name

        request = TimerRequest(headers={"X-CloudScheduler-JobName": "weekly"})

        assert router.invoke("tagged", request=request) == "weekly"

    def test_handler_exception_propagates_unchanged(self, service: Service) -> None:
        with pytest.raises(RuntimeError, match="disk full"):
            service.router.invoke("explode")

    def test_unknown_name_raises_lookup_error_naming_it_and_the_registered_timers(
        self, service: Service
    ) -> None:
        with pytest.raises(UnknownTimerError) as raised:
            service.router.invoke("Nightly")

        assert isinstance(raised.value, LookupError)
        assert str(raised.value) == (
            "No handler is registered for the timer 'Nightly' (names match exactly, case "
            "included). Registered timers: 'explode', 'nightly', 'report'. Did you mean "
            "'nightly'?"
        )
        assert (raised.value.name, raised.value.registered) == (
            "Nightly",
            ["explode", "nightly", "report"],
        )

    def test_unknown_name_on_an_empty_router_says_none_are_registered(self) -> None:
        with pytest.raises(LookupError, match="Registered timers: none."):
            TimerRouter().invoke("nightly")
