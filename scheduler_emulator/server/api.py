"""The Cloud Scheduler v1 REST API, served on the daemon's port: a thin
adapter from URLs, query parameters and JSON bodies to
:class:`~scheduler_emulator.api.v1.SchedulerApi`, which owns every rule.

``gcloud scheduler …`` and the ``google-cloud-scheduler`` client work against it unchanged::

    $ eval "$(scheduler-emulator env-init --port 8095 --project my-project)"
    $ gcloud scheduler jobs create http nightly --location=us-central1 \\
          --schedule="0 2 * * *" --uri=http://127.0.0.1:8000/_triggers/timer/nightly
    $ curl -s 'http://127.0.0.1:8095/v1/projects/my-project/locations/us-central1/jobs'
    {"jobs": [{"name": "projects/my-project/locations/us-central1/jobs/nightly", ...}]}

Requests follow the proto3 JSON rules (camelCase or snake_case, enum names or
integers, ``alt=json`` and ``$alt=json;enum-encoding=int`` — the latter makes responses use
integer enums). Errors are Google's envelope and never a 5xx for bad input.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from ..api.render_cache import RenderCache
from ..api.v1 import SchedulerApi, page_size_value
from ..domain.codec import camel_case, job_to_json
from ..domain.errors import InvalidArgument, NotFound, show_value
from ..domain.resources import Job
from ..runtime._emulator import Emulator
from .partial_response import rest_field_mask
from .request_body import request_json

__all__ = [
    "Api",
    "RULES",
    "wants_int_enums",
]

_LOCATION = "/v1/projects/<project>/locations/<location>"
_JOBS = _LOCATION + "/jobs"
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
    Rule(_LOCATION, methods=["GET"], endpoint="get_location"),
    Rule(_LOCATION + "/cmekConfig", methods=["GET"], endpoint="get_cmek_config"),
    Rule(_LOCATION + "/cmekConfig", methods=["PATCH"], endpoint="update_cmek_config"),
    Rule(_LOCATION + "/operations", methods=["GET"], endpoint="list_operations"),
    Rule(_LOCATION + "/operations/<operation>", methods=["GET"], endpoint="get_operation"),
    Rule(
        _LOCATION + "/operations/<operation>:cancel", methods=["POST"], endpoint="cancel_operation"
    ),
    Rule(_LOCATION + "/operations/<operation>", methods=["DELETE"], endpoint="delete_operation"),
]


#: Google's system parameters, which every method takes, each also with a leading ``$``
#: (https://cloud.google.com/apis/docs/system-parameters; ``fields`` is the response field mask).
_SYSTEM_PARAMETERS = frozenset(
    {
        "access_token", "alt", "callback", "fields", "key", "oauth_token", "prettyPrint",
        "quotaUser", "upload_protocol", "uploadType", "userIp", "userProject", ".xgafv",
    }
)  # fmt: skip
#: The request fields each method takes as query parameters (camelCase; snake_case too).
_FIELDS = {
    "list_jobs": ("pageSize", "pageToken"),
    "update_job": ("updateMask",),
    "list_locations": ("filter", "pageSize", "pageToken", "extraLocationTypes"),
    "list_operations": ("filter", "pageSize", "pageToken", "returnPartialSuccess"),
    "update_cmek_config": ("updateMask",),
}


def check_parameters(request: Request, endpoint: str) -> None:
    """Refuse a query parameter that is neither a system parameter nor a field of the
    ``endpoint`` method's request, as Google's front end does (a misspelt ``pagesize`` is not
    ignored).

    :raises InvalidArgument: naming the parameter, in Google's words; for an ``alt`` other
        than ``json``, which the emulator does not serve.
    """
    taken = _FIELDS.get(endpoint, ())
    for value in request.args.getlist("alt") + request.args.getlist("$alt"):
        form, *options = (part.strip().lower() for part in value.split(";"))
        if form != "json":  # (alt=proto was answered in JSON)
            raise InvalidArgument(
                f"alt={show_value(value)[1:-1]} is not served: the emulator answers JSON only "
                "(alt=json; Google also answers alt=proto in protocol buffers).",
                field="alt",
            )
        for option in options:  # (trial 217: enum-encoding=foo was taken)
            if option not in ("enum-encoding=int", ""):
                raise InvalidArgument(
                    f"alt={show_value(value)[1:-1]}: {show_value(option)} is not an option of "
                    "alt=json, which takes enum-encoding=int (enums as numbers; as names "
                    "without it).",
                    field="alt",
                )
    for name in request.args:
        field = camel_case(name)
        if field in taken:  # once, in either spelling (a second value was dropped: trial 59)
            given_once(
                field, [v for n, v in request.args.items(multi=True) if camel_case(n) == field]
            )
        elif name.removeprefix("$") not in _SYSTEM_PARAMETERS:
            shown = show_value(name)
            message = (
                f"Invalid JSON payload received. Unknown name {shown}: Cannot bind query "
                f"parameter. Field '{shown[1:-1]}' could not be found in request message."
            )
            near = difflib.get_close_matches(field, taken, n=1)  # (trial 223: pagesize)
            takes = f"; did you mean {near[0]!r}?" if near else ""
            takes = takes or (f"; it takes {', '.join(taken)}." if taken else "; it takes none.")
            said = f"{shown} is not a query parameter of this method{takes}"
            raise InvalidArgument(message, field=name, description=said)


def given_once(name: str, values: list[str]) -> None:
    """Refuse a query parameter given more than once (one value would be dropped).

    :raises InvalidArgument: naming it and its first five values.
    """
    if len(values) > 1:
        shown = ", ".join(show_value(value) for value in values[:5])
        raise InvalidArgument(
            f"{name} is given {len(values)} times ({shown}); give it once.", field=name
        )


def wants_int_enums(request: Request) -> bool:
    """Tell whether the client asked for ``enum-encoding=int`` (``$alt=json;enum-encoding=int``,
    sent by the Python REST transport)."""
    return any(
        "enum-encoding=int" in value
        for key in ("$alt", "alt")
        for value in request.args.getlist(key)
    )


def _parent(project: str, location: str) -> str:
    return f"projects/{project}/locations/{location}"


def _arg(request: Request, camel: str, snake: str) -> str | None:
    value = request.args.get(camel)
    return request.args.get(snake) if value is None else value


def method_not_found(last: str, method: str = "", allowed: Iterable[str] = ()) -> str:
    """Google's 404 ``Method not found`` for a path whose last segment is ``last``
    (``nightly:trigger``), saying what does reach it: a job's custom methods take POST, and
    ``allowed`` are the methods the path takes (``method`` being the one asked for)."""
    verb = last.partition(":")[2]
    if verb in ("pause", "resume", "run"):
        return f"Method not found: ':{verb}' takes POST only."
    if verb:
        return f"Method not found: a job has no ':{verb}'; it has :pause, :resume and :run."
    if takes := " or ".join(sorted(set(allowed) - {"HEAD", "OPTIONS"})):  # (werkzeug adds them)
        return f"Method not found: this path takes {takes}, not {method}."
    return "Method not found: this path does not take that HTTP method."


class Api:
    """Handlers of the v1 routes for one :class:`Emulator` (the rules:
    :class:`~scheduler_emulator.api.v1.SchedulerApi`)."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self.api = SchedulerApi.of(emulator)
        self._rendered: RenderCache[dict[str, Any]] = RenderCache()
        self._texts: RenderCache[str] = RenderCache()

    def _job(self, request: Request, job: Job, enum_int: bool | None = None) -> dict[str, Any]:
        if enum_int is None:
            enum_int = wants_int_enums(request)
        return self._rendered.get(job, enum_int, lambda: job_to_json(job, enum_int=enum_int))

    def _job_text(self, request: Request, job: Job, enum_int: bool) -> str:
        def encode() -> str:
            return json.dumps(self._job(request, job, enum_int))

        return self._texts.get(job, enum_int, encode)

    def _name(self, project: str, location: str, job: str) -> str:
        if ":" in job:  # a custom verb (``:pause``…) with a method it does not take
            raise NotFound(method_not_found(job))
        return f"{_parent(project, location)}/jobs/{job}"

    # ---------------------------------------------------------------- jobs

    def list_jobs(self, request: Request, project: str, location: str) -> dict[str, Any] | Response:
        """ListJobs: creation order, stable across pages, pages of ``pageSize`` (≤ 500).

        Without a field mask the body is assembled from each job's JSON text, encoded once
        while the job is unchanged (a page of unchanged jobs is not encoded again)."""
        parent = _parent(project, location)
        size = page_size_value(_arg(request, "pageSize", "page_size") or "")
        page = self.api.list_jobs(parent, size, _arg(request, "pageToken", "page_token") or "")
        if rest_field_mask(request) is None:
            enum_int = wants_int_enums(request)
            members = []
            if page.jobs:
                texts = [self._job_text(request, job, enum_int) for job in page.jobs]
                members.append('"jobs": [' + ", ".join(texts) + "]")
            if page.next_page_token:
                members.append(f'"nextPageToken": {json.dumps(page.next_page_token)}')
            return Response(
                "{" + ", ".join(members) + "}", content_type="application/json; charset=UTF-8"
            )
        body: dict[str, Any] = {}
        if page.jobs:
            enum_int = wants_int_enums(request)
            body["jobs"] = [self._job(request, job, enum_int) for job in page.jobs]
        if page.next_page_token:
            body["nextPageToken"] = page.next_page_token
        return body

    def create_job(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """CreateJob: normalised job, 409 on a duplicate, a generated ID when unnamed."""
        parent = _parent(project, location)
        return self._job(request, self.api.create_job(parent, request_json(request)))

    def get_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """GetJob; 404 ``Job not found.``"""
        return self._job(request, self.api.get_job(self._name(project, location, job)))

    def update_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """UpdateJob: ``updateMask`` governs; the URL names the job; no mask applies every
        field in the body; a headers map with ``null`` values edits the stored one."""
        name = self._name(project, location, job)
        mask = _arg(request, "updateMask", "update_mask")
        return self._job(request, self.api.update_job(name, request_json(request), mask))

    def delete_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """DeleteJob: ``{}``; 404 when missing."""
        self.api.delete_job(self._name(project, location, job))
        return {}

    def pause_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """PauseJob; 400 FAILED_PRECONDITION unless the job is ENABLED."""
        request_json(request, allow_fields=frozenset({"name"}))
        return self._job(request, self.api.pause_job(self._name(project, location, job)))

    def resume_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """ResumeJob; 400 FAILED_PRECONDITION unless the job is PAUSED."""
        request_json(request, allow_fields=frozenset({"name"}))
        return self._job(request, self.api.resume_job(self._name(project, location, job)))

    def run_job(self, request: Request, project: str, location: str, job: str) -> dict[str, Any]:
        """RunJob: dispatches now, even while paused or running."""
        request_json(request, allow_fields=frozenset({"name"}))
        return self._job(request, self.api.run_job(self._name(project, location, job)))

    # ---------------------------------------------------------------- locations

    def list_locations(self, request: Request, project: str) -> dict[str, Any]:
        """ListLocations: the configured locations, then Google's regions; ``filter``,
        ``pageSize``, ``pageToken``."""
        locations, token = self.api.list_locations(
            f"projects/{project}",
            page_size_value(_arg(request, "pageSize", "page_size") or ""),
            _arg(request, "pageToken", "page_token") or "",
            request.args.get("filter", ""),
        )
        return {"locations": [loc.to_json() for loc in locations], "nextPageToken": token}

    def get_location(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """GetLocation; 404 for a location ListLocations does not show."""
        return self.api.get_location(_parent(project, location)).to_json()

    # ---------------------------------------------------------------- CMEK, operations

    def get_cmek_config(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """GetCmekConfig: the location's ``CmekConfig``."""
        return self.api.get_cmek_config(_parent(project, location) + "/cmekConfig")

    def update_cmek_config(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """UpdateCmekConfig: a done long-running ``Operation``."""
        name = _parent(project, location) + "/cmekConfig"
        mask = _arg(request, "updateMask", "update_mask")
        return self.api.update_cmek_config(name, request_json(request), mask)

    def list_operations(self, request: Request, project: str, location: str) -> dict[str, Any]:
        """ListOperations of a location (the CMEK updates)."""
        size = page_size_value(_arg(request, "pageSize", "page_size") or "")
        token = _arg(request, "pageToken", "page_token") or ""
        operations, next_token = self.api.list_operations(_parent(project, location), size, token)
        body: dict[str, Any] = {"operations": operations} if operations else {}
        if next_token:
            body["nextPageToken"] = next_token
        return body

    def get_operation(
        self, request: Request, project: str, location: str, operation: str
    ) -> dict[str, Any]:
        """GetOperation; 404 for an operation this emulator did not create."""
        return self.api.get_operation(f"{_parent(project, location)}/operations/{operation}")

    def cancel_operation(
        self, request: Request, project: str, location: str, operation: str
    ) -> dict[str, Any]:
        """CancelOperation: 501 UNIMPLEMENTED, as Google's Operations API answers."""
        self.api.cancel_operation(f"projects/{project}/locations/{location}/operations/{operation}")
        return {}

    def delete_operation(
        self, request: Request, project: str, location: str, operation: str
    ) -> dict[str, Any]:
        """DeleteOperation: 501 UNIMPLEMENTED, as Google's Operations API answers."""
        self.api.delete_operation(f"projects/{project}/locations/{location}/operations/{operation}")
        return {}
