"""Cloud Run jobs as the emulator runs them: their definitions, run requests and the rules of an
execution's tasks — pure values, no processes.

A definition is what Google describes, in either shape:

- the Admin API v2 REST ``Job`` (``name: projects/P/locations/L/jobs/J``, ``template.taskCount``,
  ``template.parallelism``, ``template.template.maxRetries``, ``template.template.timeout``,
  ``template.template.containers[].command/args/env``;
  cloud.google.com/run/docs/reference/rest/v2/projects.locations.jobs);
- the v1 (Knative) ``Job`` that ``gcloud run jobs describe J --format=export`` prints
  (``metadata.name``, ``metadata.namespace``, the ``cloud.googleapis.com/location`` label,
  ``spec.template.spec.{taskCount,parallelism}``,
  ``spec.template.spec.template.spec.{maxRetries,timeoutSeconds,containers}``).

The image is never pulled: a container's ``command`` + ``args`` run as a local process; a
container with no ``command`` names what to run with the emulator-only field
``emulatorCommand`` (a list of strings, then ``args``)::

    >>> job = parse_cloud_run_job({"name": "projects/p/locations/us-central1/jobs/export",
    ...     "template": {"taskCount": 3, "template": {"containers": [
    ...         {"image": "gcr.io/p/export", "emulatorCommand": ["python", "export.py"]}]}}},
    ...     project="p", location="us-central1")
    >>> job.job_id, job.task_count, job.parallelism, job.max_retries, job.timeout_seconds
    ('export', 3, 0, 3, 600.0)
    >>> job.argv
    ('python', 'export.py')

:class:`TaskRules` decides which task attempt starts next (parallelism, retries) with no clock
and no process, so the rules are tested alone.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .codec import parse_duration, show_value
from .errors import InvalidArgument
from .resources import JobPath

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TASK_TIMEOUT_SECONDS",
    "CloudRunJob",
    "RunOverrides",
    "TaskRules",
    "execution_reason",
    "execution_summary",
    "tasks_complete",
    "parse_cloud_run_job",
    "parse_run_request",
    "run_execution",
    "started_execution",
]

#: Retries of a failed task when the job sets none (Google's default: 3;
#: cloud.google.com/run/docs/configuring/max-retries).
DEFAULT_MAX_RETRIES = 3
#: A task's timeout when the job sets none (Google's default: 10 minutes;
#: cloud.google.com/run/docs/configuring/task-timeout).
DEFAULT_TASK_TIMEOUT_SECONDS = 600.0
#: Largest ``taskCount`` accepted (Google's limit: 10,000 tasks per execution).
MAX_TASK_COUNT = 10_000
#: Largest ``maxRetries`` (Google's limit: 10).
MAX_RETRIES_LIMIT = 10
#: Longest task timeout (Google's limit: 168 hours).
MAX_TASK_TIMEOUT_SECONDS = 168 * 3600.0
_JOB_ID = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class CloudRunJob(JobPath):
    """One Cloud Run job the emulator can run.

    :param name: ``projects/P/locations/L/jobs/J``.
    :param argv: the process to start: the container's ``command`` (or ``emulatorCommand``)
        followed by its ``args``.
    :param env: the container's environment variables, in order.
    :param task_count: tasks per execution (1 to 10,000).
    :param parallelism: tasks running at once at most; 0 runs them all at once.
    :param max_retries: retries of a failed task (0 to 10).
    :param timeout_seconds: real seconds a task attempt may run before it is stopped.
    :param command_length: how many items of ``argv`` are the command, ``command`` or
        ``emulatorCommand`` (the rest are ``args``, which overrides replace).
    :param image: the container's image, shown, never pulled.
    :param container: the container's ``name``, ``""`` when it has none.
    :param secrets: the names of the container's variables from secrets (``valueSource``), not
        set by the emulator: a task sees the daemon's environment's value of each.
    """

    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    task_count: int = 1
    parallelism: int = 0
    max_retries: int = DEFAULT_MAX_RETRIES
    timeout_seconds: float = DEFAULT_TASK_TIMEOUT_SECONDS
    command_length: int = 0
    image: str = ""
    container: str = ""
    secrets: tuple[str, ...] = ()

    def with_overrides(self, overrides: RunOverrides) -> CloudRunJob:
        """Return this job as one execution runs it with a run request's ``overrides``:
        ``args`` replace the container's (``clearArgs`` empties them), ``env`` entries are
        added or replace those of the same name, ``taskCount`` and ``timeout`` replace the
        job's (cloud.google.com/run/docs/execute/jobs#override-job-configuration)."""
        argv, env = self.argv, dict(self.env)
        if overrides.clear_args:
            argv = argv[: self.command_length]
        if overrides.args is not None:
            argv = argv[: self.command_length] + overrides.args
        env.update(overrides.env)
        return replace(
            self,
            argv=argv,
            env=tuple(env.items()),
            task_count=overrides.task_count or self.task_count,
            timeout_seconds=overrides.timeout_seconds or self.timeout_seconds,
        )


@dataclass(frozen=True)
class RunOverrides:
    """The ``overrides`` of a ``RunJobRequest`` (v2) or of a v1 run body.

    :param args: replacing arguments, ``None`` to keep the job's.
    :param env: environment variables added or replaced.
    :param clear_args: drop the job's arguments.
    :param task_count: tasks of this execution, ``None`` for the job's.
    :param timeout_seconds: each task's timeout, ``None`` for the job's.
    """

    args: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    clear_args: bool = False
    task_count: int | None = None
    timeout_seconds: float | None = None


def _bad(where: str, field_path: str, value: Any, want: str) -> InvalidArgument:
    shown = "nothing" if value is None else show_value(value)
    return InvalidArgument(
        f"{where}: {field_path} must be {want}; got {shown}.",
        field=field_path,
        description=f"{where}: {field_path} must be {want}; got {shown}.",
    )


#: The fields of the v2 REST ``ExecutionTemplate`` and ``TaskTemplate``
#: (cloud.google.com/run/docs/reference/rest/v2/ExecutionTemplate, …/TaskTemplate): a name
#: outside them is a typo Cloud Run's API would refuse, not a field to ignore.
EXECUTION_TEMPLATE_FIELDS = frozenset(
    {"labels", "annotations", "parallelism", "taskCount", "template"}
)
TASK_TEMPLATE_FIELDS = frozenset(
    {
        "containers", "volumes", "maxRetries", "timeout", "serviceAccount",
        "executionEnvironment", "encryptionKey", "vpcAccess", "nodeSelector",
        "gpuZonalRedundancyDisabled",
    }
)  # fmt: skip
#: The v1 (Knative) ``ExecutionSpec`` and ``TaskSpec`` fields, of gcloud's ``--format=export``
#: (cloud.google.com/run/docs/reference/rest/v1/TaskSpec): a misspelt ``taskCount`` is refused.
V1_EXECUTION_FIELDS = frozenset({"parallelism", "taskCount", "template"})
V1_TASK_FIELDS = frozenset(
    {"volumes", "containers", "timeoutSeconds", "serviceAccountName", "nodeSelector", "maxRetries"}
)
#: A container's fields, v2 ``Container`` and v1 (Knative) ``Container`` alike, and the
#: emulator's ``emulatorCommand``: a misspelt ``args`` is refused, not run without its args.
CONTAINER_FIELDS = frozenset(
    {
        "name", "image", "sourceCode", "command", "args", "env", "envFrom", "resources", "ports",
        "volumeMounts", "workingDir", "livenessProbe", "readinessProbe", "startupProbe",
        "dependsOn", "baseImageUri", "buildInfo", "terminationMessagePath",
        "terminationMessagePolicy", "imagePullPolicy", "securityContext", "emulatorCommand",
    }
)  # fmt: skip
#: A ``RunJobRequest``'s ``ContainerOverride`` (cloud.google.com/run/docs/reference/rest/v2/
#: projects.locations.jobs/run).
CONTAINER_OVERRIDE_FIELDS = frozenset({"name", "args", "env", "clearArgs"})


def _mapping(
    data: Any, where: str, field_path: str, fields: frozenset[str] | None = None
) -> Mapping[str, Any]:
    """``data`` as a mapping (``{}`` for none); with ``fields``, every key must be one of them.

    :raises InvalidArgument: naming ``where``, the field path and the value.
    """
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise _bad(where, field_path or "the body", data, "a mapping")
    unknown = sorted(str(key) for key in data if key not in (fields or data))
    if unknown:  # (trial 139: an unknown override "must be an override field")
        path = f"{field_path}.{unknown[0]}".lstrip(".")
        where_field = f"{where}: {path}"
        near = difflib.get_close_matches(unknown[0], sorted(fields or ()), n=1)
        known = (
            f"did you mean {near[0]!r}?" if near else f"it knows {', '.join(sorted(fields or ()))}."
        )
        message = f"{where_field} is not a field Cloud Run knows here; {known}"
        raise InvalidArgument(message, field=path, description=message)
    return data


def _strings(data: Any, where: str, field_path: str) -> tuple[str, ...]:
    if data is None:
        return ()
    if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
        raise _bad(where, field_path, data, "a list of strings")
    return tuple(data)


def _whole(data: Any, where: str, field_path: str, low: int, high: int) -> int:
    if isinstance(data, str) and data.strip().isdigit():  # v1 and JSON int64 as strings
        data = int(data)
    if isinstance(data, bool) or not isinstance(data, int) or not low <= data <= high:
        raise _bad(where, field_path, data, f"a whole number from {low} to {high}")
    return data


def _seconds(data: Any, where: str, field_path: str) -> float:
    """A duration: ``"600s"`` (v2) or a number of seconds (v1 ``timeoutSeconds``)."""
    if isinstance(data, str) and not data.strip().isdigit():
        try:
            seconds = parse_duration(data, field=field_path).total_seconds()
        except InvalidArgument:
            raise _bad(
                where, field_path, data, 'a duration like "600s" (or a whole number of seconds)'
            ) from None
    else:
        seconds = float(_whole(data, where, field_path, 1, int(MAX_TASK_TIMEOUT_SECONDS)))
    if not 0 < seconds <= MAX_TASK_TIMEOUT_SECONDS:
        raise _bad(where, field_path, data, "more than 0 s and at most 168 hours")
    return seconds


#: An ``EnvVar``'s fields, and those of where v2's ``valueSource`` and v1's ``valueFrom`` find
#: a secret's value (cloud.google.com/run/docs/reference/rest/v2/Container#EnvVar).
ENV_VAR_FIELDS = frozenset({"name", "value", "valueSource", "valueFrom"})
SECRET_SOURCE_FIELDS = {
    "valueSource": (frozenset({"secretKeyRef"}), frozenset({"secret", "version"})),
    "valueFrom": (frozenset({"secretKeyRef"}), frozenset({"name", "key", "optional"})),
}


def _env(
    data: Any, where: str, field_path: str
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The ``(name, value)`` pairs of an ``env`` list, and the names of its variables from a
    secret, left out so that the daemon's environment's value of each reaches the task (trial
    204: a secret's variable was set empty over it, and a misspelt ``valeu`` read as empty)."""
    if data is None:
        return (), ()
    if not isinstance(data, list):
        raise _bad(where, field_path, data, "a list of {name, value}")
    pairs, secrets = [], []
    for index, item in enumerate(data):
        path = f"{field_path}[{index}]"
        entry = _mapping(item, where, path, ENV_VAR_FIELDS)
        name, value = entry.get("name"), entry.get("value", "")
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise _bad(where, f"{path}.name", name, "a variable name")
        if not isinstance(value, str) or "\0" in value:
            raise _bad(where, f"{path}.value", value, "a string")
        secret = next((key for key in SECRET_SOURCE_FIELDS if key in entry), None)
        if secret is None:
            pairs.append((name, value))
            continue
        if "value" in entry:
            raise _bad(where, f"{path}.{secret}", entry[secret], "left out beside a value")
        outer, inner = SECRET_SOURCE_FIELDS[secret]  # (trial 208: secrett was taken)
        source = _mapping(entry[secret], where, f"{path}.{secret}", outer)
        _mapping(source.get("secretKeyRef"), where, f"{path}.{secret}.secretKeyRef", inner)
        secrets.append(name)
    return tuple(pairs), tuple(secrets)


def parse_cloud_run_job(
    data: Any, *, project: str, location: str, unnamed: str = "a Cloud Run job"
) -> CloudRunJob:
    """Read one Cloud Run job definition, v2 REST or v1 (``gcloud … --format=export``).

    :param data: the decoded definition.
    :param project: the project of a v2 ``name`` that is a bare job ID.
    :param location: the location of a bare v2 job ID, or of a v1 job without the
        ``cloud.googleapis.com/location`` label.
    :param unnamed: how an error names a definition without a valid name (a file's loader
        says which entry of the file).
    :raises InvalidArgument: naming the job, the field (its path in the definition) and the
        value.
    :return: the job.
    """
    body = _mapping(data, unnamed, "job")
    if "apiVersion" in body or "spec" in body or "metadata" in body:
        return _parse_v1(body, project, location, unnamed)
    raw_name = body.get("name")
    if not isinstance(raw_name, str):
        raise _bad(unnamed, "name", raw_name, "projects/P/locations/L/jobs/J or J")
    parts = raw_name.split("/")
    if len(parts) == 1:
        name = f"projects/{project}/locations/{location}/jobs/{raw_name}"
    elif len(parts) == 6 and parts[0::2] == ["projects", "locations", "jobs"]:
        name = raw_name
    else:
        raise _bad(raw_name, "name", raw_name, "projects/P/locations/L/jobs/J or J")
    execution = _mapping(body.get("template"), name, "template", EXECUTION_TEMPLATE_FIELDS)
    task = _mapping(execution.get("template"), name, "template.template", TASK_TEMPLATE_FIELDS)
    return _build(
        name,
        task_count=execution.get("taskCount"),
        parallelism=execution.get("parallelism"),
        max_retries=task.get("maxRetries"),
        timeout=task.get("timeout"),
        containers=task.get("containers"),
        prefix=("template.taskCount", "template.parallelism", "template.template"),
        timeout_field="template.template.timeout",
    )


def _parse_v1(body: Mapping[str, Any], project: str, location: str, unnamed: str) -> CloudRunJob:
    meta = _mapping(body.get("metadata"), unnamed, "metadata")
    job_id = meta.get("name")
    if not isinstance(job_id, str):
        raise _bad(unnamed, "metadata.name", job_id, "the job's name")
    namespace = meta.get("namespace", project)
    labels = _mapping(meta.get("labels"), job_id, "metadata.labels")
    region = labels.get("cloud.googleapis.com/location", location)
    if not isinstance(namespace, str) or not isinstance(region, str):
        raise _bad(job_id, "metadata.namespace", namespace, "a project ID")
    if namespace.isdigit():  # a project number: gcloud prints it; jobs name the project ID
        namespace = project
    name = f"projects/{namespace}/locations/{region}/jobs/{job_id}"
    spec = _mapping(_mapping(body.get("spec"), name, "spec").get("template"), name, "spec.template")
    execution = _mapping(spec.get("spec"), name, "spec.template.spec", V1_EXECUTION_FIELDS)
    task = _mapping(
        _mapping(execution.get("template"), name, "spec.template.spec.template").get("spec"),
        name,
        "spec.template.spec.template.spec",
        V1_TASK_FIELDS,
    )
    return _build(
        name,
        task_count=execution.get("taskCount"),
        parallelism=execution.get("parallelism"),
        max_retries=task.get("maxRetries"),
        timeout=task.get("timeoutSeconds"),
        containers=task.get("containers"),
        prefix=(
            "spec.template.spec.taskCount",
            "spec.template.spec.parallelism",
            "spec.template.spec.template.spec",
        ),
        timeout_field="spec.template.spec.template.spec.timeoutSeconds",
    )


def _build(
    name: str,
    *,
    task_count: Any,
    parallelism: Any,
    max_retries: Any,
    timeout: Any,
    containers: Any,
    prefix: tuple[str, str, str],
    timeout_field: str,
) -> CloudRunJob:
    job_id = name.rsplit("/", 1)[-1]
    if not _JOB_ID.match(job_id):
        raise _bad(name, "name", job_id, "a job ID of lowercase letters, digits and hyphens")
    count_field, parallel_field, task_field = prefix
    if not isinstance(containers, list) or len(containers) != 1:
        raise _bad(name, f"{task_field}.containers", containers, "a list of one container")
    where = f"{task_field}.containers[0]"
    container = _mapping(containers[0], name, where, CONTAINER_FIELDS)
    command = _strings(container.get("command"), name, f"{where}.command")
    local = _strings(container.get("emulatorCommand"), name, f"{where}.emulatorCommand")
    args = _strings(container.get("args"), name, f"{where}.args")
    program = command or local
    if not program:
        raise _bad(
            name,
            f"{where}.emulatorCommand",
            None,
            "the local command to run, as the image is not pulled (or give the container a "
            "command)",
        )
    env, secrets = _env(container.get("env"), name, f"{where}.env")
    return CloudRunJob(
        name=name,
        argv=program + args,
        env=env,
        secrets=secrets,
        task_count=1
        if task_count is None
        else _whole(task_count, name, count_field, 1, MAX_TASK_COUNT),
        parallelism=0
        if parallelism is None
        else _whole(parallelism, name, parallel_field, 0, MAX_TASK_COUNT),
        max_retries=DEFAULT_MAX_RETRIES
        if max_retries is None
        else _whole(max_retries, name, f"{task_field}.maxRetries", 0, MAX_RETRIES_LIMIT),
        timeout_seconds=DEFAULT_TASK_TIMEOUT_SECONDS
        if timeout is None
        else _seconds(timeout, name, timeout_field),
        command_length=len(program),
        image=str(container.get("image", "")),
        container=str(container.get("name", "")),
    )


def parse_run_request(body: Any, *, v1: bool = False, container: str = "") -> RunOverrides:
    """Read a run request's body: v2 ``RunJobRequest`` (``{"overrides": {"containerOverrides":
    [{"name", "args", "env", "clearArgs"}], "taskCount", "timeout"}, "validateOnly",
    "etag"}``; cloud.google.com/run/docs/reference/rest/v2/projects.locations.jobs/run) or the
    v1 body (``timeoutSeconds`` in place of ``timeout``). An empty body is no overrides.

    :param container: the job's container name (``""``: none); an override naming another
        container is refused (what Cloud Run does then is not documented).
    :raises InvalidArgument: naming the field and the value (the Admin API's 400).
    """
    where = "RunJobRequest"
    data = _mapping(body, where, "", frozenset({"name", "overrides", "validateOnly", "etag"}))
    if not isinstance(data.get("validateOnly", False), bool):
        raise _bad(where, "validateOnly", data["validateOnly"], "true or false")
    known = {"containerOverrides", "taskCount", "timeoutSeconds" if v1 else "timeout"}
    overrides = _mapping(data.get("overrides"), where, "overrides", frozenset(known))
    containers = overrides.get("containerOverrides")  # (trial 127: {} and [null] were taken)
    containers = [] if containers is None else containers
    if not isinstance(containers, list) or len(containers) > 1 or None in containers:
        raise _bad(where, "overrides.containerOverrides", containers, "a list of one override")
    path = "overrides.containerOverrides[0]"
    override = _mapping(
        containers[0] if containers else None, where, path, CONTAINER_OVERRIDE_FIELDS
    )
    named = override.get("name", container)
    if container and named != container:
        raise _bad(where, f"{path}.name", named, f"the job's container, {container!r}")
    clear = override.get("clearArgs", False)
    if not isinstance(clear, bool):
        raise _bad(where, f"{path}.clearArgs", clear, "true or false")
    timeout_key = "timeoutSeconds" if v1 else "timeout"
    timeout = overrides.get(timeout_key)
    return RunOverrides(
        args=_strings(override["args"], where, f"{path}.args") if "args" in override else None,
        env=_env(override.get("env"), where, f"{path}.env")[0],
        clear_args=clear,
        task_count=None
        if overrides.get("taskCount") is None
        else _whole(overrides["taskCount"], where, "overrides.taskCount", 1, MAX_TASK_COUNT),
        timeout_seconds=None
        if timeout is None
        else _seconds(timeout, where, f"overrides.{timeout_key}"),
    )


@dataclass
class TaskRules:
    """Which task attempt of an execution starts next, and when it is over — the rules of
    cloud.google.com/run/docs/create-jobs: ``task_count`` tasks, at most ``parallelism`` running
    at once (0: all), a task that fails retried up to ``max_retries`` times (its attempt number,
    ``CLOUD_RUN_TASK_ATTEMPT``, counting from 0); the execution succeeds when every task has
    and fails once a task has failed its last attempt (the tasks running then finish).

    >>> rules = TaskRules(task_count=2, parallelism=1, max_retries=1)
    >>> rules.next_start()
    (0, 0)
    >>> rules.next_start() is None     # parallelism 1: task 0 is running
    True
    >>> rules.ended(0, ok=False); rules.next_start()
    (0, 1)
    """

    task_count: int
    parallelism: int = 0
    max_retries: int = DEFAULT_MAX_RETRIES
    attempts: dict[int, int] = field(default_factory=dict)  # task -> attempts started
    running: set[int] = field(default_factory=set)
    succeeded: set[int] = field(default_factory=set)
    failed: set[int] = field(default_factory=set)

    def next_start(self) -> tuple[int, int] | None:
        """Mark the next task attempt as running and return ``(task index, attempt number)``,
        or ``None`` when none may start now (parallelism reached, a task failed for good, or
        every task started)."""
        limit = self.parallelism or self.task_count
        if self.failed or len(self.running) >= limit:
            return None
        for index in range(self.task_count):
            if index in self.running or index in self.succeeded:
                continue
            started = self.attempts.get(index, 0)
            if started > self.max_retries:
                continue
            self.attempts[index] = started + 1
            self.running.add(index)
            return index, started
        return None

    def ended(self, index: int, *, ok: bool) -> None:
        """Record that task ``index``'s running attempt ended, succeeding or not."""
        self.running.discard(index)
        if ok:
            self.succeeded.add(index)
        elif self.attempts.get(index, 0) > self.max_retries:
            self.failed.add(index)

    @property
    def done(self) -> bool:
        """No attempt runs and none will start: every task succeeded, or one failed for good."""
        return not self.running and (bool(self.failed) or len(self.succeeded) == self.task_count)

    @property
    def state(self) -> str:
        """``"SUCCEEDED"``, ``"FAILED"`` or ``"RUNNING"``."""
        if self.failed and not self.running:
            return "FAILED"
        if len(self.succeeded) == self.task_count:
            return "SUCCEEDED"
        return "RUNNING"


def started_execution(excerpt: str) -> str | None:
    """The ID of the Cloud Run execution an attempt's answer names (the Admin API's answer to
    ``jobs/J:run``: v2's operation ``…/executions/export-x7k2p``, v1's ``Execution`` whose
    ``metadata.name`` is the ID), or ``None``; the dashboard's ``executionId`` reads it so."""
    found = re.search(r"/executions/([a-z0-9-]+)", excerpt)
    if found is None and '"kind": "Execution"' in excerpt:
        found = re.search(r'"name": "([a-z][-a-z0-9]*)"', excerpt)
    return found[1] if found else None


def run_execution(excerpts: Iterable[str | None]) -> str | None:
    """The ID of the Cloud Run execution a run's last attempt that started one started (its
    RunJob's 200 says nothing of how the execution went), or ``None``.

    :param excerpts: the response excerpts of the run's attempts, in order (``None``: none).
    """
    ids = (started_execution(text or "") for text in reversed([*excerpts]))
    return next(filter(None, ids), None)


def execution_reason(record: Mapping[str, Any]) -> str:
    """Why an execution did not succeed, from its record (``GET /_emulator/executions``): the
    first failed task's (by index) last failed attempt's last line of stderr (else how it was
    stopped, or its exit status), and how many tasks it never started — the same whichever of
    the tasks running at once failed first; ``""`` for a succeeded or running one.

    >>> execution_reason({"state": "FAILED", "cancelledCount": 1, "taskAttempts": [
    ...     {"index": 0, "attempt": 0, "exitCode": 1, "stderr": "Traceback…\\nno luck\\n"}]})
    'task 0: no luck; 1 task(s) never started (cancelled)'
    >>> execution_reason({"state": "FAILED", "taskAttempts": [
    ...     {"index": 1, "attempt": 0, "exitCode": 3, "stderr": "task 1: disk full"}]})
    'task 1: disk full'
    >>> execution_reason({"state": "CANCELLED", "cancelledCount": 2, "taskAttempts": [
    ...     {"index": 0, "attempt": 0, "exitCode": -15, "stopped": "cancelled"}]})
    'task 0: cancelled; 1 task(s) never started (cancelled)'
    >>> execution_reason({"state": "RUNNING", "taskAttempts": [  # a retry to come
    ...     {"index": 0, "attempt": 0, "stopped": "timeout"}]})
    ''
    """
    failures: dict[int, str] = {}
    if record["state"] not in ("SUCCEEDED", "RUNNING"):
        for attempt in sorted(
            record.get("taskAttempts", []), key=lambda a: (a["index"], a.get("attempt", 0))
        ):
            shown = attempt.get("stopped") or str(attempt.get("exitCode", "…"))
            if shown not in ("0", "…"):
                said = str(attempt.get("stderr") or "").strip().splitlines()
                stopped = shown in ("timeout", "interrupted", "cancelled")
                line = shown if stopped else said[-1] if said else f"exit {shown}"
                task = f"task {attempt['index']}: "  # (once: a task may print its own index)
                failures[attempt["index"]] = line if line.startswith(task) else task + line
    reason = failures[min(failures)] if failures else ""
    attempts = record.get("taskAttempts", [])
    cut = sum(1 for attempt in attempts if attempt.get("stopped") == "cancelled")
    if never := record.get("cancelledCount", 0) - cut:  # a failure or a cancel came first
        reason += f"{'; ' if reason else ''}{never} task(s) never started (cancelled)"
    return reason


def tasks_complete(record: Mapping[str, Any]) -> str:
    """The tasks of an execution's record that succeeded, of all, as ``gcloud run jobs
    executions list`` shows them: ``"2 / 3"``."""
    return f"{record['succeededCount']} / {record['taskCount']}"


def execution_summary(record: Mapping[str, Any], *, reason: bool = True) -> str:
    """An execution's state, :func:`tasks_complete` and (with ``reason``)
    :func:`execution_reason`, from its record: ``"FAILED (2 / 3 tasks; task 2: locked)"``,
    ``"SUCCEEDED (3 / 3 tasks)"``."""
    why = execution_reason(record) if reason else ""
    return f"{record['state']} ({tasks_complete(record)} tasks{'; ' + why if why else ''})"
