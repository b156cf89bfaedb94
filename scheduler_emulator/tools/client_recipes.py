"""What each Cloud Scheduler client needs to talk to the daemon, as ``env-init`` prints it.

The lines are shell comments, so ``eval "$(scheduler-emulator env-init)"`` ignores them and
running ``env-init`` alone shows them. The client libraries have no emulator variable; each
needs its endpoint, no credentials, and plaintext (docs/api.md, "gRPC" has the full recipes).
"""

from __future__ import annotations

from typing import Any

from ..wire import host_port


def client_notes(host: str, port: int, *, grpc: bool | None = True) -> list[str]:
    """Comment lines giving each client's set-up for the daemon at ``host:port``.

    :param host: the daemon's address (IPv6 without brackets).
    :param port: its port (REST and gRPC share it).
    :param grpc: whether that daemon serves gRPC (its ``/_emulator/config`` says); ``None``:
        unknown (no daemon answered).
    :return: lines starting with ``#``: each client's gRPC set-up, or for a daemon without
        gRPC each one's REST transport (Java's has no plaintext REST recipe here).
    """
    address = host_port(host, port)
    if grpc is None:
        served = f"# REST and gRPC (with the [grpc] extra) on {address}."
    elif grpc:
        served = f"# REST and gRPC both on {address}."
    else:
        served = (
            f"# REST only on {address}: that daemon has no gRPC (pip install "
            "'cloud-scheduler-emulator[grpc]' where it runs); use each client's REST transport."
        )
    if grpc is False:  # each client's REST transport (docs/api.md)
        clients = [
            '#  Python: from scheduler_emulator import client; client(transport="rest")',
            f"#  Node:   new CloudSchedulerClient({{fallback: true, protocol: 'http', "
            f"apiEndpoint: '{host}', port: {port}, authClient: new PassThroughClient()}})",
            f'#  Go:     scheduler.NewCloudSchedulerRESTClient(ctx, option.WithEndpoint("http://'
            f'{address}"), option.WithoutAuthentication())',
        ]
    else:
        clients = [
            "#  Python: from scheduler_emulator import client; client()   "
            '# gRPC; client(transport="rest"), client(async_=True)',
            f"#  Node:   new CloudSchedulerClient({{apiEndpoint: '{host}', port: {port}, "
            "sslCreds: grpc.credentials.createInsecure()})",
            f'#  Go:     conn := grpc.NewClient("{address}", grpc.WithTransportCredentials('
            "insecure.NewCredentials())); option.WithGRPCConn(conn), "
            "option.WithoutAuthentication()",
            f'#  Java:   ManagedChannelBuilder.forTarget("{address}").usePlaintext() in a '
            "FixedTransportChannelProvider, NoCredentialsProvider",
        ]
    return [f"{served} gcloud needs the exports above; clients:", *clients]


def sender_note(transport: Any, jobs: int, many: int = 100) -> str:
    """The startup line's note on the HTTP sender when ``jobs`` (at least ``many``) may fall
    due at once and ``transport`` sends with ``http.client``, not libcurl (trial 202: 600
    deliveries a second, and nothing said how to go faster); ``""`` otherwise."""
    if jobs < many or getattr(transport, "uses_curl", True):
        return ""
    return (
        f", HTTP attempts by http.client (for {jobs} jobs, libcurl sends faster: pip install "
        "'cloud-scheduler-emulator[curl]')"
    )


def grpc_note(router: Any) -> str:
    """The startup line's note on gRPC: served on the same port, or how to get it.

    :param router: the server's connection router (``None``: HTTP only).
    """
    if router is not None and router.serves_grpc:
        return ", gRPC on the same port"
    return ", no gRPC: pip install 'cloud-scheduler-emulator[grpc]' (in a clone: -e '.[grpc]')"
