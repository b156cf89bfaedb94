"""validate_job: every rule on a job's fields with its error: names, schedule and time zone,
targets, retry config, sizes and limits, as Google's REST reference states them
(https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs), with our own
messages where Google's are not known.

The cases are jobs given as REST JSON in cases/validation.toml (its header says how a case's
``base`` and ``job`` make the job); those whose values are computed (lengths, sizes) are here.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import replace
from typing import Any

import pytest

from scheduler_emulator import Job, RetryConfig
from scheduler_emulator.domain.codec import parse_job
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.domain.names import JOB_NAME_FORMAT_MESSAGE
from scheduler_emulator.domain.resources import with_defaults
from scheduler_emulator.domain.validation import (
    MAX_HEADERS_BYTES,
    MAX_JOB_SIZE_BYTES,
    encoded_uri_length,
    job_size_bytes,
    validate_job,
)
from tests.support import case_table

NAME = "projects/my-project/locations/us-central1/jobs/nightly"
URI = "http://127.0.0.1:8000/_triggers/timer/nightly"

#: The valid target of each ``base`` of a case, as REST JSON.
VALID_TARGETS: dict[str, tuple[str, dict[str, Any]]] = {
    "http": ("httpTarget", {"uri": URI}),
    "app-engine": ("appEngineHttpTarget", {}),
    "pubsub": ("pubsubTarget", {"topicName": "projects/my-project/topics/tick", "data": "eA=="}),
}


def case_job(base: str, job: dict[str, Any]) -> Job:
    """The job of a case: ``job`` (REST JSON) over the valid job of ``base``.

    For ``"http"``, ``"app-engine"`` and ``"pubsub"``, the fields of ``job`` replace the valid
    job's and those of its target object the valid target's, then the server defaults are
    applied; for ``"raw"``, the name and schedule plus exactly ``job``, no defaults.
    """
    data: dict[str, Any] = {"name": NAME, "schedule": "0 2 * * *"}
    if base == "raw":
        return parse_job({**data, **job})
    key, target = VALID_TARGETS[base]
    data.update(job)
    data[key] = {**target, **job.get(key, {})}
    return with_defaults(parse_job(data))


def http_job(**target: Any) -> Job:
    """The valid HTTP job; ``target`` are httpTarget fields as REST JSON."""
    return case_job("http", {"httpTarget": target})


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def assert_invalid(job: Job, message: str, field: str) -> InvalidArgument:
    """Validate ``job`` and check the INVALID_ARGUMENT error's status, message and field."""
    with pytest.raises(InvalidArgument) as caught:
        validate_job(job)
    exc = caught.value
    assert exc.http_status == 400
    assert exc.status == "INVALID_ARGUMENT"
    assert exc.message == message
    assert [v.field for v in exc.violations] == [field]
    return exc


def body_refused(base: str, allowed: str, methods: list[str]) -> list[Any]:
    """The cases of a body with each of ``methods`` on the target of ``base``: only the
    ``allowed`` methods carry one."""
    key = VALID_TARGETS[base][0]
    prefix = "" if base == "http" else f"{base}-"
    return [
        pytest.param(
            base,
            {key: {"httpMethod": method, "body": "eA=="}},
            f"{key}.body is only allowed with httpMethod {allowed}; got httpMethod {method}.",
            f"{key}.body",
            id=f"{prefix}body-with-{method.lower()}",
        )
        for method in methods
    ]


def padded(job: dict[str, Any], path: str, text: str, times: int) -> dict[str, Any]:
    """``job`` (REST JSON) with ``text`` repeated ``times`` times appended to the string at the
    dotted ``path`` (created as ``""`` when absent)."""
    job = copy.deepcopy(job)
    *parents, last = path.split(".")
    node = job
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = node.get(last, "") + text * times
    return job


def long_cases(table: pytest.MarkDecorator) -> list[Any]:
    """The cases of a ``long_…`` table as (base, job, …), the long string put into the job."""
    cases = []
    for param in table.args[1]:
        base, job, path, text, times, *rest = param.values
        cases.append(pytest.param(base, padded(job, path, text, times), *rest, id=param.id))
    return cases


def headers_of(count: int) -> dict[str, Any]:
    """The httpTarget of a job with ``count`` headers of 1000-byte values."""
    return {"httpTarget": {"headers": {f"X-H{i}": "v" * 1000 for i in range(count)}}}


#: The bytes of 82 such headers and the User-Agent the defaults add.
HEADERS_BYTES = (
    82 * 1000 + sum(len(f"X-H{i}") for i in range(82)) + len("User-AgentGoogle-Cloud-Scheduler")
)
HEADERS_MESSAGE = (
    f"httpTarget.headers must total less than 80 KB ({MAX_HEADERS_BYTES} bytes); got "
    f"{HEADERS_BYTES} bytes."
)
#: How much a job with a body of one byte weighs besides the body.
JOB_BESIDES_BODY = job_size_bytes(http_job(body="eA==")) - 1
PUBSUB_BESIDES_DATA = job_size_bytes(case_job("pubsub", {"pubsubTarget": {"data": "eA=="}})) - 1


def size_message(besides: int, what: str = "body") -> str:
    """The refusal of a job whose body (or data) is 1 MB, ``besides`` bytes over the limit
    (trial 78: the body is what to cut, and by how much)."""
    return (
        f"The job is {MAX_JOB_SIZE_BYTES + besides} bytes, {besides} over the limit of 1 MB "
        f"({MAX_JOB_SIZE_BYTES} bytes); its {what} is {MAX_JOB_SIZE_BYTES} bytes of them."
    )


def body_of(size: int) -> dict[str, Any]:
    """The httpTarget of a job whose body is ``size`` bytes."""
    return {"httpTarget": {"body": b64(b"x" * size)}}


# The headers total less than 80 KB (names and values, User-Agent included) and the job at most
# 1 MB (body, headers and strings).
COMPUTED_INVALID_JOBS = [
    *long_cases(case_table(__file__, "long_invalid_jobs")),
    pytest.param(
        "http", headers_of(82), HEADERS_MESSAGE, "httpTarget.headers", id="headers-over-80KB"
    ),
    pytest.param(
        "http",
        body_of(MAX_JOB_SIZE_BYTES),
        size_message(JOB_BESIDES_BODY),
        "job",
        id="job-over-1MB",
    ),
    pytest.param(  # a Pub/Sub job's is its data (trial 189: "body")
        "pubsub",
        {"pubsubTarget": {"data": b64(b"x" * MAX_JOB_SIZE_BYTES)}},
        size_message(PUBSUB_BESIDES_DATA, "data"),
        "job",
        id="pubsub-job-over-1MB",
    ),  # fmt: skip
    *body_refused("http", "POST, PUT or PATCH", ["GET", "DELETE", "HEAD", "OPTIONS"]),
    *body_refused("app-engine", "POST or PUT", ["DELETE", "GET"]),
]
COMPUTED_VALID_JOBS = [
    *long_cases(case_table(__file__, "long_valid_jobs")),
    pytest.param("http", headers_of(79), id="headers-just-under-80KB"),
    pytest.param("http", body_of(MAX_JOB_SIZE_BYTES - JOB_BESIDES_BODY), id="job-exactly-1MB"),
]


@case_table(__file__, "invalid_jobs", *COMPUTED_INVALID_JOBS)
def test_invalid_job_is_rejected_naming_the_field(
    base: str, job: dict[str, Any], message: str, field: str
) -> None:
    assert_invalid(case_job(base, job), message, field)


@case_table(__file__, "valid_jobs", *COMPUTED_VALID_JOBS)
def test_valid_job_passes(base: str, job: dict[str, Any]) -> None:
    validate_job(case_job(base, job))


class TestHelpers:
    @pytest.mark.parametrize(
        ("uri", "length"),
        [
            pytest.param("https://x.test/a?b=c&d=e#f", 26, id="reserved-characters-kept"),
            pytest.param("https://x.test/a b", 20, id="space-encoded-as-3"),
            pytest.param("https://x.test/é", 21, id="non-ascii-encoded-as-utf8"),
            pytest.param("https://x.test/%20", 18, id="existing-escapes-kept"),
        ],
    )
    def test_encoded_uri_length_counts_percent_encoding(self, uri: str, length: int) -> None:
        assert encoded_uri_length(uri) == length

    def test_job_size_counts_body_headers_and_strings(self) -> None:
        job = http_job(body=b64(b"12345"), headers={"X-A": "b"})
        strings = NAME + "0 2 * * *" + "Etc/UTC" + URI
        headers = (
            "X-Ab" + "User-AgentGoogle-Cloud-Scheduler" + "Content-Typeapplication/octet-stream"
        )

        assert job_size_bytes(job) == len(strings) + len(headers) + 5

    def test_first_broken_rule_wins(self) -> None:
        job = replace(http_job(), name="bad", schedule="")

        assert_invalid(job, JOB_NAME_FORMAT_MESSAGE, "name")

    def test_error_renders_as_google_envelope_with_field_violation(self) -> None:
        exc = assert_invalid(
            replace(http_job(), retry_config=RetryConfig(retry_count=9)),
            "retryConfig.retryCount must be between 0 and 5; got 9.",
            "retryConfig.retryCount",
        )

        assert exc.to_envelope() == {
            "error": {
                "code": 400,
                "message": "retryConfig.retryCount must be between 0 and 5; got 9.",
                "status": "INVALID_ARGUMENT",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.BadRequest",
                        "fieldViolations": [
                            {
                                "field": "retryConfig.retryCount",
                                "description": "retryConfig.retryCount must be between 0 and 5; "
                                "got 9.",
                            }
                        ],
                    }
                ],
            }
        }
