"""Scheduled Firebase functions and the Cloud Scheduler jobs ``firebase deploy`` makes of them.

Pure: the Functions emulator's ``GET /backends`` answer in, :class:`ScheduledFunction` values
and job resources out. What is copied from firebase-tools (``src/gcp/cloudscheduler.ts``
``jobFromEndpoint``, ``src/deploy/functions/backend.ts`` ``scheduleIdForFunction``):

- the job ID is ``firebase-schedule-<function>-<region>``, in the function's region;
- the time zone is the function's, else ``America/Los_Angeles`` for v1 (``gcfv1``) functions
  and ``UTC`` for v2 (``gcfv2``) ones;
- the retry config is the function's ``retryCount``, ``maxDoublings`` and its
  ``min/maxBackoffSeconds`` and ``maxRetrySeconds`` as durations; none when it sets none;
- v2: an HTTP job, ``POST`` with an OIDC token, attempt deadline = the function's timeout
  clamped to 180–1800 s;
- v1: a Pub/Sub job publishing ``{"scheduled": "true"}`` attributes to the topic
  ``projects/<project>/topics/firebase-schedule-<function>-<region>``.

Example::

    >>> fn = ScheduledFunction.from_trigger({"id": "us-central1-nightly", "name": "nightly",
    ...     "region": "us-central1", "platform": "gcfv2", "timeoutSeconds": 60,
    ...     "schedule": {"schedule": "0 2 * * *", "retryConfig": {"retryCount": 2}}})
    >>> fn.job_id, fn.time_zone_or_default, fn.attempt_deadline_seconds
    ('firebase-schedule-nightly-us-central1', 'UTC', 180)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Prefix of the IDs of the jobs ``firebase deploy`` makes for scheduled functions.
JOB_ID_PREFIX = "firebase-schedule-"
#: Time zone of a v1 scheduled function that sets none (firebase-tools' DEFAULT_TIME_ZONE_V1).
DEFAULT_TIME_ZONE_V1 = "America/Los_Angeles"
#: Time zone of a v2 scheduled function that sets none (firebase-tools' DEFAULT_TIME_ZONE_V2).
DEFAULT_TIME_ZONE_V2 = "UTC"
#: Attempt deadline bounds of v2 jobs, seconds (firebase-tools' DEFAULT/MAX_V2_SCHEDULE_
#: ATTEMPT_DEADLINE_SECONDS).
MIN_ATTEMPT_DEADLINE_SECONDS = 180
MAX_ATTEMPT_DEADLINE_SECONDS = 1800
#: Attribute of every message a v1 scheduled function's job publishes.
SCHEDULED_ATTRIBUTES = {"scheduled": "true"}
#: The service account of v2 jobs whose function names none. Production uses the project's
#: default compute service account, ``<project number>-compute@developer.gserviceaccount.com``;
#: an emulated (``demo-``) project has no number.
DEFAULT_SERVICE_ACCOUNT = "{project}-compute@developer.gserviceaccount.com"

# firebase-functions' retryConfig option -> the job's retryConfig field (durations in seconds).
_RETRY_COUNTS = ("retryCount", "maxDoublings")
_RETRY_DURATIONS = {
    "minBackoffSeconds": "minBackoffDuration",
    "maxBackoffSeconds": "maxBackoffDuration",
    "maxRetrySeconds": "maxRetryDuration",
}
_VALID_KEYS = re.compile(r"valid functions are:(.*)$", re.DOTALL)


@dataclass(frozen=True)
class ScheduledFunction:
    """One scheduled function as the Functions emulator lists it.

    :param id: the emulator's function ID, ``<region>-<name>`` (``us-central1-nightly``).
    :param name: the function's name (``nightly``; ``group-fn`` for grouped exports).
    :param region: its region (``us-central1``).
    :param platform: ``"gcfv1"`` (``functions.pubsub.schedule``) or ``"gcfv2"``
        (``onSchedule``, Python's ``scheduler_fn.on_schedule``).
    :param schedule: the schedule as written (unix-cron or English-like).
    :param time_zone: the function's time zone, ``None`` when it sets none.
    :param retry: the function's retry options (``retryCount``, ``minBackoffSeconds``...),
        unset ones left out.
    :param timeout_seconds: the function's timeout, ``None`` when not listed.
    :param service_account: the function's service account, ``None`` when it sets none.
    """

    id: str
    name: str
    region: str
    platform: str
    schedule: str
    time_zone: str | None = None
    retry: Mapping[str, int] = field(default_factory=dict)
    timeout_seconds: int | None = None
    service_account: str | None = None

    @classmethod
    def from_trigger(cls, trigger: Mapping[str, Any]) -> ScheduledFunction:
        """Read one entry of ``/backends``' ``functionTriggers`` that has a ``schedule``.

        :raises ValueError: when the entry has no schedule or lacks ``id``/``name``/``region``.
        """
        schedule = trigger.get("schedule")
        if not isinstance(schedule, Mapping) or not schedule.get("schedule"):
            raise ValueError(f"function {trigger.get('id')!r} has no schedule.")
        for key in ("id", "name", "region"):
            if not isinstance(trigger.get(key), str) or not trigger[key]:
                raise ValueError(f"a scheduled function without {key!r}: {dict(trigger)!r}")
        retry = schedule.get("retryConfig") or {}
        timeout = trigger.get("timeoutSeconds")
        return cls(
            id=trigger["id"],
            name=trigger["name"],
            region=trigger["region"],
            platform=str(trigger.get("platform") or "gcfv1"),
            schedule=str(schedule["schedule"]),
            time_zone=schedule.get("timeZone") or None,
            retry={k: int(v) for k, v in retry.items() if v is not None},
            timeout_seconds=int(timeout) if timeout is not None else None,
            service_account=trigger.get("serviceAccount") or trigger.get("serviceAccountEmail"),
        )

    @property
    def v2(self) -> bool:
        """``True`` for v2 functions (an HTTP job); ``False`` for v1 (a Pub/Sub job)."""
        return self.platform != "gcfv1"

    @property
    def job_id(self) -> str:
        """``firebase-schedule-<name>-<region>``."""
        return f"{JOB_ID_PREFIX}{self.name}-{self.region}"

    def job_name(self, project: str) -> str:
        """The job's full name, in the function's region."""
        return f"projects/{project}/locations/{self.region}/jobs/{self.job_id}"

    def topic(self, project: str) -> str:
        """The topic production's v1 job publishes to (the job ID, in ``project``)."""
        return f"projects/{project}/topics/{self.job_id}"

    @property
    def time_zone_or_default(self) -> str:
        """The time zone the job gets (the per-generation default when the function sets
        none)."""
        return self.time_zone or (DEFAULT_TIME_ZONE_V2 if self.v2 else DEFAULT_TIME_ZONE_V1)

    @property
    def attempt_deadline_seconds(self) -> int:
        """The timeout clamped to 180–1800 s (v2 jobs' attempt deadline; used for v1
        deliveries too). 180 when the timeout is not listed."""
        timeout = self.timeout_seconds or MIN_ATTEMPT_DEADLINE_SECONDS
        return max(MIN_ATTEMPT_DEADLINE_SECONDS, min(timeout, MAX_ATTEMPT_DEADLINE_SECONDS))

    def production_uri(self, project: str) -> str:
        """The function's URL in production style, the default audience of v2 tokens:
        ``https://<region>-<project>.cloudfunctions.net/<name>`` (the URL a deployed function
        also answers at; its ``run.app`` URL has a hash no emulator knows)."""
        return f"https://{self.region}-{project}.cloudfunctions.net/{self.name}"

    def retry_config(self) -> dict[str, Any]:
        """The job's ``retryConfig`` JSON (empty when the function sets no retry option)."""
        config: dict[str, Any] = {k: self.retry[k] for k in _RETRY_COUNTS if k in self.retry}
        for option, job_field in _RETRY_DURATIONS.items():
            if option in self.retry:
                config[job_field] = f"{self.retry[option]}s"
        return config

    def job_json(
        self, project: str, trigger_url: str, *, audience: str | None = None
    ) -> dict[str, Any]:
        """The job ``firebase deploy`` creates, as REST JSON.

        :param project: the project of the job (and of the topic, the default audience).
        :param trigger_url: where the emulator delivers (v2: the job's ``httpTarget.uri``).
        :param audience: the v2 token's audience; default :meth:`production_uri`.
        """
        job: dict[str, Any] = {
            "name": self.job_name(project),
            "schedule": self.schedule,
            "timeZone": self.time_zone_or_default,
        }
        if self.v2:
            email = self.service_account or DEFAULT_SERVICE_ACCOUNT.format(project=project)
            job["httpTarget"] = {
                "uri": trigger_url,
                "httpMethod": "POST",
                "oidcToken": {
                    "serviceAccountEmail": email,
                    "audience": audience or self.production_uri(project),
                },
            }
            job["attemptDeadline"] = f"{self.attempt_deadline_seconds}s"
        else:
            job["pubsubTarget"] = {
                "topicName": self.topic(project),
                "attributes": dict(SCHEDULED_ATTRIBUTES),
            }
        retry = self.retry_config()
        if retry:
            job["retryConfig"] = retry
        return job


def scheduled_functions(backends: Mapping[str, Any]) -> list[ScheduledFunction]:
    """The scheduled functions of a ``GET /backends`` answer, one per function ID.

    The emulator may list a function twice (after ``PUT /functions/enableBackgroundTriggers``);
    the last entry of an ID wins. Functions without a schedule are left out.

    :param backends: ``{"backends": [{"functionTriggers": [...]}, ...]}``.
    :raises ValueError: for an answer of another shape.
    """
    entries = backends.get("backends")
    if not isinstance(entries, list):
        raise ValueError("the Functions emulator's /backends answer has no 'backends' list.")
    found: dict[str, ScheduledFunction] = {}
    for backend in entries:
        for trigger in (backend or {}).get("functionTriggers") or []:
            if isinstance(trigger, Mapping) and trigger.get("schedule"):
                fn = ScheduledFunction.from_trigger(trigger)
                found[fn.id] = fn
    return list(found.values())


def project_of(backends: Mapping[str, Any]) -> str | None:
    """The emulated project, read from a function's ``EVENTARC_CLOUD_EVENT_SOURCE`` label
    (``…/projects/<project>/locations/…``); ``None`` when no function has one."""
    for backend in backends.get("backends") or []:
        for trigger in (backend or {}).get("functionTriggers") or []:
            source = str(((trigger or {}).get("labels") or {}).get("EVENTARC_CLOUD_EVENT_SOURCE"))
            match = re.search(r"/projects/([^/]+)/", source)
            if match:
                return match.group(1)
    return None


def valid_trigger_keys(not_found_text: str) -> list[str]:
    """The trigger keys the Functions emulator lists in the 404 of an unknown key.

    :param not_found_text: ``Function x does not exist, valid functions are: us-central1-a-0, …``
    :return: the keys, in order (empty when the text lists none).
    """
    match = _VALID_KEYS.search(not_found_text)
    if match is None:
        return []
    return [key.strip() for key in match.group(1).split(",") if key.strip()]


def trigger_key(function_id: str, keys: list[str]) -> str | None:
    """The key of ``function_id`` among ``keys``: ``<id>-<generation>`` with the highest
    generation (the emulator counts generations up on each reload), else ``<id>`` itself when
    listed; ``None`` when the function has no key."""
    pattern = re.compile(re.escape(function_id) + r"-(\d+)$")
    generations = [(int(m.group(1)), k) for k in keys if (m := pattern.match(k))]
    if generations:
        return max(generations)[1]
    return function_id if function_id in keys else None


def legacy_event(
    topic: str,
    attributes: Mapping[str, str],
    data_base64: str,
    timestamp: str,
    event_id: str,
) -> dict[str, Any]:
    """The legacy (v1) event a Pub/Sub-triggered function receives for one message.

    The Functions emulator's Pub/Sub path builds the same shape
    (``pubsubEmulator.ts`` ``createLegacyEventRequestBody``).

    :param topic: ``projects/P/topics/T``.
    :param attributes: the message attributes.
    :param data_base64: the message data, base64 (left out when empty).
    :param timestamp: the ``context.timestamp`` (RFC 3339).
    :param event_id: the ``context.eventId``.
    :return: ``{"context": {eventId, timestamp, eventType, resource}, "data": {...}}``.
    """
    data: dict[str, Any] = {
        "@type": "type.googleapis.com/google.pubsub.v1.PubsubMessage",
        "attributes": dict(attributes),
    }
    if data_base64:
        data["data"] = data_base64
    return {
        "context": {
            "eventId": event_id,
            "timestamp": timestamp,
            "eventType": "google.pubsub.topic.publish",
            "resource": {"service": "pubsub.googleapis.com", "name": topic},
        },
        "data": data,
    }
