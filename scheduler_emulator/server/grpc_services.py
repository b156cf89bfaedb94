"""The standard gRPC services beside the API, so that tools find their way without a ``.proto``:
server reflection (``grpc.reflection.v1.ServerReflection`` and its ``v1alpha`` twin, what
``grpcurl``, Postman and Insomnia ask) and health checking (``grpc.health.v1.Health``, what
``grpc_health_probe`` and container health checks call); from grpcio-reflection and
grpcio-health-checking (the ``[grpc]`` extra), added to the daemon's grpcio server::

    $ grpcurl -plaintext 127.0.0.1:8095 list
    google.cloud.location.Locations
    google.cloud.scheduler.v1.CloudScheduler
    …

Reflection answers from a private descriptor pool: google-cloud-scheduler ships the message
types of ``google.cloud.scheduler.v1`` but not the descriptor of the ``CloudScheduler`` service,
which :func:`reflection_pool` writes from :data:`SCHEDULER_METHODS`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger("scheduler_emulator")

#: CloudScheduler's methods as google/cloud/scheduler/v1/cloudscheduler.proto declares them:
#: name → (request, response) message names, in :data:`SCHEDULER_PACKAGE` unless dotted.
SCHEDULER_METHODS: dict[str, tuple[str, str]] = {
    "ListJobs": ("ListJobsRequest", "ListJobsResponse"),
    "GetJob": ("GetJobRequest", "Job"),
    "CreateJob": ("CreateJobRequest", "Job"),
    "UpdateJob": ("UpdateJobRequest", "Job"),
    "DeleteJob": ("DeleteJobRequest", "google.protobuf.Empty"),
    "PauseJob": ("PauseJobRequest", "Job"),
    "ResumeJob": ("ResumeJobRequest", "Job"),
    "RunJob": ("RunJobRequest", "Job"),
}
SCHEDULER_PACKAGE = "google.cloud.scheduler.v1"
#: The reflection services, newest first (grpcurl asks v1 and falls back to v1alpha).
REFLECTION_SERVICES = (
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
)
#: The health service.
HEALTH_SERVICE = "grpc.health.v1.Health"


def reflection_pool(services: Sequence[str]) -> Any:
    """A descriptor pool holding ``services`` (full names) with every file they need.

    ``google.cloud.scheduler.v1.CloudScheduler`` is written from :data:`SCHEDULER_METHODS`
    into ``google/cloud/scheduler/v1/cloudscheduler_service.proto``, and
    ``grpc.reflection.v1.ServerReflection`` is the ``v1alpha`` file under the ``v1`` package
    (the two are the same on the wire); the others are copied from the default pool, and so
    is ``google/rpc/error_details.proto``, whose ``BadRequest`` an error's details hold.

    :raises KeyError: for a service the default pool does not know.
    """
    from google.cloud.scheduler_v1.types import cloudscheduler  # noqa: F401 - its messages
    from google.protobuf import descriptor_pb2, descriptor_pool, empty_pb2  # noqa: F401
    from google.rpc import error_details_pb2

    default, pool = descriptor_pool.Default(), descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file: Any) -> None:
        if file.name not in added:
            added.add(file.name)
            for dependency in file.dependencies:
                add(dependency)
            proto = descriptor_pb2.FileDescriptorProto()
            file.CopyToProto(proto)
            pool.Add(proto)

    def service_file(name: str, package: str, dependencies: list[Any]) -> Any:
        for dependency in dependencies:
            add(dependency)
        return descriptor_pb2.FileDescriptorProto(
            name=name, package=package, syntax="proto3", dependency=[d.name for d in dependencies]
        )

    for service in services:
        if service == "google.cloud.scheduler.v1.CloudScheduler":
            types = {
                method: tuple(n if "." in n else f"{SCHEDULER_PACKAGE}.{n}" for n in pair)
                for method, pair in SCHEDULER_METHODS.items()
            }
            files = {
                file.name: file
                for pair in types.values()
                for file in map(default.FindFileContainingSymbol, pair)
            }
            proto = service_file(
                "google/cloud/scheduler/v1/cloudscheduler_service.proto",
                SCHEDULER_PACKAGE,
                list(files.values()),
            )
            rpcs = proto.service.add(name="CloudScheduler")
            for method, (request, response) in types.items():
                rpcs.method.add(name=method, input_type=f".{request}", output_type=f".{response}")
            pool.Add(proto)
        elif service == REFLECTION_SERVICES[0]:
            alpha = default.FindServiceByName(REFLECTION_SERVICES[1]).file
            proto = descriptor_pb2.FileDescriptorProto()
            alpha.CopyToProto(proto)
            proto.name, proto.package = "grpc/reflection/v1/reflection.proto", "grpc.reflection.v1"
            for message in proto.message_type:
                for field in message.field:
                    if field.HasField("type_name"):
                        field.type_name = field.type_name.replace(".v1alpha.", ".v1.")
            for method in proto.service[0].method:
                method.input_type = method.input_type.replace(".v1alpha.", ".v1.")
                method.output_type = method.output_type.replace(".v1alpha.", ".v1.")
            for dependency in alpha.dependencies:
                add(dependency)
            pool.Add(proto)
        else:
            add(default.FindServiceByName(service).file)
    add(error_details_pb2.DESCRIPTOR)  # an error's details, for grpcurl to read (trial 217)
    return pool


def add_standard_services(server: Any, services: Sequence[str]) -> Any:
    """Serve reflection (v1 and v1alpha, listing ``services`` and themselves) and health
    (SERVING overall and for each of ``services``) on the grpcio ``server`` before it starts.

    :param services: the full names of the API's services.
    :return: the health servicer (``enter_graceful_shutdown()`` when stopping), or ``None``
        when grpcio-reflection or grpcio-health-checking is missing (logged once; the API is
        served all the same).
    """
    import grpc

    try:
        from grpc_health.v1 import health, health_pb2, health_pb2_grpc
        from grpc_reflection.v1alpha import reflection, reflection_pb2
    except ImportError as exc:
        logger.warning(
            "gRPC server reflection and health checking are off: %s "
            "(pip install 'cloud-scheduler-emulator[grpc]' installs them)",
            exc,
        )
        return None
    listed = [*services, HEALTH_SERVICE, *REFLECTION_SERVICES]
    servicer = reflection.ReflectionServicer(listed, pool=reflection_pool(listed))
    info = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(name, {"ServerReflectionInfo": info})
            for name in REFLECTION_SERVICES
        ]
    )
    checks = health.HealthServicer()
    for name in ("", *services):  # "": the server as a whole
        checks.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checks, server)
    return checks
