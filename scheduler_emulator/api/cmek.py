"""The CMEK configuration of a location and the operations that change it.

``GET /v1/projects/P/locations/L/cmekConfig`` answers the location's ``CmekConfig``
(``{"name", "kmsKeyName"?}``); ``PATCH`` with ``updateMask=kmsKeyName`` stores a new key name
(an empty one clears it) and answers a long-running ``Operation`` that is already done, with
the new configuration as its ``response``; ``projects/P/locations/L/operations[/ID]`` lists and
gets those operations. Newer gcloud releases call these for ``gcloud scheduler cmek-config
describe|update``. Nothing is encrypted: the key name is stored and echoed, as production
echoes it. Held in memory for the life of the emulator.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..domain.codec import show_value
from ..domain.errors import InvalidArgument, NotFound
from ..wire import format_timestamp

#: A Cloud KMS crypto key's resource name.
KMS_KEY_PATTERN = re.compile(r"^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$")
_CMEK_TYPE = "type.googleapis.com/google.cloud.scheduler.v1.CmekConfig"
_METADATA_TYPE = "type.googleapis.com/google.cloud.scheduler.v1.OperationMetadata"
_FIELDS = {"name": "name", "kmsKeyName": "kmsKeyName", "kms_key_name": "kmsKeyName"}


def _mask_paths(update_mask: str | Sequence[str] | None) -> list[str]:
    if update_mask is None:
        return []
    paths = update_mask.split(",") if isinstance(update_mask, str) else list(update_mask)
    return [path.strip() for path in paths if path.strip()]


class CmekConfigs:
    """Per-location CMEK configurations and the operations their updates created.

    Thread-safe; every method takes the full resource names the API uses.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, str] = {}  # location name -> KMS key name
        self._operations: dict[str, dict[str, Any]] = {}  # operation name -> Operation JSON

    def get(self, location: str) -> dict[str, Any]:
        """Return the ``CmekConfig`` JSON of ``location`` (``projects/P/locations/L``)."""
        config: dict[str, Any] = {"name": f"{location}/cmekConfig"}
        with self._lock:
            key = self._keys.get(location)
        if key:
            config["kmsKeyName"] = key
        return config

    def update(
        self,
        location: str,
        body: Mapping[str, Any],
        update_mask: str | Sequence[str] | None,
        now: datetime,
        *,
        proto_paths: bool = False,
    ) -> dict[str, Any]:
        """Store the body's ``kmsKeyName`` (under the mask) and return the done ``Operation``.

        :param location: ``projects/P/locations/L``.
        :param body: the CmekConfig JSON (``kmsKeyName``; ``name`` ignored).
        :param update_mask: empty or ``kmsKeyName`` / ``kms_key_name``.
        :param now: the operation's create and end time.
        :param proto_paths: the mask is a gRPC ``FieldMask``: ``kms_key_name`` only.
        :raises InvalidArgument: for an unknown field, mask path or a malformed key name.
        """
        fields: dict[str, Any] = {}
        for key, value in body.items():
            if key not in _FIELDS:
                raise InvalidArgument(
                    f"Invalid JSON payload received. Unknown name {show_value(key)} at "
                    "'cmek_config': Cannot find field.",
                    field=str(key),
                )
            fields[_FIELDS[key]] = value
        paths = _mask_paths(update_mask)
        settable = {"kms_key_name"} if proto_paths else {"kmsKeyName", "kms_key_name"}
        for path in paths:
            if path not in settable:
                raise InvalidArgument(
                    f"Invalid mask for CmekConfig: {show_value(path)[1:-1]}",
                    field="updateMask",
                    description=f"updateMask path {show_value(path)} is not a field of "
                    "CmekConfig that can be updated (kms_key_name).",
                )
        key_name = fields.get("kmsKeyName") or ""
        if not isinstance(key_name, str) or (key_name and not KMS_KEY_PATTERN.match(key_name)):
            raise InvalidArgument(
                f"kmsKeyName {show_value(key_name)} is not a Cloud KMS key name "
                "(projects/P/locations/L/keyRings/R/cryptoKeys/K).",
                field="kmsKeyName",
            )
        if paths or "kmsKeyName" in fields:
            with self._lock:
                if key_name:
                    self._keys[location] = key_name
                else:
                    self._keys.pop(location, None)
        config = self.get(location)
        stamp = format_timestamp(now)
        name = f"{location}/operations/operation-{uuid.uuid4().hex}"
        operation: dict[str, Any] = {
            "name": name,
            "metadata": {
                "@type": _METADATA_TYPE,
                "createTime": stamp,
                "endTime": stamp,
                "target": config["name"],
                "verb": "update",
                "apiVersion": "v1",
            },
            "done": True,
            "response": {"@type": _CMEK_TYPE, **config},
        }
        with self._lock:
            self._operations[name] = operation
        return operation

    def get_operation(self, name: str) -> dict[str, Any]:
        """Return the ``Operation`` JSON named ``name``.

        :raises NotFound: for an operation this emulator did not create.
        """
        with self._lock:
            operation = self._operations.get(name)
        if operation is None:
            raise NotFound(f"Operation {name} not found.")
        return operation

    def list_operations(self, location: str) -> list[dict[str, Any]]:
        """Every operation of ``location``, oldest first."""
        prefix = f"{location}/operations/"
        with self._lock:
            return [op for name, op in self._operations.items() if name.startswith(prefix)]
