"""The runtime layer: everything with a thread, a socket, a file or a clock.

Its modules are private (``_emulator``, ``_clock``…). The names below are what the layers above
(the server, the tools) and the pytest plugin use of it; :mod:`scheduler_emulator` exports
those a user needs (the :class:`Emulator`, :class:`EmulatorOptions`, the clocks and the
transports), and the rest may change between releases. docs/architecture.md says what each
module owns.
"""

from ._clock import Clock, ClockFile, ManualClock, SystemClock, advance_seconds
from ._emulator import Emulator
from ._options import (
    DEFAULT_HEADER_CASE,
    DEFAULT_LOCATION,
    DEFAULT_PROJECT,
    DEFAULT_RETAIN_ATTEMPTS,
    DEFAULT_RETAIN_MEGABYTES,
    EmulatorOptions,
)
from .cloud_run.executions import EXECUTION_STATES, Execution, run_callable
from .delivery.dispatchers import app_engine_url, parse_app_engine_urls
from .delivery.in_process import (
    AsgiApp,
    AsgiCaller,
    MountTransport,
    WsgiApp,
    WsgiTransport,
    is_asgi_app,
)
from .delivery.pubsub import InProcessPublisher, NoPublisher, Publisher, PubsubMessage
from .delivery.pubsub_client import EmulatorPublisher, ensure_topics, pubsub_library_missing
from .delivery.tokens import JWKS_PATH, TOKEN_TIMES, TOKENINFO_PATH, TokenAuthority
from .delivery.transports import (
    DeliveryRequest,
    HttpTransport,
    Transport,
    TransportResult,
    http2_problem,
)
from .pipeline.delivery_pool import MAX_IN_PROGRESS
from .pipeline.recorder import outcome_of
from .storage.attempt_log import DAEMON_FLUSH_INTERVAL, LOG_FORMATS, AttemptLog
from .storage.data_dir_lock import DataDirLock
from .storage.data_file import startup_error
from .storage.read_model import runs_page
from .storage.store import Store, stopped_at
