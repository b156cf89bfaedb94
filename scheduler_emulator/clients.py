"""Google's Cloud Scheduler client, configured for the emulator.

``scheduler_emulator.client()`` returns a ``google.cloud.scheduler_v1`` client pointed at the
daemon named by ``CLOUD_SCHEDULER_EMULATOR_HOST`` (``host:port``, what ``scheduler-emulator
env-init`` exports), with anonymous credentials and a plaintext connection: the one line of
set-up the client libraries need, since they have no emulator variable of their own::

    from scheduler_emulator import client
    scheduler = client()                      # gRPC, the client's default transport
    scheduler = client(transport="rest")      # JSON over HTTP/1.1
    scheduler = client(async_=True)           # CloudSchedulerAsyncClient (gRPC; call it
                                              # inside the event loop that will use it)

Needs ``google-cloud-scheduler`` (and ``grpcio`` for gRPC: the ``[grpc]`` extra). Imports
nothing of the emulator.
"""

from __future__ import annotations

import os
from typing import Any

from .wire import check_host_port

#: The variable naming the daemon (``host:port``), exported by ``scheduler-emulator env-init``.
EMULATOR_HOST_VARIABLE = "CLOUD_SCHEDULER_EMULATOR_HOST"
TRANSPORTS = ("grpc", "rest")


def emulator_host(host: str | None = None) -> str:
    """The daemon's ``host:port``: ``host`` if given, else ``$CLOUD_SCHEDULER_EMULATOR_HOST``.

    :raises ValueError: when neither is set, or the value is not HOST:PORT (a URL, no port).
    """
    value = host if host is not None else os.environ.get(EMULATOR_HOST_VARIABLE, "")
    value = value.strip()
    if not value:
        raise ValueError(
            f"{EMULATOR_HOST_VARIABLE} is not set: run "
            '\'eval "$(scheduler-emulator env-init)"\' or pass host="127.0.0.1:PORT".'
        )
    field = "host" if host is not None else f"${EMULATOR_HOST_VARIABLE}"
    return check_host_port(value, field, "127.0.0.1:8095")


def client(transport: str = "grpc", async_: bool = False, *, host: str | None = None) -> Any:
    """Return a Cloud Scheduler client talking to the emulator.

    :param transport: ``"grpc"`` (the client libraries' default) or ``"rest"``.
    :param async_: a ``CloudSchedulerAsyncClient`` (gRPC only, as Google's async client).
    :param host: ``host:port``; default ``$CLOUD_SCHEDULER_EMULATOR_HOST``.
    :return: ``scheduler_v1.CloudSchedulerClient`` or ``CloudSchedulerAsyncClient``.
    :raises ValueError: for an unknown transport, ``async_`` with ``rest``, or no host.
    :raises ImportError: without Google's client library (the ``[grpc]`` extra), saying so.
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"transport {transport!r} is not one of {', '.join(TRANSPORTS)}.")
    if async_ and transport != "grpc":
        raise ValueError("the async client has only the gRPC transport; use transport='grpc'.")
    address = emulator_host(host)
    try:
        from google.api_core.client_options import ClientOptions
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import scheduler_v1
    except ImportError as exc:
        raise ImportError(
            f"scheduler_emulator.client() needs Google's client library ({exc}): pip install "
            "'cloud-scheduler-emulator[grpc]' (in a clone: pip install -e '.[grpc]')."
        ) from exc

    if transport == "rest":
        return scheduler_v1.CloudSchedulerClient(
            credentials=AnonymousCredentials(),
            transport="rest",
            client_options=ClientOptions(api_endpoint=f"http://{address}"),
        )
    import grpc
    from google.cloud.scheduler_v1.services.cloud_scheduler import transports

    if async_:
        return scheduler_v1.CloudSchedulerAsyncClient(
            transport=transports.CloudSchedulerGrpcAsyncIOTransport(
                channel=grpc.aio.insecure_channel(address)
            )
        )
    return scheduler_v1.CloudSchedulerClient(
        transport=transports.CloudSchedulerGrpcTransport(channel=grpc.insecure_channel(address))
    )
