"""The Cloud Run Admin API, as far as the emulator answers it (docs/cloud-run-jobs.md: "The
URIs the emulator answers"): :class:`CloudRunAdminApi` answers ``jobs/J:run`` (v2, and v1 on
``REGION-run.googleapis.com``) and the v2 REST reads of jobs, executions and operations that
Google's ``google-cloud-run`` client makes; :class:`GoogleApisTransport` routes a scheduler
attempt to it instead of to Google.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from werkzeug.wrappers import Request, Response

from ...domain.cloud_run import CloudRunJob, parse_run_request
from ...domain.errors import ApiError, InvalidArgument, NotFound, Unimplemented, show_value
from ...domain.outcomes import Failure
from ...domain.paging import bounded_page_size, next_page_token, page_position
from ...wire import CLOUD_RUN_REGIONAL_HOST, JOB_NAME_HEADER, format_timestamp, is_cloud_run_host
from ..delivery.in_process import MountTransport
from ..delivery.tokens import TokenAuthority
from ..delivery.transports import DeliveryRequest, Transport, TransportResult
from .executions import CloudRun, Execution

_V2 = re.compile(
    r"^/v2/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/"
    r"(?:jobs(?:/(?P<job>[^/:]+)(?::(?P<verb>run)|/executions(?:/(?P<execution>[^/:]+)"
    r"(?::(?P<cancel>cancel))?)?)?)?"
    r"|operations/(?P<operation>[^/]+))$"
)
#: Any method of the v2 Admin API's jobs, executions and operations (those not served: 501).
_V2_METHOD = re.compile(r"^/v2/projects/[^/]+/locations/[^/]+/(?:jobs|operations)(?:[/:]|$)")
_V1_RUN = re.compile(
    r"^/apis/run\.googleapis\.com/v1/namespaces/(?P<project>[^/]+)/jobs/(?P<job>[^/:]+):run$"
)
#: The most executions a page of the Admin API's list holds, and its default (Cloud Run documents
#: neither: pinned, docs/differences-from-production.md).
EXECUTIONS_PAGE_SIZE = 100
#: Paths the app answers on the daemon's port.
PATH_PREFIXES = ("/v2/projects/", "/apis/run.googleapis.com/")
#: The ``WWW-Authenticate`` header of Google's 401 answers.
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'}
#: Why a task failed, in Cloud Run's words, by why the emulator stopped it (else it exited).
_WHY_FAILED = {"timeout": "The configured timeout was reached."}
#: The ``Completed`` condition's message of an execution that ended ``CANCELLED`` (its reason).
_WHY_CANCELLED = {
    "CANCELLED": "The execution was cancelled.",
    "INTERRUPTED": "The emulator stopped while the execution ran.",
}
#: The ``Completed`` condition's state by execution state (else ``CONDITION_FAILED``).
_CONDITIONS = {"RUNNING": "CONDITION_PENDING", "SUCCEEDED": "CONDITION_SUCCEEDED"}


def unauthenticated(authorization: str | None, method: str) -> dict[str, Any]:
    """Google's 401 body for a request without an OAuth access token: ``CREDENTIALS_MISSING``
    when there is no ``Authorization``, ``ACCESS_TOKEN_TYPE_UNSUPPORTED`` for another kind of
    token (an OIDC ID token), as Google APIs answer (the ``google.rpc.ErrorInfo`` reasons of
    cloud.google.com/apis/design/errors)."""
    missing = not authorization
    problem = (
        "is missing required authentication credential"
        if missing
        else "had invalid authentication credentials"
    )
    return {
        "error": {
            "code": 401,
            "message": f"Request {problem}. Expected OAuth 2 access token, login cookie or "
            "other valid authentication credential. See "
            "https://developers.google.com/identity/sign-in/web/devconsole-project.",
            "status": "UNAUTHENTICATED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "CREDENTIALS_MISSING" if missing else "ACCESS_TOKEN_TYPE_UNSUPPORTED",
                    "domain": "googleapis.com",
                    "metadata": {"service": "run.googleapis.com", "method": method},
                }
            ],
        }
    }


def _json(body: Any, status: int = 200, **headers: str) -> Response:
    return Response(json.dumps(body), status, headers, mimetype="application/json")


def _v2_container(job: CloudRunJob) -> dict[str, Any]:
    program, args = job.argv[: job.command_length], job.argv[job.command_length :]
    container: dict[str, Any] = {"image": job.image, "command": list(program)}
    if job.container:  # (trial 119: overrides had to name it, and a describe did not show it)
        container["name"] = job.container
    if args:
        container["args"] = list(args)
    if job.env:
        container["env"] = [{"name": k, "value": v} for k, v in job.env]
    return container


def _v2_template(job: CloudRunJob) -> dict[str, Any]:
    return {
        "taskCount": job.task_count,
        "parallelism": job.parallelism,
        "template": {
            "containers": [_v2_container(job)],
            "maxRetries": job.max_retries,
            "timeout": f"{job.timeout_seconds:g}s",
        },
    }


def v2_job(job: CloudRunJob, executions: list[Execution]) -> dict[str, Any]:
    """The v2 REST ``Job`` of a defined job with its ``executions`` (oldest first): their count
    and the newest as ``latestCreatedExecution``."""
    latest = {}
    if executions:
        last = executions[-1]
        state = last.state if last.state in ("RUNNING", "SUCCEEDED", "CANCELLED") else "FAILED"
        latest = {"name": last.name, "createTime": format_timestamp(last.create_time)}
        latest["completionStatus"] = f"EXECUTION_{state}"
        if last.completion_time is not None:
            latest["completionTime"] = format_timestamp(last.completion_time)
    return {
        "name": job.name,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, job.name)),
        "generation": "1",
        "launchStage": "GA",
        "template": _v2_template(job),
        "executionCount": len(executions),
        **({"latestCreatedExecution": latest} if latest else {}),
    }


def v2_execution(execution: Execution) -> dict[str, Any]:
    """The v2 REST ``Execution``: counts, times and its ``Completed`` condition; the
    ``metadata`` of the ``Operation`` that ``jobs/J:run`` answers
    (cloud.google.com/run/docs/reference/rest/v2/projects.locations.jobs/run)."""
    job = execution.job
    completion = execution.completion_time
    return {
        "name": execution.name,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, execution.name)),
        "job": job.job_id,
        "createTime": format_timestamp(execution.create_time),
        "startTime": format_timestamp(execution.create_time),
        "launchStage": "GA",
        **_v2_template(job),
        **{f"{k}Count": v for k, v in execution.counts().items()},
        "conditions": [_completed(execution)],
        "reconciling": execution.state == "RUNNING",
        **({} if completion is None else {"completionTime": format_timestamp(completion)}),
    }


def _completed(execution: Execution) -> dict[str, Any]:
    """The execution's ``Completed`` condition; an ended one has its ``lastTransitionTime``,
    and a failed one says which task failed, and why, in Cloud Run's words (trial 151: it said
    neither): ``Task J-x-task0 failed with message: The container exited with an error.``, with
    the ``executionReason`` ``NON_ZERO_EXIT_CODE``."""
    condition: dict[str, Any] = {
        "type": "Completed",
        "state": _CONDITIONS.get(execution.state, "CONDITION_FAILED"),
    }
    if execution.completion_time is not None:
        condition["lastTransitionTime"] = format_timestamp(execution.completion_time)
    failed = [a for a in execution.attempts if a.end is not None and not a.ok]
    if execution.state == "FAILED" and failed:
        task = f"{execution.execution_id}-task{failed[-1].index}"
        why = _WHY_FAILED.get(failed[-1].stopped, "The container exited with an error.")
        condition["message"] = f"Task {task} failed with message: {why}"
        condition["executionReason"] = "NON_ZERO_EXIT_CODE"
    elif execution.state in _WHY_CANCELLED:
        condition["message"] = _WHY_CANCELLED[execution.state]
        condition["executionReason"] = "CANCELLED"
    return condition


def v1_execution(execution: Execution) -> dict[str, Any]:
    """The v1 (Knative) ``Execution`` the v1 ``jobs/J:run`` answers
    (cloud.google.com/run/docs/reference/rest/v1/namespaces.jobs/run)."""
    job = execution.job
    return {
        "apiVersion": "run.googleapis.com/v1",
        "kind": "Execution",
        "metadata": {
            "name": execution.execution_id,
            "namespace": job.project,
            "labels": {
                "run.googleapis.com/job": job.job_id,
                "cloud.googleapis.com/location": job.location,
            },
            "creationTimestamp": format_timestamp(execution.create_time),
        },
        "spec": {
            "parallelism": job.parallelism,
            "taskCount": job.task_count,
            "template": {
                "spec": {
                    "containers": [_v2_container(job)],
                    "maxRetries": job.max_retries,
                    "timeoutSeconds": str(int(job.timeout_seconds)),
                }
            },
        },
        "status": {"observedGeneration": 1},
    }


class CloudRunAdminApi:
    """The Cloud Run Admin API's ``jobs`` and ``executions`` methods over
    :class:`~scheduler_emulator.runtime.cloud_run.executions.CloudRun` (a WSGI app).

    :param cloud_run: the defined jobs and their executions.
    :param tokens: refuse a request without an OAuth access token this authority minted (401),
        as Google does; ``None``: answer any (the daemon's port serves the app so).
    :param default_location: the location of a v1 request without a regional host.
    """

    def __init__(
        self, cloud_run: CloudRun, tokens: TokenAuthority | None, default_location: str
    ) -> None:
        self.cloud_run = cloud_run
        self.tokens = tokens
        self.default_location = default_location

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        request = Request(environ)
        try:
            response = self.dispatch(request)
        except ApiError as exc:
            response = _json(exc.to_envelope(), exc.http_status)
        return response(environ, start_response)

    def dispatch(self, request: Request) -> Response:
        """Answer one request. :raises ApiError: for the errors the Admin API answers."""
        path = request.path
        v1 = _V1_RUN.match(path)
        match = v1 or _V2.match(path)
        served = (  # what was asked first: a reason is cut at 160 characters (trial 216)
            f"Not served: {request.method} {path}. A job runs with POST "
            "/v2/projects/P/locations/L/jobs/J:run (or v1's /apis/run.googleapis.com/v1/"
            "namespaces/P/jobs/J:run); the emulator also answers the v2 jobs and executions "
            "reads, executions/E:cancel and operation gets"
        )
        cancel = not v1 and match is not None and match["cancel"]
        verb = v1 or cancel or match and match["verb"]
        answered = verb or match and request.method in ("GET", "HEAD")
        if not answered and _V2_METHOD.match(path):
            raise Unimplemented(
                f"{served}; not this method of that API (nor tasks, create, update, delete…): an "
                "execution's tasks are in GET /_emulator/executions/E (taskAttempts) and "
                "scheduler-emulator executions --json."
            )
        if match is None:
            raise NotFound(f"{served}.")
        method = "v1.Jobs.RunJob" if v1 else f"v2.Jobs.{'RunJob' if match['verb'] else 'Get'}"
        method = "v2.Executions.CancelExecution" if cancel else method
        authorization = request.headers.get("Authorization")
        token = (authorization or "").removeprefix("Bearer ").strip()
        if self.tokens is not None and self.tokens.lookup(token) is None:  # none is minted as ""
            refusal = unauthenticated(authorization, f"google.cloud.run.{method}")
            return _json(refusal, 401, **_CHALLENGE)
        if verb and request.method != "POST":
            raise NotFound(f"The method {request.method} {path} is not found.")
        if v1 is not None:
            host = CLOUD_RUN_REGIONAL_HOST.match((request.host or "").split(":")[0])
            location = host["region"] if host else self.default_location
            job = self.cloud_run.find(v1["project"], location, v1["job"])
            execution = self._run(job, request, v1=True)
            return _json(v1_execution(execution) if execution else {})
        project, location = match["project"], match["location"]
        if match["operation"] is not None:
            return _json(self._operation(project, location, match["operation"]))
        jobs = [j for j in self.cloud_run.jobs() if j.location == location]
        jobs = [j for j in jobs if j.project == project or project.isdigit()]
        if match["job"] is None:
            return _json({"jobs": [v2_job(j, self._executions(j)) for j in jobs]})
        if match["job"] == "-" and path.endswith("/executions"):  # every job's, as Cloud Run's
            return _json(self._executions_page(request, {j.name for j in jobs}))
        job = self.cloud_run.find(project, location, match["job"])
        if match["verb"]:
            execution = self._run(job, request, v1=False)
            if execution is None:  # validateOnly: checked, nothing runs
                operation = f"projects/{project}/locations/{location}/operations/{uuid.uuid4()}"
                return _json({"name": operation, "done": True})
            return _json(self._operation_body(execution, _operation_id(execution.name)))
        if "/executions" not in path:
            return _json(v2_job(job, self._executions(job)))
        if match["execution"] is None:
            return _json(self._executions_page(request, {job.name}))
        found = self.cloud_run.store.get(f"{job.name}/executions/{match['execution']}")
        if found is None:
            raise NotFound(
                f"Resource '{match['execution']}' of kind 'EXECUTION' in region '{location}' "
                f"in project '{project}' does not exist."
            )
        if cancel:  # its operation: done once the execution has ended
            cancelled = self.cloud_run.cancel(found.name)
            return _json(self._operation_body(cancelled, _operation_id(f"{found.name}:cancel")))
        return _json(v2_execution(found))

    def _executions_page(self, request: Request, jobs: set[str]) -> dict[str, Any]:
        """One page of the executions of ``jobs`` (full names), newest first as Cloud Run lists
        them: ``pageSize`` (0 or none: :data:`EXECUTIONS_PAGE_SIZE`, also the most),
        ``pageToken`` (trial 192: every execution came in one answer).

        :raises InvalidArgument: for a page size or token that is not one."""
        text = request.args.get("pageSize", "")
        try:
            size = bounded_page_size(int(text or 0), maximum=EXECUTIONS_PAGE_SIZE)
        except ValueError:
            raise InvalidArgument(
                f"pageSize must be a whole number; got {show_value(text)}.", field="pageSize"
            ) from None
        found: list[Execution] = []
        after = page_position(request.args.get("pageToken", ""))
        one = next(iter(jobs)) if len(jobs) == 1 else None  # (filtered in SQL then)
        while len(found) <= size:  # (the store's rows, newest first, a chunk at a time)
            chunk = self.cloud_run.store.list(job=one, after=after, limit=500, newest_first=True)
            found += [e for e in chunk if e.job.name in jobs]
            if len(chunk) < 500:
                break
            after = chunk[-1].seq
        following = found[size - 1].seq if len(found) > size else None
        token = {"nextPageToken": next_page_token(following)} if following else {}
        return {"executions": [v2_execution(e) for e in found[:size]], **token}

    def _executions(self, job: CloudRunJob) -> list[Execution]:
        return self.cloud_run.store.list(job=job.name, limit=None)

    def _run(self, job: CloudRunJob, request: Request, *, v1: bool) -> Execution | None:
        """Start an execution of ``job`` as the request's body says; ``None`` (nothing runs)
        when it asks only for validation (``validateOnly``)."""
        raw = request.get_data()
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise InvalidArgument(
                f"Invalid JSON payload received. The body is not JSON: "
                f"{raw[:80].decode('utf-8', 'replace')!r}."
            ) from None
        scheduler_job = request.headers.get(JOB_NAME_HEADER, "")
        overrides = parse_run_request(body, v1=v1, container=job.container)
        if body.get("validateOnly"):
            return None
        return self.cloud_run.run(job, overrides, scheduler_job=scheduler_job)

    def _operation_body(self, execution: Execution, operation: str) -> dict[str, Any]:
        """The operation ``operation`` (an ID, kept to be read again: at most 10,000, the
        oldest going first) on ``execution``, done once the execution has ended."""
        operations = self.cloud_run.operations
        operations[operation] = execution.name
        while len(operations) > 10_000:  # bounded: the oldest go first
            operations.pop(next(iter(operations)))
        job = execution.job
        done = execution.state != "RUNNING"
        typed = {"@type": "type.googleapis.com/google.cloud.run.v2.Execution"}
        typed |= v2_execution(execution)
        return {
            "name": f"projects/{job.project}/locations/{job.location}/operations/{operation}",
            "metadata": typed,
            "done": done,
            **({"response": typed} if done else {}),
        }

    def _operation(self, project: str, location: str, operation: str) -> dict[str, Any]:
        name = self.cloud_run.operations.get(operation)
        execution = None if name is None else self.cloud_run.store.get(name)
        if name is None:  # (trial 143: one named before a restart) an execution on record's
            kept = self.cloud_run.store.list(limit=None)
            execution = next((e for e in kept if _operation_id(e.name) == operation), None)
        if execution is None:
            raise NotFound(
                f"Operation 'projects/{project}/locations/{location}/operations/"
                f"{operation}' not found."
            )
        return self._operation_body(execution, operation)


def _operation_id(execution: str) -> str:
    """The ID of the operation that started ``execution`` (its full name): a UUID, as Cloud
    Run's, derived from the name so that it names the same execution after a restart."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, execution))


def _google_host(url: str) -> str:
    """The host of a URL that names ``.googleapis.com``, else ``""`` (most URLs, unparsed)."""
    return (urlsplit(url).hostname or "") if ".googleapis.com" in url else ""


class GoogleApisTransport(MountTransport):
    """The emulator's transport for ``*.googleapis.com`` URLs: Cloud Run Admin API hosts go to
    ``api`` in-process; any other ``*.googleapis.com`` URL fails (``CONNECTION``, nothing sent)
    with a reason naming what the emulator can route; every other URL goes to ``fallback``.

    :param api: the Admin API app (with ``tokens``).
    """

    def __init__(self, api: CloudRunAdminApi, fallback: Transport) -> None:
        super().__init__(fallback=fallback)
        self.api = api

    def find(self, url: str) -> Any:
        """The Admin API app for a Cloud Run Admin API URL, else ``None``."""
        return self.api if is_cloud_run_host(_google_host(url)) else None

    def _refused(self, request: DeliveryRequest) -> TransportResult | None:
        host = _google_host(request.url)
        if host.endswith(".googleapis.com") and not is_cloud_run_host(host):
            return TransportResult(
                failure=Failure.CONNECTION,
                detail=f"Not sent: {host} is not routed; the emulator sends nothing to Google. "
                "Of *.googleapis.com it answers only the Cloud Run Admin API's jobs/J:run "
                "(run.googleapis.com, REGION-run.googleapis.com) for jobs given with "
                "--cloud-run-jobs.",
            )
        return None

    def can_start(self, request: DeliveryRequest) -> bool:
        """A Google API URL is answered in :meth:`send`, never started on the wire."""
        return self._refused(request) is None and super().can_start(request)

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Answer in-process, refuse, or send through the fallback transport."""
        refused = self._refused(request)
        return refused if refused is not None else super().send(request, timeout_seconds)
