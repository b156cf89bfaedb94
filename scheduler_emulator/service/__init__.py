"""Target side: code that runs inside the service Cloud Scheduler calls.

Importable by a production service without the emulator::

    from scheduler_emulator.service import TimerRequest, TimerRouter

    router = TimerRouter()

    @router.timer("nightly")
    def sweep(request: TimerRequest) -> None:
        print("Sweep scheduled for", request.schedule_time_header)

    router.init_app(flask_app)              # Flask, Starlette, FastAPI
    application = router.wsgi(django_app)   # any WSGI app
    application = router.asgi(asgi_app)     # any ASGI app

- :mod:`.router` — :class:`TimerRouter`, :class:`Timer`, the answers and the log lines;
- :mod:`.frameworks` — the router in front of WSGI, Flask, Starlette/FastAPI and
  functions-framework, and :func:`find_router`;
- :mod:`.asgi` — :class:`TimerAsgiMiddleware`, the router under ASGI (standard library only);
- :mod:`.request` — :class:`TimerRequest`, what a handler sees of the request;
- :mod:`.binding` — how a JSON body binds to a payload parameter (400 when it does not);
- :mod:`.guard` — :class:`RunOnceGuard`, a run's work done once however often it is delivered;
  its refusals (:mod:`.guard_refusals`), its Flask-view adapter (:mod:`.guard_views`) and its
  stores (:mod:`.guard_stores`);
- :mod:`.auth` — :func:`verify_scheduler_token`, :class:`SchedulerTokenMiddleware` (and its
  ASGI twin) and the
  :class:`TokenError` tree: check the OIDC token Cloud Scheduler sends (loaded on first use).
"""

import importlib
from typing import TYPE_CHECKING, Any

from .asgi import TimerAsgiMiddleware
from .binding import BindingError, encode_payload
from .frameworks import TimerMiddleware
from .guard import (
    Attempt,
    MissingRunHeadersError,
    RunInProgressError,
    RunOnceGuard,
    RunRefusedError,
    RunResult,
    ScheduledRun,
)
from .guard_stores import (
    Claim,
    ClaimOutcome,
    FirestoreRunStore,
    RunRecord,
    RunStatus,
    RunStore,
    SqliteRunStore,
    forget_in_memory_runs,
)
from .request import CaseInsensitiveHeaders, TimerRequest
from .router import (
    DEFAULT_PREFIX,
    EXCEPTION_ENVIRON_KEY,
    PROPAGATE_EXCEPTIONS_KEY,
    Timer,
    TimerResponse,
    TimerRouter,
    UnknownTimerError,
    WsgiApp,
    find_router,
)

if TYPE_CHECKING:
    from .auth import (
        CertsUnavailableError,
        ExpiredTokenError,
        InvalidSignatureError,
        MalformedTokenError,
        MissingTokenError,
        SchedulerTokenAsgiMiddleware,
        SchedulerTokenMiddleware,
        TokenError,
        TokenNotYetValidError,
        WrongAudienceError,
        WrongEmailError,
        WrongIssuerError,
        verify_scheduler_token,
        verify_scheduler_token_async,
    )

__all__ = [
    "DEFAULT_PREFIX",
    "EXCEPTION_ENVIRON_KEY",
    "PROPAGATE_EXCEPTIONS_KEY",
    "BindingError",
    "CaseInsensitiveHeaders",
    "CertsUnavailableError",
    "SchedulerTokenAsgiMiddleware",
    "SchedulerTokenMiddleware",
    "Timer",
    "TimerMiddleware",
    "TimerRequest",
    "TimerResponse",
    "TimerRouter",
    "TokenError",
    "UnknownTimerError",
    "WsgiApp",
    "encode_payload",
    "find_router",
    # the run-once guard
    "Attempt",
    "Claim",
    "ClaimOutcome",
    "FirestoreRunStore",
    "MissingRunHeadersError",
    "RunInProgressError",
    "RunOnceGuard",
    "RunRecord",
    "RunRefusedError",
    "RunResult",
    "RunStatus",
    "RunStore",
    "ScheduledRun",
    "SqliteRunStore",
    "forget_in_memory_runs",
    # OIDC token verification, loaded on first use
    "verify_scheduler_token",
    "verify_scheduler_token_async",
    "ExpiredTokenError",
    "InvalidSignatureError",
    "MalformedTokenError",
    "MissingTokenError",
    "TokenNotYetValidError",
    "WrongAudienceError",
    "WrongEmailError",
    "WrongIssuerError",
    # ASGI
    "TimerAsgiMiddleware",
]


#: The names of ``__all__`` not imported above: served from :mod:`.auth` on first use, so a
#: service that checks no token loads none of its code.
_AUTH_EXPORTS = frozenset(__all__) - set(globals())


def __getattr__(name: str) -> Any:
    """Import the token helpers of :mod:`.auth` on first use."""
    if name not in _AUTH_EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(".auth", __name__), name)
