"""The Cloud Scheduler v1 REST API (spec §1.1, §5), served on the daemon's port.

``gcloud scheduler …`` and the ``google-cloud-scheduler`` client work against it unchanged::

    $ eval "$(scheduler-emulator env-init --port 8095 --project my-project)"
    $ gcloud scheduler jobs create http nightly --location=us-central1 \\
          --schedule="0 2 * * *" --uri=http://127.0.0.1:8000/_triggers/timer/nightly
    $ curl -s 'http://127.0.0.1:8095/v1/projects/my-project/locations/us-central1/jobs'
    {"jobs": [{"name": "projects/my-project/locations/us-central1/jobs/nightly", ...}]}

Requests follow the proto3 JSON rules of §3.8 (camelCase or snake_case, enum names or
integers, ``alt=json`` and ``$alt=json;enum-encoding=int`` — the latter makes responses use
integer enums). Errors are Google's envelope (§6.1) and never a 5xx for bad input.
"""

from __future__ import annotations

import json
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request

from ..domain.codec import job_from_json, job_to_json
from ..domain.errors import InvalidArgument, NotFound
from ..domain.names import check_location_id, check_project_id, generate_job_id, parse_job_name
from ..domain.resources import Job
from ..runtime.emulator import Emulator
from .request_body import request_json

_JOBS = "/v1/projects/<project>/locations/<location>/jobs"
_JOB = _JOBS + "/<job>"

RULES = [
    Rule(_JOB + ":pause", methods=["POST"], endpoint="pause_job"),
    Rule(_JOB + ":resume", methods=["POST"], endpoint="resume_job"),
    Rule(_JOB + ":run", methods=["POST"], endpoint="run_job"),
    Rule(_JOBS, methods=["GET"], endpoint="list_jobs"),
    Rule(_JOBS, methods=["POST"], endpoint="create_job"),
    Rule(_JOB, methods=["GET"], endpoint="get_job"),
    Rule(_JOB, methods=["PATCH"], endpoint="update_job"),
    Rule(_JOB, methods=["DELETE"], endpoint="delete_job"),
    Rule("/v1/projects/<project>/locations", methods=["GET"], endpoint="list_locations"),
    Rule("/v1/projects/<project>/locations/<location>", methods=["GET"], endpoint="get_location"),
]

#: Largest and default ListJobs page (spec §5.3, P15).
MAX_PAGE_SIZE = 500


def wants_int_enums(request: Request) -> bool:
    """Tell whether the client asked for ``enum-encoding=int`` (``$alt=json;enum-encoding=int``,
    sent by the Python REST transport, §16.2)."""
    return any(
        "enum-encoding=int" in value
        for key in ("$alt", "alt")
        for value in request.args.getlist(key)
    )


def _parent(project: str, location: str) -> str:
    check_project_id(project, field="parent")
    check_location_id(location, field="parent")
    return f"projects/{project}/locations/{location}"


def _page_size(request: Request) -> int:
    raw = request.args.get("pageSize", request.args.get("page_size", ""))
    if raw == "":
        return MAX_PAGE_SIZE
    try:
        size = int(raw)
    except ValueError:
        raise InvalidArgument(
            f"Invalid value at 'page_size' (TYPE_INT32), {raw!r}.", field="pageSize"
        ) from None
    return MAX_PAGE_SIZE if size <= 0 or size > MAX_PAGE_SIZE else size


class Api:
    """Handlers of the ten v1 routes for one :class:`Emulator`."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator

    def _job(self, request: Request, job: Job) -> dict[str, Any]:
        return job_to_json(job, enum_int=wants_int_enums(request))

    def _name(self, project: str, location: str, job: str) -> str:
        if ":" in job:  # a custom verb (``:pause``…) with a method it does not take
            raise NotFound(f"Method not found: {job.split(':', 1)[1]!r} with this HTTP method.")
        parent = _parent(project, location)
        return parse_job_name(f"{parent}/jobs/{job}", parent=parent).full

    # ---------------------------------------------------------------- jobs

    def list_jobs(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """ListJobs (§5.3, P15): creation order, pages of ``pageSize`` (≤ 500)."""
        parent = _parent(project, location)
        token = request.args.get("pageToken", request.args.get("page_token", ""))
        jobs, next_token = self.emulator.list_jobs_page(parent, _page_size(request), token)
        body: dict[str, Any] = {}
        if jobs:
            body["jobs"] = [self._job(request, job) for job in jobs]
        if next_token:
            body["nextPageToken"] = next_token
        return body

    def create_job(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """CreateJob (§5.1): normalised job, 409 on a duplicate, a generated ID when unnamed."""
        parent = _parent(project, location)
        data = request_json(request)
        name = data.get("name")
        if name:
            if not isinstance(name, str):
                raise InvalidArgument(
                    f"Invalid value at 'job.name' (TYPE_STRING), {json.dumps(name)}.", field="name"
                )
            parse_job_name(name, parent=parent)
        job = job_from_json(data, default_name=f"{parent}/jobs/{generate_job_id()}")
        return self._job(request, self.emulator.create_job(job))

    def get_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """GetJob (§5.2); 404 ``Job not found.``"""
        return self._job(request, self.emulator.get_job(self._name(project, location, job)))

    def update_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """UpdateJob (§5.4): ``updateMask`` governs; the URL names the job; P12, P13."""
        name = self._name(project, location, job)
        mask = request.args.get("updateMask", request.args.get("update_mask"))
        updated = self.emulator.update_job(name, request_json(request), mask)
        return self._job(request, updated)

    def delete_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """DeleteJob (§5.5): ``{}``; 404 when missing."""
        self.emulator.delete_job(self._name(project, location, job))
        return {}

    def pause_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """PauseJob (§5.6, §4, P11)."""
        request_json(request, allow_fields=frozenset({"name"}))
        return self._job(request, self.emulator.pause_job(self._name(project, location, job)))

    def resume_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """ResumeJob (§5.7, §4, P11)."""
        request_json(request, allow_fields=frozenset({"name"}))
        return self._job(request, self.emulator.resume_job(self._name(project, location, job)))

    def run_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """RunJob (§5.8, P3): dispatches now, even while paused or running."""
        request_json(request, allow_fields=frozenset({"name"}))
        return self._job(request, self.emulator.run_job(self._name(project, location, job)))

    # ---------------------------------------------------------------- locations

    def _location(self, project: str, location: str) -> dict[str, Any]:
        return {
            "name": f"projects/{project}/locations/{location}",
            "locationId": location,
            "labels": {"cloud.googleapis.com/region": location},
        }

    def list_locations(self, request: Request, project: str) -> dict[str, Any]:
        """ListLocations (§5.9, P18): the configured locations, with the region label."""
        check_project_id(project, field="name")
        return {
            "locations": [self._location(project, loc) for loc in self.emulator.locations],
            "nextPageToken": "",
        }

    def get_location(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """GetLocation (§5.9); 404 for a location that is not configured."""
        _parent(project, location)
        if location not in self.emulator.locations:
            raise NotFound(f"Location projects/{project}/locations/{location} not found.")
        return self._location(project, location)
