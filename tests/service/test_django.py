"""The timer router in a Django project (trial 36): in front of Django's WSGI handler
(``router.wsgi(get_wsgi_application())``), and as a view of Django's URLconf
(``router.handle_django``), which runs under Django's middleware and pytest-django's
``live_server``; a handler's returned ``HttpResponse`` is answered with its status and body."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

django = pytest.importorskip("django")

from django.conf import settings  # noqa: E402
from django.http import HttpResponse  # noqa: E402

from scheduler_emulator.service import RunOnceGuard, TimerRouter  # noqa: E402

ROUTER = TimerRouter()
GUARD = RunOnceGuard()
RAN: list[str] = []


@ROUTER.timer("nightly-cleanup")
def nightly_cleanup() -> None:
    RAN.append("nightly-cleanup")


@ROUTER.timer("busy")
def busy() -> HttpResponse:
    return HttpResponse("db busy, try later", status=503, content_type="text/plain")


def _urls() -> types.ModuleType:
    from django.urls import path
    from django.views.decorators.csrf import csrf_exempt

    @csrf_exempt
    def timers(request: Any, name: str) -> Any:
        return ROUTER.handle_django(request, name)

    @csrf_exempt
    @GUARD.view
    def charge(request: Any) -> Any:
        RAN.append("charge")
        return HttpResponse("charged")

    module = types.ModuleType("tests_django_urls")
    module.urlpatterns = [  # type: ignore[attr-defined]
        path("_triggers/timer/<str:name>", timers),
        path("charge", charge),
    ]
    return module


@pytest.fixture(scope="module")
def client() -> Any:
    if not settings.configured:
        sys.modules["tests_django_urls"] = _urls()
        settings.configure(
            ROOT_URLCONF="tests_django_urls", ALLOWED_HOSTS=["testserver"], SECRET_KEY="t"
        )
        django.setup()
    from django.test import Client

    return Client()


def headers(job: str) -> dict[str, str]:
    return {"X-CloudScheduler-JobName": f"projects/p/locations/l/jobs/{job}"}


@pytest.mark.parametrize("served", ["url-view", "wsgi-wrapper"])
def test_a_timer_run_reaches_its_handler_and_a_returned_response_keeps_its_body(
    client: Any, served: str
) -> None:
    RAN.clear()
    if served == "url-view":
        ok = client.post("/_triggers/timer/nightly-cleanup", headers=headers("nightly-cleanup"))
        refused = client.post("/_triggers/timer/busy", headers=headers("busy"))
        answers = [(r.status_code, r.content) for r in (ok, refused)]
    else:
        from django.core.wsgi import get_wsgi_application
        from werkzeug.test import Client

        wsgi = Client(ROUTER.wsgi(get_wsgi_application()))
        ok = wsgi.post("/_triggers/timer/nightly-cleanup", headers=headers("nightly-cleanup"))
        refused = wsgi.post("/_triggers/timer/busy", headers=headers("busy"))
        answers = [(r.status_code, r.data) for r in (ok, refused)]
    assert answers == [(200, b""), (503, b"db busy, try later")]
    assert RAN == ["nightly-cleanup"]


def test_init_app_on_a_django_app_says_what_to_use(client: Any) -> None:
    from django.core.wsgi import get_wsgi_application

    with pytest.raises(TypeError, match=r"router.wsgi\(get_wsgi_application\(\)\)"):
        ROUTER.init_app(get_wsgi_application())


def test_a_guarded_django_view_answers_the_guards_refusals_as_django_responses(
    client: Any,
) -> None:
    """Trial 162: @guard.view answered a duplicate with a werkzeug response, which Django
    turned into a 500 (and Cloud Scheduler into a retry)."""
    RAN.clear()
    run = {**headers("charge"), "X-CloudScheduler-ScheduleTime": "2026-12-07T02:00:00Z"}
    answers = [client.post("/charge", headers=run) for _ in range(2)]
    assert [(a.status_code, a.content) for a in answers] == [
        (200, b"charged"),
        (200, b"Already completed by an earlier delivery: not run again (run-once guard).\n"),
    ]
    assert RAN == ["charge"]
    refused = client.post("/charge")  # no Cloud Scheduler headers: the guard's 400
    assert refused.status_code == 400 and RAN == ["charge"]
