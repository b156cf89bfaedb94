"""The settings of one emulator, in one object: what the command line, the pytest plugin and
scenario files choose, and the one home of their defaults.

:class:`~scheduler_emulator.Emulator` takes an :class:`EmulatorOptions` (or the
same fields as keywords) and builds everything else from it, so the daemon, the plugin and
``replay`` are composed the same way::

    >>> options = EmulatorOptions(project="shop", dst_policy="vixie")
    >>> options.location, options.all_locations
    ('us-central1', ('us-central1',))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..domain.schedule import DEFAULT_DST_POLICY
from ..wire import GOOGLE_ISSUER, HEADER_CASES, spell_header

#: Project of job IDs given without a full name.
DEFAULT_PROJECT = "my-project"
#: Location of job IDs given without a full name.
DEFAULT_LOCATION = "us-central1"
#: The file of the SQLite store inside a data directory.
STORE_FILE_NAME = "emulator.db"
#: The file of the OIDC signing key inside a data directory.
KEY_FILE_NAME = "oidc-key.pem"
#: The file of a manual clock's virtual now inside a data directory (a restart resumes there).
CLOCK_FILE_NAME = "manual-clock.json"
#: Finished attempts kept by default (``--retain-attempts``); about 1 KB each on disk, up to
#: 5 KB with a response excerpt.
DEFAULT_RETAIN_ATTEMPTS = 100_000
#: Megabytes (10**6 bytes) the store may hold before the oldest finished attempts are dropped
#: (``--retain-megabytes``): 100,000 attempts of targets answering 4 KiB would take 480.
DEFAULT_RETAIN_MEGABYTES = 200
#: Attempts per page of the attempt and skipped-run listings when none is asked for, and at most.
ATTEMPTS_PAGE_SIZE = 100
ATTEMPTS_PAGE_SIZE_MAX = 1000
#: Entries at most in a per-job cache (request templates, log line prefixes): past that one
#: starts afresh (jobs deleted or renamed leave theirs behind).
CACHED_JOBS = 50_000
#: How HTTP attempts spell header names by default: as Google's documentation does.
DEFAULT_HEADER_CASE = HEADER_CASES[0]


@dataclass(frozen=True)
class EmulatorOptions:
    """What an emulator is set up with (all optional).

    :param project: project for job IDs given without a full name.
    :param location: location for job IDs given without a full name.
    :param locations: the locations ListLocations shows; ``(location,)`` when empty.
    :param dst_policy: ``"absolute"`` (cron fields match the wall-clock time of each absolute
        minute: a time in a spring-forward gap does not run, one in a fall-back overlap runs
        twice) or ``"vixie"`` (fixed-time jobs run once after a gap and once in an overlap).
    :param force_run_schedule_time: the ``X-CloudScheduler-ScheduleTime`` of a forced run:
        ``"next"`` (the job's next scheduled time) or ``"omit"`` (no header).
    :param app_engine_urls: local base URL of App Engine services: one URL for every service,
        or ``{"worker": "http://…", "*": "http://…"}``.
    :param data_dir: where jobs, runs, attempts and the signing key are kept (a path or its
        text); ``None`` keeps everything in memory (``--in-memory``).
    :param retain_attempts: finished attempts kept (the oldest go first); ``None``: all.
    :param retain_megabytes: the most the store's database may hold, in megabytes (10**6
        bytes): beyond it the oldest finished attempts are dropped; ``None``: no such bound.
    :param token_issuer: ``iss`` of minted OIDC tokens.
    :param token_time: ``"emulator"`` or ``"real"``: which clock stamps tokens.
    :param header_case: how HTTP attempts spell header names, the scheduler's and the job's
        own: ``"google"`` (``X-CloudScheduler-JobName``, the default), ``"lower"`` (as behind
        an HTTP/2 front end) or ``"canonical"`` (``X-Cloudscheduler-Jobname``).
    :param http2: send ``http://`` attempts over HTTP/2 with prior knowledge (h2c), as Cloud
        Run's end-to-end HTTP/2 does (needs pycurl with an HTTP/2 libcurl: the ``curl`` extra).
    :param cloud_run_jobs: the Cloud Run jobs a scheduler job's ``jobs/J:run`` URI runs
        locally: decoded definitions, v2 REST ``Job`` or v1 (``gcloud run jobs describe
        --format=export``) mappings (:func:`~scheduler_emulator.domain.cloud_run.
        parse_cloud_run_job`; ``--cloud-run-jobs FILE`` reads them from files).
    :raises ValueError: for a ``header_case`` not among those, naming them.
    """

    project: str = DEFAULT_PROJECT
    location: str = DEFAULT_LOCATION
    locations: tuple[str, ...] = ()
    dst_policy: str = DEFAULT_DST_POLICY
    force_run_schedule_time: str = "next"
    app_engine_urls: str | Mapping[str, str] | None = field(default=None, compare=False)
    data_dir: Path | None = None
    retain_attempts: int | None = DEFAULT_RETAIN_ATTEMPTS
    retain_megabytes: int | None = DEFAULT_RETAIN_MEGABYTES
    token_issuer: str = GOOGLE_ISSUER
    token_time: str = "emulator"
    header_case: str = DEFAULT_HEADER_CASE
    http2: bool = False
    cloud_run_jobs: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        spell_header("x", self.header_case)  # raises ValueError naming the accepted values
        if isinstance(self.data_dir, str):  # Emulator(data_dir="…"), as often as a Path
            object.__setattr__(self, "data_dir", Path(self.data_dir))

    @property
    def all_locations(self) -> tuple[str, ...]:
        """The locations ListLocations shows."""
        return tuple(self.locations) or (self.location,)

    @property
    def clock_path(self) -> Path | None:
        """The manual clock's file in the data directory (``None`` in memory)."""
        return None if self.data_dir is None else self.data_dir / CLOCK_FILE_NAME

    @property
    def key_path(self) -> Path | None:
        """The signing key's file in the data directory (``None`` in memory: a fresh key)."""
        return None if self.data_dir is None else self.data_dir / KEY_FILE_NAME

    def store_path(self) -> Path | str:
        """The database file in the data directory, or ``":memory:"``."""
        return ":memory:" if self.data_dir is None else self.data_dir / STORE_FILE_NAME
