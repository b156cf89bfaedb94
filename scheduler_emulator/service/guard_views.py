"""The run-once guard on a Flask or Django view or a functions-framework function.

:meth:`RunOnceGuard.view <scheduler_emulator.service.guard.RunOnceGuard.view>` is
:func:`guard_view`: it finds the request among the view's arguments (or Flask's), reads the
view's answer with Flask's rules (a 2xx completes the run, anything else releases it) and answers
the guard's refusals in the request's framework (Django's ``HttpResponse`` or werkzeug's).
Nothing here is needed by a service that uses a :class:`~scheduler_emulator.service.TimerRouter`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from .frameworks import django_response
from .guard_refusals import DUPLICATE_RESPONSE, RunRefusedError
from .request import TimerResponse, returned_status
from .router import describe_handler

__all__ = ["acknowledges", "guard_view"]

F = TypeVar("F", bound=Callable[..., Any])


class Guard(Protocol):
    """What a guarded view uses of a :class:`~scheduler_emulator.service.guard.RunOnceGuard`
    (this module sits under it)."""

    def run(
        self, headers: Any, work: Callable[[], Any], *, succeeded: Callable[[Any], bool]
    ) -> Any: ...


def acknowledges(value: Any) -> bool:
    """Whether Cloud Scheduler reads a view's or handler's answer as success: a 2xx status
    (:func:`~scheduler_emulator.service.request.returned_status`; none set: 200)."""
    return 200 <= (returned_status(value) or 200) <= 299


def _find_request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The request a guarded view serves: an argument that is a werkzeug request, else Flask's.

    :param args: the view's positional arguments.
    :param kwargs: the view's keyword arguments.
    :raises TypeError: when no argument is a request and no Flask request is active.
    :return: the request (anything with ``headers`` and ``environ``).
    """
    for value in (*args, *kwargs.values()):
        if hasattr(value, "headers") and hasattr(value, "environ"):
            return value
    try:
        import flask
    except ImportError:  # pragma: no cover - flask is how views are served
        flask = None  # type: ignore[assignment]
    if flask is not None and flask.has_request_context():
        return flask.request
    raise TypeError(
        "A @guard.view function needs the request: call it with a flask/werkzeug Request (as "
        "functions-framework does) or serve it from a Flask route."
    )


def _response(request: Any, answer: TimerResponse) -> Any:
    """A framework-neutral answer in the request's framework: a ``django.http.HttpResponse``
    for a Django request (trial 162: a werkzeug one made Django answer 500), else a
    :class:`werkzeug.wrappers.Response`."""
    if hasattr(request, "META"):
        return django_response(answer)
    from werkzeug.wrappers import Response

    return Response(answer.body, status=answer.status, headers=list(answer.headers))


def guard_view(guard: Guard, view: F) -> F:
    """Decorate a Flask or Django view or a functions-framework function to run once per run.

    The request is the view's argument that looks like a werkzeug ``Request`` (what
    functions-framework passes) or a Django ``WSGIRequest``, else Flask's ``flask.request``.
    The view's return value is passed through untouched; the guard reads its status with
    Flask's rules: 2xx marks the run ``completed``, any other status (Cloud Scheduler will
    retry) releases the claim, and an exception releases it and propagates (the framework
    answers 500). The guard itself answers 200
    (:data:`DUPLICATE_RESPONSE`, a line saying so) to a duplicate of a completed run, 400 for
    missing headers and 409 for a run in progress, as ``django.http.HttpResponse`` objects for
    a Django request and :class:`werkzeug.wrappers.Response` ones otherwise.

    :param view: ``view(request) -> response`` or a Flask view taking route arguments.
    :raises TypeError: at once for an ``async def`` view or one taking a Starlette (FastAPI)
        request, which no guarded view can serve; when called without a request and outside a
        Flask request.
    :return: the guarded view (``__wrapped__`` is the original).
    """
    try:
        hints = inspect.get_annotations(view, eval_str=True).values()
    except Exception:  # noqa: BLE001 (one that does not resolve: not this check's business)
        hints = {}.values()
    asgi = [hint for hint in hints if getattr(hint, "__module__", "").startswith("starlette.")]
    if inspect.iscoroutinefunction(view) or asgi:  # (trial 210: a 500 at every delivery)
        what = "a Starlette or FastAPI route" if asgi else "an async def function"
        raise TypeError(
            f"@guard.view wraps a sync Flask, Django or functions-framework view; "
            f"{describe_handler(view)} is {what}. On an ASGI app, guard a timer router's "
            "handler instead: @router.timer(name) above @guard.once, with router.init_app(app)."
        )

    @functools.wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        request = _find_request(args, kwargs)
        try:
            result = guard.run(
                request.headers, lambda: view(*args, **kwargs), succeeded=acknowledges
            )
        except RunRefusedError as refusal:
            return _response(request, refusal.response())
        if not result.ran:
            return _response(request, DUPLICATE_RESPONSE)
        return result.value

    guarded.run_once_guard = guard  # type: ignore[attr-defined]
    return cast(F, guarded)
