"""The v1 API's rules as plain-typed methods (see :mod:`scheduler_emulator.api`).

Every method takes full resource names (``projects/P/locations/L[/jobs/J]``), REST JSON for a
job body (camelCase or snake_case; the gRPC servicer converts its messages to it), ints for page
sizes and strings or lists for update masks, and raises
:class:`~scheduler_emulator.domain.errors.ApiError` subclasses, which each surface renders in its
own format (Google's JSON envelope; a google.rpc.Status with BadRequest details)::

    >>> from datetime import UTC, datetime
    >>> from scheduler_emulator import Emulator, ManualClock
    >>> api = SchedulerApi(Emulator(ManualClock(datetime(2026, 9, 24, tzinfo=UTC))))
    >>> parent = "projects/my-project/locations/us-central1"
    >>> job = api.create_job(parent, {"name": parent + "/jobs/nightly", "schedule": "0 2 * * *",
    ...                               "httpTarget": {"uri": "http://127.0.0.1:8000/run"}})
    >>> page = api.list_jobs(parent, page_size=0)     # 0: the default page of 500
    >>> [j.name.rsplit("/", 1)[1] for j in page.jobs], page.next_page_token
    (['nightly'], '')
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..domain.errors import InvalidArgument, NotFound
from ..domain.names import (
    check_project_id,
    generate_job_id,
    parse_job_name,
    parse_location_name,
)
from ..domain.resources import Job
from ..runtime._emulator import MAX_JOBS_PAGE_SIZE, Emulator
from .cmek import CmekConfigs
from .locations import Location, shown_locations

#: Output-only fields of a Job a request may carry and that are ignored whatever their value
#: (Google's rule for output-only fields). The codec drops the others; ``satisfiesPzs`` (a field
#: of the current discovery document that the Job codec does not know) is dropped here.
IGNORED_JOB_FIELDS = frozenset({"satisfiesPzs", "satisfies_pzs"})


@dataclass(frozen=True)
class JobsPage:
    """One ListJobs page.

    :param jobs: the jobs in creation order.
    :param next_page_token: the token of the next page; ``""`` on the last page.
    """

    jobs: list[Job]
    next_page_token: str


def page_size_value(raw: str, *, field: str = "pageSize") -> int:
    """Parse a page size given as text (a REST query parameter).

    :param raw: the text; ``""`` means not given (``0``).
    :raises InvalidArgument: when it is not an integer, naming the field and the value.
    """
    if raw == "":
        return 0
    try:
        return int(raw)
    except ValueError:
        raise InvalidArgument(
            f"Invalid value at 'page_size' (TYPE_INT32), {json.dumps(raw)}.", field=field
        ) from None


def _without_ignored(body: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key not in IGNORED_JOB_FIELDS}


class SchedulerApi:
    """The eight job RPCs and the two location RPCs of Cloud Scheduler v1, plus the CMEK
    configuration and its operations, for one emulator.

    Use :meth:`of` to share one instance (and so one CMEK store) between the REST and gRPC
    surfaces of an emulator.

    :param emulator: the emulator whose jobs the API serves.
    """

    _instances: weakref.WeakKeyDictionary[Emulator, SchedulerApi] = weakref.WeakKeyDictionary()

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self.cmek = CmekConfigs()

    @classmethod
    def of(cls, emulator: Emulator) -> SchedulerApi:
        """The API of ``emulator``, made on first use and shared afterwards."""
        api = cls._instances.get(emulator)
        if api is None:
            api = cls._instances.setdefault(emulator, cls(emulator))
        return api

    # ---------------------------------------------------------------- jobs

    def list_jobs(self, parent: str, page_size: int = 0, page_token: str = "") -> JobsPage:
        """ListJobs: the jobs under ``parent`` in creation order.

        :param parent: ``projects/P/locations/L``.
        :param page_size: jobs per page; 0 or negative gives the default, more than
            :data:`~scheduler_emulator.runtime._emulator.MAX_JOBS_PAGE_SIZE` (500) is clamped.
        :param page_token: ``""`` or a ``next_page_token`` of an earlier page.
        :raises InvalidArgument: for a malformed parent (``field="parent"``) or a page token
            this emulator did not give (``field="pageToken"``).
        """
        parsed = parse_location_name(parent, field="parent")
        jobs, token = self.emulator.list_jobs_page(parsed.full, page_size, page_token)
        return JobsPage(jobs, token)

    def get_job(self, name: str) -> Job:
        """GetJob. :raises NotFound: ``Job not found.`` :raises InvalidArgument: bad name."""
        return self.emulator.get_job(parse_job_name(name).full)

    def create_job(self, parent: str, job: Mapping[str, Any]) -> Job:
        """CreateJob: a job with a generated ID when ``job`` has no name.

        :param parent: ``projects/P/locations/L``; the job's name must be under it.
        :param job: the Job's REST JSON; output-only fields are ignored.
        :raises InvalidArgument: for a bad parent, a name elsewhere than ``parent``, any bad
            field. :raises AlreadyExists: for a duplicate name.
        """
        location = parse_location_name(parent, field="parent").full
        body = _without_ignored(job)
        name = body.get("name")
        if name:
            if not isinstance(name, str):
                raise InvalidArgument(
                    f"Invalid value at 'job.name' (TYPE_STRING), {json.dumps(name)}.", field="name"
                )
            parse_job_name(name, parent=location)
        else:
            body["name"] = f"{location}/jobs/{generate_job_id()}"
        return self.emulator.create_job(body)

    def update_job(
        self, name: str, job: Mapping[str, Any], update_mask: str | Sequence[str] | None
    ) -> Job:
        """UpdateJob: the mask governs (no mask applies every field in the body; a headers map
        with ``null`` values edits the stored one); ``name`` identifies the job and the body's
        ``name`` is ignored.

        :param name: the full job name (REST: the URL; gRPC: ``job.name``).
        :param job: the Job's REST JSON; output-only fields are ignored.
        :param update_mask: paths as text (comma-separated) or a list, camelCase or snake_case.
        :raises NotFound: ``Job not found.`` :raises InvalidArgument: bad name, field or mask.
        """
        full = parse_job_name(name).full
        body = {k: v for k, v in _without_ignored(job).items() if k != "name"}
        return self.emulator.update_job(full, body, update_mask)

    def delete_job(self, name: str) -> None:
        """DeleteJob. :raises NotFound: ``Job not found.``"""
        self.emulator.delete_job(parse_job_name(name).full)

    def pause_job(self, name: str) -> Job:
        """PauseJob. :raises FailedPrecondition: unless ENABLED (the message names the state)."""
        return self.emulator.pause_job(parse_job_name(name).full)

    def resume_job(self, name: str) -> Job:
        """ResumeJob. :raises FailedPrecondition: unless PAUSED (the message names the state)."""
        return self.emulator.resume_job(parse_job_name(name).full)

    def run_job(self, name: str) -> Job:
        """RunJob: a run now, even while paused or running (state unchanged). Answers when the
        run is accepted, on every clock, as Google's does: on a manual clock its first attempt
        is then in flight and sent on another thread (:meth:`Emulator.run_job` with
        ``wait=False``), so no request waits for a target."""
        return self.emulator.run_job(parse_job_name(name).full, wait=False)

    # ---------------------------------------------------------------- locations

    def list_locations(self, name: str) -> list[Location]:
        """ListLocations of ``projects/P`` (see :mod:`~scheduler_emulator.api.locations`).

        :raises InvalidArgument: for a malformed project name.
        """
        project = _project(name)
        return [Location(project, loc) for loc in shown_locations(self.emulator.locations)]

    def get_location(self, name: str) -> Location:
        """GetLocation of ``projects/P/locations/L``.

        :raises NotFound: for a location ListLocations does not show.
        """
        parsed = parse_location_name(name, field="name")
        if parsed.location not in shown_locations(self.emulator.locations):
            raise NotFound(f"Location {parsed.full} not found.")
        return Location(parsed.project, parsed.location)

    # ---------------------------------------------------------------- CMEK

    def get_cmek_config(self, name: str) -> dict[str, Any]:
        """GetCmekConfig of ``projects/P/locations/L/cmekConfig`` (REST JSON)."""
        return self.cmek.get(_cmek_location(name))

    def update_cmek_config(
        self, name: str, config: Mapping[str, Any], update_mask: str | Sequence[str] | None
    ) -> dict[str, Any]:
        """UpdateCmekConfig: store the key name; return the done Operation (REST JSON)."""
        return self.cmek.update(_cmek_location(name), config, update_mask, self.emulator.now())

    def get_operation(self, name: str) -> dict[str, Any]:
        """GetOperation of ``projects/P/locations/L/operations/ID``.

        :raises NotFound: for an operation this emulator did not create.
        """
        return self.cmek.get_operation(name)

    def list_operations(
        self, name: str, page_size: int = 0, page_token: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        """ListOperations of ``projects/P/locations/L``: operations oldest first, one page.

        :raises InvalidArgument: for a page token this emulator did not give.
        """
        location = parse_location_name(name, field="name").full
        operations = self.cmek.list_operations(location)
        start = 0
        if page_token:
            if not (page_token.isascii() and page_token.isdigit() and len(page_token) <= 9):
                raise InvalidArgument(
                    f"pageToken {json.dumps(page_token)} is not a page token this emulator gave.",
                    field="pageToken",
                )
            start = int(page_token)
        size = MAX_JOBS_PAGE_SIZE if page_size <= 0 else min(page_size, MAX_JOBS_PAGE_SIZE)
        page = operations[start : start + size]
        more = start + size < len(operations)
        return page, str(start + size) if more else ""


def _project(name: str) -> str:
    parts = name.split("/")
    if len(parts) != 2 or parts[0] != "projects" or not parts[1]:
        raise InvalidArgument(
            f'name "{name}" must be formatted: "projects/<PROJECT_ID>".', field="name"
        )
    return check_project_id(parts[1], field="name")


def _cmek_location(name: str) -> str:
    if not name.endswith("/cmekConfig"):
        raise InvalidArgument(
            f'name "{name}" must be formatted: '
            '"projects/<PROJECT_ID>/locations/<LOCATION_ID>/cmekConfig".',
            field="name",
        )
    return parse_location_name(name.removesuffix("/cmekConfig"), field="name").full
