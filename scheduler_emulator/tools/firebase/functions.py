"""Scheduled Firebase functions and the Cloud Scheduler jobs ``firebase deploy`` makes of them.

Pure: the Functions emulator's ``GET /backends`` answer in, :class:`ScheduledFunction` values
and job resources out. What is copied from firebase-tools (``src/gcp/cloudscheduler.ts``
``jobFromEndpoint``, ``src/deploy/functions/backend.ts`` ``scheduleIdForFunction``,
``src/deploy/functions/release/fabricator.ts`` ``upsertScheduleV1``/``upsertScheduleV2``,
``src/functionsConfig.ts`` ``getAppEngineLocation``, ``src/deploy/functions/validate.ts``
``functionIdsAreValid``):

- the job ID is ``firebase-schedule-<function>-<region>``; a v2 function's job is in the
  function's region, a v1 function's in the project's App Engine location (``us-central1``
  unless the project's App Engine app is elsewhere), whatever the function's region;
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

A function that cannot become a job is refused alone, with a line naming it, the field and the
value (:func:`scheduled_functions` returns the others and those lines).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...domain.errors import InvalidArgument
from ...domain.names import check_location_id, check_project_id

#: Location of v1 functions' jobs when the project's App Engine app is in no other location
#: (firebase-tools' ``getAppEngineLocation`` default).
DEFAULT_APP_ENGINE_LOCATION = "us-central1"
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
_GENERATION = re.compile(r"(.+)-([0-9]{1,9})")
# firebase-tools' rule for v1 function IDs (functionIdsAreValid; its v2 rule is stricter, and
# the Functions emulator loads both alike): a letter, then up to 62 letters, digits, - and _.
_FUNCTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
_PROJECT_LABEL = re.compile(r"/projects/(.*?)/locations/")
#: Characters of a refused value shown in a message at most.
_SHOWN = 60


def shown(value: object) -> str:
    """``repr(value)``, cut to a readable length (a 600-character name stays one short line)."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def app_engine_location(location_id: str) -> str:
    """The Cloud Scheduler location of an App Engine location ID, as firebase-tools'
    ``getAppEngineLocation`` reads it: ``us-central`` and ``europe-west`` (App Engine's
    names, no trailing digit) become ``us-central1`` and ``europe-west1``; a location with its
    digit is kept.

    :param location_id: ``europe-west``, ``europe-west1``, ``asia-northeast1``...
    :raises ValueError: naming the value, when it is not a location of that shape.
    """
    try:
        check_location_id(location_id, field="App Engine location")
    except InvalidArgument as exc:
        raise ValueError(exc.describe()) from None
    return location_id if location_id[-1:].isdigit() else location_id + "1"


def _whole(value: object) -> int | None:
    """A JSON number that is a whole number, else ``None`` (``"abc"``, ``1.5``, ``true``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


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

        The name must be a Firebase function name (a letter, then up to 62 letters, digits,
        ``-`` and ``_``) and the region a location such as ``us-central1``; numbers must be
        whole numbers and texts texts.

        :raises ValueError: ``function <name> (<id>): <field> <value> …``, naming the function,
            the field and the value, when the entry cannot become a job.
        """
        name = trigger.get("name")
        label = f"function {shown(name)} ({shown(trigger.get('id'))})"

        def refuse(field: str, value: object, why: str) -> ValueError:
            return ValueError(f"{label}: {field} {shown(value)} {why}")

        if not isinstance(name, str) or not _FUNCTION_NAME.fullmatch(name):
            raise refuse("name", name, "is not a function name (a letter, then up to 62 "
                         "letters, digits, hyphens and underscores)")  # fmt: skip
        label = f"function {name}"
        region = trigger.get("region")
        try:
            region = check_location_id(region if isinstance(region, str) else "", field="region")
        except InvalidArgument:
            raise refuse("region", region, 'is not a region such as "us-central1"') from None
        function_id = trigger.get("id")
        if not isinstance(function_id, str) or not function_id:
            raise refuse("id", function_id, "is not the Functions emulator's function ID")
        platform = trigger.get("platform") or "gcfv1"
        if platform not in ("gcfv1", "gcfv2"):
            raise refuse("platform", platform, 'is neither "gcfv1" nor "gcfv2"')
        schedule = trigger.get("schedule")
        text = schedule.get("schedule") if isinstance(schedule, Mapping) else None
        if not isinstance(text, str) or not text:
            raise refuse("schedule", text, "is not a schedule")
        assert isinstance(schedule, Mapping)
        time_zone = schedule.get("timeZone") or None
        if time_zone is not None and not isinstance(time_zone, str):
            raise refuse("timeZone", time_zone, "is not a time zone name")
        retry_options = schedule.get("retryConfig") or {}
        if not isinstance(retry_options, Mapping):
            raise refuse("retryConfig", retry_options, "is not an object")
        retry: dict[str, int] = {}
        for option, value in retry_options.items():
            if value is None:
                continue
            if option not in _RETRY_COUNTS and option not in _RETRY_DURATIONS:
                continue  # an option Cloud Scheduler has no field for
            number = _whole(value)
            if number is None:
                raise refuse(f"retryConfig.{option}", value, "is not a whole number")
            retry[option] = number
        timeout = trigger.get("timeoutSeconds")
        timeout_seconds = None if timeout is None else _whole(timeout)
        if timeout is not None and timeout_seconds is None:
            raise refuse("timeoutSeconds", timeout, "is not a whole number")
        account = trigger.get("serviceAccount") or trigger.get("serviceAccountEmail") or None
        if account is not None and not isinstance(account, str):
            raise refuse("serviceAccount", account, "is not an email address")
        return cls(
            id=function_id,
            name=name,
            region=region,
            platform=platform,
            schedule=text,
            time_zone=time_zone,
            retry=retry,
            timeout_seconds=timeout_seconds,
            service_account=account,
        )

    @property
    def v2(self) -> bool:
        """``True`` for v2 functions (an HTTP job); ``False`` for v1 (a Pub/Sub job)."""
        return self.platform != "gcfv1"

    @property
    def job_id(self) -> str:
        """``firebase-schedule-<name>-<region>``."""
        return f"{JOB_ID_PREFIX}{self.name}-{self.region}"

    def location(self, app_engine: str = DEFAULT_APP_ENGINE_LOCATION) -> str:
        """The job's location: the function's region for v2, the project's App Engine
        location (``app_engine``) for v1, as ``firebase deploy`` chooses."""
        return self.region if self.v2 else app_engine

    def job_name(self, project: str, app_engine: str = DEFAULT_APP_ENGINE_LOCATION) -> str:
        """The job's full name, in :meth:`location`."""
        return f"projects/{project}/locations/{self.location(app_engine)}/jobs/{self.job_id}"

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
        self,
        project: str,
        trigger_url: str,
        *,
        audience: str | None = None,
        app_engine: str = DEFAULT_APP_ENGINE_LOCATION,
    ) -> dict[str, Any]:
        """The job ``firebase deploy`` creates, as REST JSON.

        :param project: the project of the job (and of the topic, the default audience).
        :param trigger_url: where the emulator delivers (v2: the job's ``httpTarget.uri``).
        :param audience: the v2 token's audience; default :meth:`production_uri`.
        :param app_engine: the project's App Engine location, where v1 jobs go.
        """
        job: dict[str, Any] = {
            "name": self.job_name(project, app_engine),
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


def triggers(backends: object) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The function entries of a ``GET /backends`` answer, and a line for each part of it that
    is not of the known shape (skipped alone).

    :param backends: ``{"backends": [{"functionTriggers": [{...}, ...]}, ...]}``.
    :raises ValueError: when the answer is not an object with a ``backends`` list.
    """
    entries = backends.get("backends") if isinstance(backends, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError(
            "the Functions emulator's GET /backends answer is not of the shape "
            '{"backends": [...]} (got ' + shown(backends) + ")"
        )
    found: list[Mapping[str, Any]] = []
    odd: list[str] = []
    for i, backend in enumerate(entries):
        listed = backend.get("functionTriggers") if isinstance(backend, Mapping) else None
        if listed is None and isinstance(backend, Mapping):
            continue
        if not isinstance(listed, list):
            odd.append(f"ignored backends[{i}]: not of the shape {{\"functionTriggers\": [...]}}: "
                       + shown(backend))  # fmt: skip
            continue
        for j, trigger in enumerate(listed):
            if isinstance(trigger, Mapping):
                found.append(trigger)
            else:
                odd.append(
                    f"ignored backends[{i}].functionTriggers[{j}]: not an object: {shown(trigger)}"
                )
    return found, odd


def loading_codebases(backends: object) -> int:
    """How many codebases of a ``GET /backends`` answer (one of :func:`triggers`' shape) list
    no function. firebase-tools lists every codebase at once but loads them one after another
    (a Node one, then a Python one seconds later), so such a codebase is taken as still loading.
    """
    entries = backends.get("backends", []) if isinstance(backends, Mapping) else []
    return sum(isinstance(b, Mapping) and b.get("functionTriggers") == [] for b in entries)


def scheduled_functions(backends: object) -> tuple[list[ScheduledFunction], list[str]]:
    """The scheduled functions of a ``GET /backends`` answer, one per function ID, and a line
    for each one that cannot become a job (naming the function, the field and the value) or
    part of the answer of an unknown shape. One bad function never hides the others.

    The emulator may list a function twice (after ``PUT /functions/enableBackgroundTriggers``);
    the last entry of an ID wins. Functions without a schedule are left out.

    :param backends: ``{"backends": [{"functionTriggers": [...]}, ...]}``.
    :raises ValueError: when the answer is not an object with a ``backends`` list.
    """
    entries, refused = triggers(backends)
    found: dict[str, ScheduledFunction] = {}
    for trigger in entries:
        if not trigger.get("schedule"):
            continue
        try:
            fn = ScheduledFunction.from_trigger(trigger)
        except ValueError as exc:
            refused.append(f"no job for {exc}")
            continue
        found[fn.id] = fn
    return list(found.values()), refused


def project_of(backends: object) -> tuple[str | None, list[str]]:
    """The emulated project, read from the functions' ``EVENTARC_CLOUD_EVENT_SOURCE`` labels
    (``…/projects/<project>/locations/…``), and a line for each label whose project is not a
    project ID (``../evil``): such a label is never used.

    :return: the first well-formed project (``None`` when no function has one), the lines.
    """
    try:
        entries, _ = triggers(backends)
    except ValueError:
        return None, []
    found: str | None = None
    malformed: dict[str, list[str]] = {}  # project -> the functions labelled with it
    for trigger in entries:
        labels = trigger.get("labels")
        source = labels.get("EVENTARC_CLOUD_EVENT_SOURCE") if isinstance(labels, Mapping) else None
        match = _PROJECT_LABEL.search(source) if isinstance(source, str) else None
        if match is None:
            continue
        try:
            found = found or check_project_id(match.group(1))
        except InvalidArgument:
            malformed.setdefault(match.group(1), []).append(shown(trigger.get("name")))
    refused = [
        f"the project {shown(project)} in the EVENTARC_CLOUD_EVENT_SOURCE label of function(s) "
        f"{', '.join(names[:5])}{' …' if len(names) > 5 else ''} is not a project ID: not used"
        for project, names in malformed.items()
    ]
    return found, refused


def valid_trigger_keys(not_found_text: str) -> list[str]:
    """The trigger keys the Functions emulator lists in the 404 of an unknown key.

    :param not_found_text: ``Function x does not exist, valid functions are: us-central1-a-0, …``
    :return: the keys, in order (empty when the text lists none).
    """
    match = _VALID_KEYS.search(not_found_text)
    if match is None:
        return []
    return [key.strip() for key in match.group(1).split(",") if key.strip()]


def trigger_keys(keys: list[str]) -> dict[str, str]:
    """Each function's key among ``keys``: ``<id>-<generation>`` with the highest generation
    (the emulator counts generations up on each reload), else ``<id>`` itself when listed.

    :param keys: the keys of :func:`valid_trigger_keys`.
    :return: function ID -> trigger key (one pass over ``keys``, however many there are).
    """
    newest: dict[str, tuple[int, str]] = {}
    for key in keys:
        match = _GENERATION.fullmatch(key)
        if match is not None:
            generation = int(match.group(2))
            if generation >= newest.get(match.group(1), (-1, ""))[0]:
                newest[match.group(1)] = (generation, key)
    return {key: key for key in keys} | {fid: key for fid, (_, key) in newest.items()}


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
