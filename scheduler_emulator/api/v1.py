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

import itertools
import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..domain.errors import InvalidArgument, NotFound, Unimplemented, show_value
from ..domain.list_filter import parse_filter
from ..domain.names import (
    check_project_id,
    generate_job_id,
    parse_job_name,
    parse_location_name,
)
from ..domain.paging import bounded_page_size, next_page_token, page_position
from ..domain.resources import Job
from ..domain.update_mask import parse_update_mask
from ..domain.validation import MAX_JOB_SIZE_BYTES, job_size_bytes
from ..runtime._emulator import Emulator
from .cmek import CmekConfigs
from .locations import LOCATION_FIELDS, Location, shown_locations

T = TypeVar("T")

#: Largest and default ListJobs (and ListOperations) page: Google's maximum of 500; a page size
#: of 0 or less gives this many, a larger one is clamped to it.
MAX_JOBS_PAGE_SIZE = 500
#: Largest REST request body, in bytes (2 MiB). The largest job (1 MB:
#: :data:`~scheduler_emulator.domain.validation.MAX_JOB_SIZE_BYTES`) travels over REST as JSON,
#: its body base64-encoded (4/3 as long: 1,398,104 bytes for 1 MiB) beside up to 80 KB of
#: headers that JSON may escape; twice the job limit holds that, so a job over 1 MB is refused
#: INVALID_ARGUMENT naming the limit, as over gRPC, and only a body past this is refused
#: unread (400, "Request payload size exceeds the limit").
MAX_REQUEST_BYTES = 2 * MAX_JOB_SIZE_BYTES
#: The most job bytes (:func:`~scheduler_emulator.domain.validation.job_size_bytes` plus 1 KiB
#: each for framing and output-only fields) a ListJobs page holds, so that it fits the 4 MiB a
#: gRPC client takes by default: a page of large jobs holds fewer than its page size (AIP-158
#: allows it), at least one.
MAX_PAGE_BYTES = 4 * MAX_JOB_SIZE_BYTES - 256 * 1024
_INT32 = range(-(2**31), 2**31)

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
    :raises InvalidArgument: when it is not a whole number an int32 holds (Google's proto field
        type), naming the field and the value.
    """
    if raw == "":
        return 0
    digits = raw.strip().lstrip("+-")
    if len(digits) <= 10 and digits.isascii() and digits.isdigit() and int(raw) in _INT32:
        return int(raw)
    raise InvalidArgument(
        f"Invalid value at 'page_size' (TYPE_INT32), {show_value(raw)}.", field=field
    )


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
            :data:`MAX_JOBS_PAGE_SIZE` (500) is clamped; a page of large jobs holds fewer
            (:data:`MAX_PAGE_BYTES`).
        :param page_token: ``""`` or a ``next_page_token`` of an earlier page.
        :raises InvalidArgument: for a malformed parent (``field="parent"``) or a page token
            this emulator did not give (``field="pageToken"``).
        """
        prefix = parse_location_name(parent, field="parent").full + "/jobs/"
        size = bounded_page_size(page_size, maximum=MAX_JOBS_PAGE_SIZE)
        start = page_position(page_token)
        jobs, following = self.emulator.jobs_page(prefix, size, start)
        sizes = itertools.accumulate(job_size_bytes(job) + 1024 for job in jobs)
        fits = max(1, sum(1 for total in sizes if total <= MAX_PAGE_BYTES))
        if fits < len(jobs):  # (a gRPC client would refuse the page: ResourceExhausted)
            jobs, following = self.emulator.jobs_page(prefix, fits, start)
        return JobsPage(jobs, next_page_token(following))

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
        self,
        name: str,
        job: Mapping[str, Any],
        update_mask: str | Sequence[str] | None,
        *,
        proto_paths: bool = False,
    ) -> Job:
        """UpdateJob: the mask governs (no mask applies every field in the body; a headers map
        with ``null`` values edits the stored one); ``name`` identifies the job and the body's
        ``name`` is ignored.

        :param name: the full job name (REST: the URL; gRPC: ``job.name``).
        :param job: the Job's REST JSON; output-only fields are ignored.
        :param update_mask: paths as text (comma-separated) or a list, camelCase or snake_case
            (REST: Google's front end reads the JSON spelling and passes the proto one through).
        :param proto_paths: the paths are a gRPC ``FieldMask``'s: proto (snake_case) names only,
            a camelCase path is ``Invalid mask for Job: <path>``, as Google's gRPC answers.
        :raises NotFound: ``Job not found.`` :raises InvalidArgument: bad name, field or mask.
        """
        full = parse_job_name(name).full
        if proto_paths:
            parse_update_mask(update_mask, proto_names=True)
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

    def list_locations(
        self, name: str, page_size: int = 0, page_token: str = "", filter: str = ""
    ) -> tuple[list[Location], str]:
        """ListLocations of ``projects/P`` (see :mod:`~scheduler_emulator.api.locations`): the
        locations ``filter`` keeps, one page, and the next page's token (``""`` on the last).

        :param page_size: locations per page; 0 gives all of them (at most 500).
        :param page_token: ``""`` or a ``next_page_token`` of an earlier page.
        :param filter: Google's list filter over the Location's fields (``locationId``,
            ``name``, ``displayName``, ``labels.KEY``; see
            :mod:`~scheduler_emulator.domain.list_filter`).
        :raises InvalidArgument: for a malformed project name, a malformed filter, a negative
            page size or a page token this emulator did not give.
        """
        project = _project(name)
        keep = parse_filter(filter, LOCATION_FIELDS)
        locations = [Location(project, loc) for loc in shown_locations(self.emulator.locations)]
        return page_of([loc for loc in locations if keep(loc.to_json())], page_size, page_token)

    def get_location(self, name: str) -> Location:
        """GetLocation of ``projects/P/locations/L``.

        :raises NotFound: for a location ListLocations does not show.
        """
        parsed = parse_location_name(name, field="name")
        if parsed.location not in shown_locations(self.emulator.locations):
            raise NotFound(f"Location {show_value(parsed.full, 200)[1:-1]} not found.")
        return Location(parsed.project, parsed.location)

    # ---------------------------------------------------------------- CMEK

    def get_cmek_config(self, name: str) -> dict[str, Any]:
        """GetCmekConfig of ``projects/P/locations/L/cmekConfig`` (REST JSON)."""
        return self.cmek.get(_cmek_location(name))

    def update_cmek_config(
        self,
        name: str,
        config: Mapping[str, Any],
        update_mask: str | Sequence[str] | None,
        *,
        proto_paths: bool = False,
    ) -> dict[str, Any]:
        """UpdateCmekConfig: store the key name; return the done Operation (REST JSON).

        :param proto_paths: as for :meth:`update_job`.
        """
        location = _cmek_location(name)
        now = self.emulator.now()
        return self.cmek.update(location, config, update_mask, now, proto_paths=proto_paths)

    def get_operation(self, name: str) -> dict[str, Any]:
        """GetOperation of ``projects/P/locations/L/operations/ID``.

        :raises InvalidArgument: for a name of another shape (``field="name"``).
        :raises NotFound: for an operation this emulator did not create.
        """
        location, _, operation = name.rpartition("/operations/")
        if not operation or "/" in operation:
            raise InvalidArgument(
                f"name {show_value(name)} must be formatted: "
                '"projects/<PROJECT_ID>/locations/<LOCATION_ID>/operations/<OPERATION_ID>".',
                field="name",
            )
        parse_location_name(location, field="name")
        return self.cmek.get_operation(name)

    def cancel_operation(self, name: str) -> None:
        """CancelOperation (``operations.cancel``): not supported.

        :raises Unimplemented: always, as Google's Operations API answers for an operation
            method a service does not support (every operation here is done when returned).
        """
        raise Unimplemented(
            "CancelOperation (operations.cancel) is not implemented: Cloud Scheduler's "
            "operations are done when they are returned."
        )

    def delete_operation(self, name: str) -> None:
        """DeleteOperation (``operations.delete``): not supported.

        :raises Unimplemented: always, as Google's Operations API answers for an operation
            method a service does not support.
        """
        raise Unimplemented(
            "DeleteOperation (operations.delete) is not implemented: Cloud Scheduler keeps "
            "its operations."
        )

    def list_operations(
        self, name: str, page_size: int = 0, page_token: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        """ListOperations of ``projects/P/locations/L``: operations oldest first, one page
        (:func:`page_of`).

        :raises InvalidArgument: for a negative page size or a page token this emulator did
            not give.
        """
        location = parse_location_name(name, field="name").full
        return page_of(self.cmek.list_operations(location), page_size, page_token)


def page_of(items: Sequence[T], page_size: int, page_token: str) -> tuple[list[T], str]:
    """One page of a list held in memory, and the next page's token (``""`` on the last page),
    in the one page-token codec of :mod:`~scheduler_emulator.domain.paging`.

    :param page_size: items per page; 0 gives the default of :data:`MAX_JOBS_PAGE_SIZE` (500),
        and more than that is that (Google's AIP-158, https://google.aip.dev/158).
    :raises InvalidArgument: for a negative ``page_size`` (``field="pageSize"``, AIP-158) or a
        token this emulator did not give (``field="pageToken"``).
    """
    if page_size < 0:
        raise InvalidArgument(
            f"pageSize {page_size} is negative; give 0 for the default page or a positive size.",
            field="pageSize",
        )
    start = page_position(page_token)
    end = start + bounded_page_size(page_size, maximum=MAX_JOBS_PAGE_SIZE)
    return list(items[start:end]), next_page_token(end if end < len(items) else None)


def _project(name: str) -> str:
    parts = name.split("/")
    if len(parts) != 2 or parts[0] != "projects" or not parts[1]:
        raise InvalidArgument(
            f'name {show_value(name)} must be formatted: "projects/<PROJECT_ID>".', field="name"
        )
    return check_project_id(parts[1], field="name")


def _cmek_location(name: str) -> str:
    if not name.endswith("/cmekConfig"):
        raise InvalidArgument(
            f"name {show_value(name)} must be formatted: "
            '"projects/<PROJECT_ID>/locations/<LOCATION_ID>/cmekConfig".',
            field="name",
        )
    return parse_location_name(name.removesuffix("/cmekConfig"), field="name").full
