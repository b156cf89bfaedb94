"""The execution log: one Cloud Logging-shaped JSON line per AttemptStarted / AttemptFinished.

Entries follow spec §14 exactly (``logName``, ``resource`` labels, ``jsonPayload`` with its
``@type``, ``severity``, ``httpRequest.status``), so a filter or script written for
``gcloud logging read 'logName:cloudscheduler.googleapis.com%2Fexecutions'`` works on them::

    {"insertId": "...", "jsonPayload": {"@type": "type.googleapis.com/google.cloud.scheduler.
     logging.AttemptStarted", "jobName": "projects/p/locations/l/jobs/nightly",
     "scheduledTime": "2026-09-24T02:00:00Z", "targetType": "HTTP", "url": "http://…"}, ...}

Timestamps are the emulator clock's (virtual time under a manual clock). ``insertId`` is the
attempt's store ID in hexadecimal followed by ``s`` (started) or ``f`` (finished): unique and
stable across restarts.
"""

from __future__ import annotations

import json
import threading
from typing import IO, Any

from ..domain.attempts import Attempt, iso

_TYPE = "type.googleapis.com/google.cloud.scheduler.logging."
#: ``targetType`` as production logs spell it, by ``Job.target_type`` (Pub/Sub: ``PUB_SUB``).
_LOG_TARGET_TYPES = {"PUBSUB": "PUB_SUB"}


def _target_fields(attempt: Attempt, target_type: str) -> dict[str, Any]:
    """``targetType`` and where the attempt went: ``pubsubTopic`` for Pub/Sub jobs (as in
    production entries), ``url`` otherwise."""
    kind = _LOG_TARGET_TYPES.get(target_type, target_type)
    if kind == "PUB_SUB":
        return {"targetType": kind, "pubsubTopic": attempt.request.get("pubsubTopic", "")}
    return {"targetType": kind, "url": attempt.request.get("url", "")}


class AttemptLog:
    """Write execution-log entries as JSON lines to a text stream.

    :param stream: a writable text stream (``sys.stdout`` or an open file); flushed per line.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def _envelope(
        self, attempt: Attempt, payload: dict[str, Any], when: str | None, kind: str
    ) -> dict[str, Any]:
        project, location = attempt.job.split("/")[1], attempt.job.split("/")[3]
        return {
            "insertId": f"{attempt.id:012x}{kind}",
            "jsonPayload": payload,
            "logName": f"projects/{project}/logs/cloudscheduler.googleapis.com%2Fexecutions",
            "receiveTimestamp": when,
            "resource": {
                "type": "cloud_scheduler_job",
                "labels": {"job_id": attempt.job_id, "location": location, "project_id": project},
            },
            "severity": "INFO",
            "timestamp": when,
        }

    def _write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, sort_keys=True)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()

    def started(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        """Log AttemptStarted (§14.2): jobName, scheduledTime (the attempt's start), url."""
        payload = {
            "@type": _TYPE + "AttemptStarted",
            "jobName": attempt.job,
            "scheduledTime": iso(attempt.start_time),
            **_target_fields(attempt, target_type),
        }
        self._write(self._envelope(attempt, payload, iso(attempt.start_time), "s"))

    def finished(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        """Log AttemptFinished (§14.3): debugInfo, ``status`` only on failure, severity ERROR on
        failure, ``httpRequest.status`` when the target answered. Pub/Sub entries carry
        ``pubsubTopic`` and no ``debugInfo``, like production's."""
        payload: dict[str, Any] = {
            "@type": _TYPE + "AttemptFinished",
            "debugInfo": attempt.debug_info,
            "jobName": attempt.job,
            **_target_fields(attempt, target_type),
        }
        if payload["targetType"] == "PUB_SUB":
            del payload["debugInfo"]
        entry = self._envelope(attempt, payload, iso(attempt.end_time), "f")
        if attempt.code != "OK":
            payload["status"] = attempt.code
            entry["severity"] = "ERROR"
        if attempt.response_status is not None:
            entry["httpRequest"] = {"status": attempt.response_status}
        self._write(entry)
