"""The Cloud Scheduler v1 API over gRPC: ``google.cloud.scheduler.v1.CloudScheduler`` (the
eight job methods), ``google.cloud.location.Locations`` (ListLocations, GetLocation) and
``google.longrunning.Operations`` (CancelOperation and DeleteOperation, UNIMPLEMENTED as over
REST). The ``x-goog-fieldmask`` metadata filters any answer, as ``fields`` does over REST.

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
from types import SimpleNamespace
from typing import Any

from ..api.render_cache import RenderCache
from ..api.v1 import SchedulerApi
from ..domain.codec import MAX_DURATION_SECONDS as _MAX_DURATION_SECONDS
from ..domain.codec import job_to_json
from ..domain.errors import RPC_CODES, ApiError, InvalidArgument
from ..domain.resources import Job
from ..runtime._emulator import Emulator
from .grpc_services import SCHEDULER_METHODS, add_standard_services
from .partial_response import grpc_field_mask, select_message_fields

logger = logging.getLogger("scheduler_emulator")

#: The full name of the Cloud Scheduler service.
SCHEDULER_SERVICE = "google.cloud.scheduler.v1.CloudScheduler"
#: The full name of the Locations mixin.
LOCATIONS_SERVICE = "google.cloud.location.Locations"
#: The full name of the long-running operations mixin.
OPERATIONS_SERVICE = "google.longrunning.Operations"
#: Threads answering gRPC calls at once.
GRPC_WORKERS = 8


def grpc_available() -> bool:
    """Tell whether grpcio and the Cloud Scheduler message types are installed, without
    importing them: ``google.cloud.scheduler_v1`` imports its whole client, about 0.2 s of CPU
    that a daemon pays only when its first gRPC connection starts the server."""
    from importlib.util import find_spec

    try:
        return all(find_spec(name) for name in ("grpc", "google.cloud.scheduler_v1"))
    except ImportError:  # no google.cloud package at all
        return False


class _Messages:
    """The protobuf message classes (imported on first use: the extra is optional)."""

    def __init__(self) -> None:
        from google.cloud.location import locations_pb2
        from google.cloud.scheduler_v1.types import cloudscheduler, job
        from google.longrunning import operations_pb2
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
        self.operations = operations_pb2
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
        """The proto3 JSON of a Job message (enum names, camelCase, defaults left out).

        A Duration protobuf refuses to write as JSON is written as text the codec refuses
        naming the field: seconds outside the proto's range as ``"1000000000000s"`` (as over
        REST), nanos beyond 9 digits or of the other sign than seconds as ``"seconds 20,
        nanos -1"`` (what was sent; REST cannot carry such a value)."""
        copy = type(message)()
        copy.CopyFrom(message)
        out_of_range = _take_bad_durations(copy)
        result: dict[str, Any] = self.m.json_format.MessageToDict(copy)
        for path, text in out_of_range:
            node = result
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = text
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
                if isinstance(request, _Undecodable):
                    raise InvalidArgument(
                        f"Invalid request: the {request.type_name} message could not be parsed "
                        f"({request.reason})."
                    )
                mask = grpc_field_mask(context.invocation_metadata())
                return select_message_fields(method(request), mask)
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
        job = self.api.update_job(
            request.job.name, self.job_json(request.job), paths, proto_paths=True
        )
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
        locations, token = self.api.list_locations(
            request.name, request.page_size, request.page_token, request.filter
        )
        return self.m.locations.ListLocationsResponse(
            locations=[self._location(loc) for loc in locations], next_page_token=token
        )

    def GetLocation(self, request: Any) -> Any:
        return self._location(self.api.get_location(request.name))

    # ---------------------------------------------------------------- CMEK, Operations

    def _operation(self, data: dict[str, Any]) -> Any:
        parse, c = self.m.json_format.ParseDict, cmek_messages()
        operation = self.m.operations.Operation(name=data["name"], done=data["done"])
        for field, message in (("metadata", c.OperationMetadata), ("response", c.CmekConfig)):
            fields = {k: v for k, v in data[field].items() if k != "@type"}
            getattr(operation, field).Pack(parse(fields, message()))
        return operation

    def GetCmekConfig(self, request: Any) -> Any:
        config = self.api.get_cmek_config(request.name)
        return self.m.json_format.ParseDict(config, cmek_messages().CmekConfig())

    def UpdateCmekConfig(self, request: Any) -> Any:
        config = self.m.json_format.MessageToDict(request.cmek_config)
        paths = list(request.update_mask.paths) or None
        name = request.cmek_config.name
        return self._operation(self.api.update_cmek_config(name, config, paths, proto_paths=True))

    def GetOperation(self, request: Any) -> Any:
        return self._operation(self.api.get_operation(request.name))

    def ListOperations(self, request: Any) -> Any:
        operations, token = self.api.list_operations(
            request.name, request.page_size, request.page_token
        )
        return self.m.operations.ListOperationsResponse(
            operations=[self._operation(op) for op in operations], next_page_token=token
        )

    def CancelOperation(self, request: Any) -> Any:
        self.api.cancel_operation(request.name)
        return self.m.Empty()

    def DeleteOperation(self, request: Any) -> Any:
        self.api.delete_operation(request.name)
        return self.m.Empty()

    # ---------------------------------------------------------------- handlers

    def handlers(self) -> list[Any]:
        """The grpcio generic handlers of the three services."""
        grpc, m = self._grpc, self.m

        def unary(method: Callable[[Any], Any], request_type: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap(method),
                request_deserializer=functools.partial(_decode, request_type),
                response_serializer=lambda message: message.SerializeToString(),
            )

        c = cmek_messages()
        scheduler = {
            name: unary(getattr(self, name), getattr(m, request))
            for name, (request, _) in SCHEDULER_METHODS.items()
        }
        scheduler["GetCmekConfig"] = unary(self.GetCmekConfig, c.GetCmekConfigRequest)
        scheduler["UpdateCmekConfig"] = unary(self.UpdateCmekConfig, c.UpdateCmekConfigRequest)
        locations = {
            "ListLocations": unary(self.ListLocations, m.locations.ListLocationsRequest),
            "GetLocation": unary(self.GetLocation, m.locations.GetLocationRequest),
        }
        operations = {
            "GetOperation": unary(self.GetOperation, m.operations.GetOperationRequest),
            # every operation is done when returned: waiting for one is getting it (trial 121)
            "WaitOperation": unary(self.GetOperation, m.operations.WaitOperationRequest),
            "ListOperations": unary(self.ListOperations, m.operations.ListOperationsRequest),
            "CancelOperation": unary(self.CancelOperation, m.operations.CancelOperationRequest),
            "DeleteOperation": unary(self.DeleteOperation, m.operations.DeleteOperationRequest),
        }
        return [
            grpc.method_handlers_generic_handler(SCHEDULER_SERVICE, scheduler),
            grpc.method_handlers_generic_handler(LOCATIONS_SERVICE, locations),
            grpc.method_handlers_generic_handler(OPERATIONS_SERVICE, operations),
            _CloudRunOverRest(grpc),
        ]


class _CloudRunOverRest:
    """A grpcio generic handler answering the Cloud Run Admin API's methods UNIMPLEMENTED with
    how to reach it: the emulator serves it over REST only (trial 204: Google's run client over
    gRPC read a bare "Method not found!")."""

    def __init__(self, grpc: Any) -> None:
        self._grpc = grpc

    def service(self, details: Any) -> Any:
        """The handler of a ``/google.cloud.run.…`` method, else ``None`` (grpcio's own 501)."""
        if not details.method.startswith("/google.cloud.run."):
            return None

        def refuse(request: bytes, context: Any) -> None:
            context.abort(
                self._grpc.StatusCode.UNIMPLEMENTED,
                f"{details.method}: the emulator serves the Cloud Run Admin API over REST only: "
                'make Google\'s client with transport="rest" and client_options={"api_endpoint": '
                '"http://HOST:PORT"} (docs/cloud-run-jobs.md).',
            )

        return self._grpc.unary_unary_rpc_method_handler(refuse)


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


@functools.cache
def cmek_messages() -> SimpleNamespace:
    """The messages of the CMEK methods (``CmekConfig``, ``GetCmekConfigRequest``,
    ``UpdateCmekConfigRequest``, ``OperationMetadata``), in a descriptor pool of their own.

    Google's discovery document has ``projects.locations.getCmekConfig`` and
    ``updateCmekConfig``, but the published v1 proto has no CMEK messages: these follow the
    discovery document's fields, numbered in its order, and the ``OperationMetadata`` shape
    Google's other Cloud APIs use (create and end time, target, verb, status message,
    requested cancellation, API version).
    """
    from google.protobuf import (
        descriptor_pb2,
        descriptor_pool,
        field_mask_pb2,
        message_factory,
        timestamp_pb2,
    )

    pool = descriptor_pool.DescriptorPool()
    for module in (field_mask_pb2, timestamp_pb2):
        dependency = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(dependency)
        pool.Add(dependency)
    proto = descriptor_pb2.FileDescriptorProto(
        name="scheduler_emulator/cmek.proto",
        package="google.cloud.scheduler.v1",
        syntax="proto3",
        dependency=["google/protobuf/field_mask.proto", "google/protobuf/timestamp.proto"],
    )
    kinds = descriptor_pb2.FieldDescriptorProto
    shapes = {
        "CmekConfig": ["name", "kms_key_name"],
        "GetCmekConfigRequest": ["name"],
        "UpdateCmekConfigRequest": [
            "cmek_config:.google.cloud.scheduler.v1.CmekConfig",
            "update_mask:.google.protobuf.FieldMask",
        ],
        "OperationMetadata": [
            "create_time:.google.protobuf.Timestamp",
            "end_time:.google.protobuf.Timestamp",
            "target",
            "verb",
            "status_message",
            "requested_cancellation:bool",
            "api_version",
        ],
    }
    for name, fields in shapes.items():
        message = proto.message_type.add(name=name)
        for number, spec in enumerate(fields, 1):
            field_name, _, kind = spec.partition(":")
            field = message.field.add(name=field_name, number=number, label=kinds.LABEL_OPTIONAL)
            if kind.startswith("."):
                field.type, field.type_name = kinds.TYPE_MESSAGE, kind
            else:
                field.type = kinds.TYPE_BOOL if kind == "bool" else kinds.TYPE_STRING
    pool.Add(proto)
    return SimpleNamespace(
        **{
            name: message_factory.GetMessageClass(
                pool.FindMessageTypeByName(f"google.cloud.scheduler.v1.{name}")
            )
            for name in shapes
        }
    )


class _Undecodable:
    """A request whose bytes are not a message of its type (a wire type that does not match a
    field's), answered INVALID_ARGUMENT rather than grpcio's INTERNAL."""

    def __init__(self, type_name: str, reason: str) -> None:
        self.type_name, self.reason = type_name, reason


def _decode(request_type: Any, data: bytes) -> Any:
    try:
        return request_type.FromString(data)
    except Exception as exc:  # protobuf's DecodeError, whichever implementation
        return _Undecodable(request_type.DESCRIPTOR.full_name, str(exc) or type(exc).__name__)


def _take_bad_durations(
    message: Any, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], str]]:
    """Clear every Duration in ``message`` that protobuf cannot write as JSON (seconds beyond
    ±315,576,000,000, nanos beyond 9 digits, or seconds and nanos of opposite signs); return
    each one's JSON path and text (see :meth:`SchedulerServicer.job_json`)."""
    found: list[tuple[tuple[str, ...], str]] = []
    for field, value in message.ListFields():
        if field.message_type is None or field.is_repeated:
            continue
        where = (*path, field.json_name)
        if field.message_type.full_name == "google.protobuf.Duration":
            seconds, nanos = value.seconds, value.nanos
            if abs(nanos) > 999_999_999 or seconds * nanos < 0:
                found.append((where, f"seconds {seconds}, nanos {nanos}"))
                message.ClearField(field.name)
            elif abs(seconds) > _MAX_DURATION_SECONDS:
                found.append((where, f"{seconds}.{abs(nanos):09d}s" if nanos else f"{seconds}s"))
                message.ClearField(field.name)
        elif not field.message_type.GetOptions().map_entry:
            found.extend(_take_bad_durations(value, where))
    return found


def _status_code(grpc: Any, status: str) -> Any:
    number = RPC_CODES[status]
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN  # pragma: no cover - every google.rpc code has one


class GrpcBackend:
    """A grpcio server for the servicer, with server reflection and health checking
    (:mod:`~scheduler_emulator.server.grpc_services`), on a private Unix socket (a fresh 0700
    directory), started at once; the daemon's port forwards its HTTP/2 connections here.

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
        self._health = add_standard_services(
            self.server, (SCHEDULER_SERVICE, LOCATIONS_SERVICE, OPERATIONS_SERVICE)
        )
        self.server.add_insecure_port(f"unix:{self.path}")
        self.server.start()

    def draining(self) -> None:
        """Health checks answer NOT_SERVING from now on (the daemon is stopping)."""
        if self._health is not None:
            self._health.enter_graceful_shutdown()

    def close(self, grace: float = 1.0) -> None:
        """Stop the server (calls in progress get ``grace`` seconds; health checks answer
        NOT_SERVING meanwhile) and remove the socket."""
        self.draining()
        self.server.stop(grace).wait(grace + 1.0)
        shutil.rmtree(self._dir, ignore_errors=True)
