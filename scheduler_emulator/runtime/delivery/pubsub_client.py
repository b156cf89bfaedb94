"""Publishing to the Pub/Sub emulator ``gcloud beta emulators pubsub start`` runs, at the
address ``PUBSUB_EMULATOR_HOST`` holds, through google-cloud-pubsub (the ``[pubsub]`` extra):
plain gRPC with no credentials, as Google's client libraries do when that variable is set::

    publisher = EmulatorPublisher("127.0.0.1:8085")
    publisher.publish("projects/my-project/topics/orders", b"{}", {"kind": "sweep"}, 60.0)
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from .pubsub import PublishError

#: What to install when google-cloud-pubsub is missing.
MISSING_EXTRA = (
    "EMULATOR_PUBSUB_MISSING_LIBRARY. Publishing to the Pub/Sub emulator needs "
    "google-cloud-pubsub: pip install 'cloud-scheduler-emulator[pubsub]' (in a clone: "
    "-e '.[pubsub]')."
)


def pubsub_library_missing() -> str | None:
    """Return :data:`MISSING_EXTRA` when google-cloud-pubsub cannot be imported, else ``None``."""
    try:
        import google.pubsub_v1  # noqa: F401
        import grpc  # noqa: F401
    except ImportError:
        return MISSING_EXTRA
    return None


def _client(host: str) -> Any:
    import grpc
    from google.pubsub_v1 import PublisherClient
    from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport

    channel = grpc.insecure_channel(host)
    return PublisherClient(transport=PublisherGrpcTransport(channel=channel))


class EmulatorPublisher:
    """Publish to the Pub/Sub emulator at ``host`` (``HOST:PORT``), through a client made on
    first use: a missing library makes :meth:`unavailable` say which extra to install (the
    attempt records it) rather than failing at start-up."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._client: Any = None
        self._lock = threading.Lock()

    unavailable = staticmethod(pubsub_library_missing)

    def publish(
        self, topic: str, data: bytes, attributes: Mapping[str, str], timeout_seconds: float
    ) -> str:
        """Publish one message, one try (the job's retryConfig retries); return its ID.

        :raises PublishError: with the gRPC status name (``NOT_FOUND`` for a missing topic,
            ``UNAVAILABLE`` when the emulator cannot be reached, ``DEADLINE_EXCEEDED``…).
        """
        from google.api_core import exceptions
        from google.pubsub_v1 import PubsubMessage

        message = PubsubMessage(data=data, attributes=dict(attributes))
        with self._lock:
            if self._client is None:
                self._client = _client(self.host)
            client = self._client
        try:
            response = client.publish(
                topic=topic, messages=[message], retry=None, timeout=timeout_seconds
            )
        except exceptions.GoogleAPICallError as exc:
            code = getattr(exc.grpc_status_code, "name", None) or "UNKNOWN"
            text = f"{exc.message} (Pub/Sub emulator at {self.host})"
            if code == "NOT_FOUND":  # as in production, nothing creates it; say how to
                text += f"; create it with: curl -X PUT http://{self.host}/v1/{topic}"
            raise PublishError(code, text) from exc
        return str(response.message_ids[0])

    def close(self) -> None:
        """Close the gRPC channel (if one was opened)."""
        with self._lock:
            if self._client is not None:
                self._client.transport.close()
                self._client = None


def ensure_topics(host: str, topics: Iterable[str], timeout_seconds: float = 30.0) -> list[str]:
    """Create each topic (``projects/P/topics/T``) on the emulator at ``host`` unless it exists.

    Production never creates topics; ``--with-pubsub`` does, for the jobs it loads.

    :raises RuntimeError: when google-cloud-pubsub is missing (naming the extra) or the
        emulator refuses.
    :return: the topics that were created.
    """
    if (missing := pubsub_library_missing()) is not None:
        raise RuntimeError(missing)
    from google.api_core import exceptions

    client = _client(host)
    created = []
    try:
        for topic in dict.fromkeys(topics):
            try:
                client.create_topic(name=topic, timeout=timeout_seconds)
                created.append(topic)
            except exceptions.AlreadyExists:
                pass
            except exceptions.GoogleAPICallError as exc:
                raise RuntimeError(f"the Pub/Sub emulator refused topic {topic}: {exc}") from exc
    finally:
        client.transport.close()
    return created
