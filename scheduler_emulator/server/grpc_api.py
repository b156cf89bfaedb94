"""The Cloud Scheduler v1 API over gRPC: ``google.cloud.scheduler.v1.CloudScheduler`` (the
eight job methods) and ``google.cloud.location.Locations`` (ListLocations, GetLocation).

A thin adapter like the REST handlers: each method converts its request message to the plain
arguments of :class:`~scheduler_emulator.api.v1.SchedulerApi` (a Job message goes through its
proto3 JSON form, so both surfaces parse jobs with the same codec) and the result back to a
message. An :class:`~scheduler_emulator.domain.errors.ApiError` becomes the call's status with
the same code and message as over REST, and a serialised ``google.rpc.Status`` with the
``BadRequest`` field violations in the ``grpc-status-details-bin`` trailer, which the Python
client exposes as ``exc.details`` and the Node client as ``err.statusDetails``.

Needs the ``[grpc]`` extra (grpcio and the message types of google-cloud-scheduler);
:func:`grpc_available` tells whether it is installed. :class:`GrpcBackend` runs the servicer on
a private Unix socket; :mod:`~scheduler_emulator.server.connections` routes the daemon port's
HTTP/2 connections to it.
"""

from __future__ import annotations

import base64
import functools
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..api.render_cache import RenderCache
from ..api.v1 import SchedulerApi
from ..domain.codec import job_to_json
from ..domain.errors import RPC_CODES, ApiError
from ..domain.resources import Job
from ..runtime._emulator import Emulator

logger = logging.getLogger("scheduler_emulator")

#: The full name of the Cloud Scheduler service.
SCHEDULER_SERVICE = "google.cloud.scheduler.v1.CloudScheduler"
#: The full name of the Locations mixin.
LOCATIONS_SERVICE = "google.cloud.location.Locations"
#: What to install for gRPC.
GRPC_EXTRA = "pip install 'cloud-scheduler-emulator[grpc]'"
#: Threads answering gRPC calls at once.
GRPC_WORKERS = 8


def grpc_available() -> bool:
    """Tell whether grpcio and the Cloud Scheduler message types can be imported."""
    try:
        import grpc  # noqa: F401
        from google.cloud.scheduler_v1.types import cloudscheduler  # noqa: F401
    except ImportError:
        return False
    return True


class _Messages:
    """The protobuf message classes (imported on first use: the extra is optional)."""

    def __init__(self) -> None:
        from google.cloud.location import locations_pb2
        from google.cloud.scheduler_v1.types import cloudscheduler, job
        from google.protobuf import empty_pb2, json_format
        from google.rpc import error_details_pb2, status_pb2

        self.json_format = json_format
        self.Job = job.Job.pb()
        self.ListJobsRequest = cloudscheduler.ListJobsRequest.pb()
        self.ListJobsResponse = cloudscheduler.ListJobsResponse.pb()
        self.GetJobRequest = cloudscheduler.GetJobRequest.pb()
        self.CreateJobRequest = cloudscheduler.CreateJobRequest.pb()
        self.UpdateJobRequest = cloudscheduler.UpdateJobRequest.pb()
        self.DeleteJobRequest = cloudscheduler.DeleteJobRequest.pb()
        self.PauseJobRequest = cloudscheduler.PauseJobRequest.pb()
        self.ResumeJobRequest = cloudscheduler.ResumeJobRequest.pb()
        self.RunJobRequest = cloudscheduler.RunJobRequest.pb()
        self.Empty = empty_pb2.Empty
        self.locations = locations_pb2
        self.Status = status_pb2.Status
        self.BadRequest = error_details_pb2.BadRequest


class SchedulerServicer:
    """The gRPC methods of both services for one emulator, as grpcio generic handlers.

    :param emulator: the emulator to serve (its :meth:`SchedulerApi.of` API is shared with REST).
    """

    def __init__(self, emulator: Emulator) -> None:
        import grpc

        self._grpc = grpc
        self.api = SchedulerApi.of(emulator)
        self.m = _Messages()
        self._rendered: RenderCache[Any] = RenderCache()

    # ---------------------------------------------------------------- conversions

    def job_message(self, job: Job) -> Any:
        """The ``google.cloud.scheduler.v1.Job`` message of ``job`` (kept while the job is
        unchanged; not to be mutated)."""
        return self._rendered.get(job, None, lambda: fill_message(self.m.Job(), job_to_json(job)))

    def job_json(self, message: Any) -> dict[str, Any]:
        """The proto3 JSON of a Job message (enum names, camelCase, defaults left out)."""
        result: dict[str, Any] = self.m.json_format.MessageToDict(message)
        return result

    # ---------------------------------------------------------------- errors

    def _abort(self, context: Any, error: ApiError) -> None:
        status = self.m.Status(code=error.code, message=error.message)
        if error.violations:
            bad_request = self.m.BadRequest(
                field_violations=[
                    self.m.BadRequest.FieldViolation(field=v.field, description=v.description)
                    for v in error.violations
                ]
            )
            status.details.add().Pack(bad_request)
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(_status_code(self._grpc, error.status), error.message)

    def _wrap(self, method: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
        def handle(request: Any, context: Any) -> Any:
            try:
                return method(request)
            except ApiError as exc:
                error: ApiError | None = exc
            except Exception:  # a bug of ours: a clear INTERNAL, never a hang
                logger.exception("internal error serving gRPC %s", method.__name__)
                error = None
            if error is None:
                context.abort(self._grpc.StatusCode.INTERNAL, "Internal error.")
            else:
                self._abort(context, error)
            return None  # pragma: no cover - abort raises

        handle.__name__ = method.__name__
        return handle

    # ---------------------------------------------------------------- CloudScheduler

    def ListJobs(self, request: Any) -> Any:
        page = self.api.list_jobs(request.parent, request.page_size, request.page_token)
        return self.m.ListJobsResponse(
            jobs=[self.job_message(job) for job in page.jobs],
            next_page_token=page.next_page_token,
        )

    def GetJob(self, request: Any) -> Any:
        return self.job_message(self.api.get_job(request.name))

    def CreateJob(self, request: Any) -> Any:
        return self.job_message(self.api.create_job(request.parent, self.job_json(request.job)))

    def UpdateJob(self, request: Any) -> Any:
        paths = list(request.update_mask.paths) or None
        job = self.api.update_job(request.job.name, self.job_json(request.job), paths)
        return self.job_message(job)

    def DeleteJob(self, request: Any) -> Any:
        self.api.delete_job(request.name)
        return self.m.Empty()

    def PauseJob(self, request: Any) -> Any:
        return self.job_message(self.api.pause_job(request.name))

    def ResumeJob(self, request: Any) -> Any:
        return self.job_message(self.api.resume_job(request.name))

    def RunJob(self, request: Any) -> Any:
        return self.job_message(self.api.run_job(request.name))

    # ---------------------------------------------------------------- Locations

    def _location(self, location: Any) -> Any:
        message = self.m.locations.Location(name=location.name, location_id=location.location_id)
        message.labels.update({k: str(v) for k, v in location.to_json()["labels"].items()})
        return message

    def ListLocations(self, request: Any) -> Any:
        locations = self.api.list_locations(request.name)
        return self.m.locations.ListLocationsResponse(
            locations=[self._location(loc) for loc in locations]
        )

    def GetLocation(self, request: Any) -> Any:
        return self._location(self.api.get_location(request.name))

    # ---------------------------------------------------------------- handlers

    def handlers(self) -> list[Any]:
        """The grpcio generic handlers of both services."""
        grpc, m = self._grpc, self.m

        def unary(method: Callable[[Any], Any], request_type: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap(method),
                request_deserializer=request_type.FromString,
                response_serializer=lambda message: message.SerializeToString(),
            )

        scheduler = {
            "ListJobs": unary(self.ListJobs, m.ListJobsRequest),
            "GetJob": unary(self.GetJob, m.GetJobRequest),
            "CreateJob": unary(self.CreateJob, m.CreateJobRequest),
            "UpdateJob": unary(self.UpdateJob, m.UpdateJobRequest),
            "DeleteJob": unary(self.DeleteJob, m.DeleteJobRequest),
            "PauseJob": unary(self.PauseJob, m.PauseJobRequest),
            "ResumeJob": unary(self.ResumeJob, m.ResumeJobRequest),
            "RunJob": unary(self.RunJob, m.RunJobRequest),
        }
        locations = {
            "ListLocations": unary(self.ListLocations, m.locations.ListLocationsRequest),
            "GetLocation": unary(self.GetLocation, m.locations.GetLocationRequest),
        }
        return [
            grpc.method_handlers_generic_handler(SCHEDULER_SERVICE, scheduler),
            grpc.method_handlers_generic_handler(LOCATIONS_SERVICE, locations),
        ]


_WELL_KNOWN_JSON = frozenset({"google.protobuf.Timestamp", "google.protobuf.Duration"})


@functools.lru_cache(maxsize=64)
def _json_fields(descriptor: Any) -> dict[str, tuple[str, str, Any]]:
    """JSON name → (field name, kind, enum descriptor) for a message type; kinds: ``map``,
    ``json`` (Timestamp/Duration), ``message``, ``enum``, ``bytes``, ``scalar``."""
    fields: dict[str, tuple[str, str, Any]] = {}
    for field in descriptor.fields:
        kind, extra = "scalar", None
        if field.message_type is not None:
            if field.message_type.GetOptions().map_entry:
                kind = "map"
            elif field.message_type.full_name in _WELL_KNOWN_JSON:
                kind = "json"
            else:
                kind = "message"
        elif field.enum_type is not None:
            kind, extra = "enum", field.enum_type
        elif field.type == field.TYPE_BYTES:
            kind = "bytes"
        fields[field.json_name] = (field.name, kind, extra)
    return fields


def fill_message(message: Any, data: dict[str, Any]) -> Any:
    """Set ``message``'s fields from the proto3 JSON ``data`` the codec renders (a few times
    faster than ``json_format.ParseDict``); unknown keys are skipped. Returns ``message``."""
    fields = _json_fields(message.DESCRIPTOR)
    for key, value in data.items():
        spec = fields.get(key)
        if spec is None:
            continue
        name, kind, extra = spec
        if kind == "scalar":
            setattr(message, name, value)
        elif kind == "message":
            child = getattr(message, name)
            child.SetInParent()
            fill_message(child, value)
        elif kind == "json":
            getattr(message, name).FromJsonString(value)
        elif kind == "map":
            getattr(message, name).update(value)
        elif kind == "enum":
            number = value if isinstance(value, int) else extra.values_by_name[value].number
            setattr(message, name, number)
        else:
            setattr(message, name, base64.b64decode(value))
    return message


def _status_code(grpc: Any, status: str) -> Any:
    number = RPC_CODES[status]
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN  # pragma: no cover - every google.rpc code has one


class GrpcBackend:
    """A grpcio server for the servicer on a private Unix socket (a fresh 0700 directory),
    started at once; the daemon's port forwards its HTTP/2 connections here.

    :param emulator: the emulator to serve.
    :param workers: threads answering calls at once.
    :param idle_timeout: seconds a connection may stay without a call; then the server sends
        GOAWAY and closes it (grpcio's ``grpc.max_connection_idle_ms``).
    :raises ImportError: without the ``[grpc]`` extra.
    """

    def __init__(
        self, emulator: Emulator, *, workers: int = GRPC_WORKERS, idle_timeout: float = 300.0
    ) -> None:
        import grpc

        self._dir = tempfile.mkdtemp(prefix="scheduler-emulator-grpc-")
        os.chmod(self._dir, 0o700)
        #: The Unix socket path the gRPC server listens on.
        self.path = os.path.join(self._dir, "grpc.sock")
        self.server = grpc.server(
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grpc"),
            handlers=SchedulerServicer(emulator).handlers(),
            options=[("grpc.max_connection_idle_ms", max(1, round(idle_timeout * 1000)))],
        )
        self.server.add_insecure_port(f"unix:{self.path}")
        self.server.start()

    def close(self, grace: float = 1.0) -> None:
        """Stop the server (calls in progress get ``grace`` seconds) and remove the socket."""
        self.server.stop(grace).wait(grace + 1.0)
        shutil.rmtree(self._dir, ignore_errors=True)
