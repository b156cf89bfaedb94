"""validate_job: every rule of spec §2, §3.2, §3.3, §3.5, §11.1 and §15 with its error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from scheduler_emulator import HttpTarget, Job, RetryConfig
from scheduler_emulator.domain.errors import INVALID_SCHEDULE_MESSAGE, InvalidArgument
from scheduler_emulator.domain.names import JOB_NAME_FORMAT_MESSAGE
from scheduler_emulator.domain.resources import (
    AppEngineHttpTarget,
    AppEngineRouting,
    HttpMethod,
    OAuthToken,
    OidcToken,
    PubsubTarget,
    with_defaults,
)
from scheduler_emulator.domain.validation import (
    MAX_HEADERS_BYTES,
    MAX_JOB_SIZE_BYTES,
    encoded_uri_length,
    job_size_bytes,
    validate_job,
)

NAME = "projects/my-project/locations/us-central1/jobs/nightly"
URI = "http://127.0.0.1:8000/_triggers/timer/nightly"
SA = "scheduler-invoker@my-project.iam.gserviceaccount.com"


def http_job(**target: Any) -> Job:
    """A valid HTTP job; ``target`` overrides HttpTarget fields."""
    fields: dict[str, Any] = {"uri": URI}
    fields.update(target)
    return with_defaults(Job(name=NAME, schedule="0 2 * * *", http_target=HttpTarget(**fields)))


def app_engine_job(**target: Any) -> Job:
    """A valid App Engine job; ``target`` overrides AppEngineHttpTarget fields."""
    return with_defaults(
        Job(name=NAME, schedule="0 2 * * *", app_engine_http_target=AppEngineHttpTarget(**target))
    )


def pubsub_job(**target: Any) -> Job:
    """A valid Pub/Sub job; ``target`` overrides PubsubTarget fields."""
    fields: dict[str, Any] = {"topic_name": "projects/my-project/topics/t", "data": b"x"}
    fields.update(target)
    return with_defaults(Job(name=NAME, schedule="0 2 * * *", pubsub_target=PubsubTarget(**fields)))


def with_job(**changes: Any) -> Callable[[], Job]:
    """A factory for the valid HTTP job with top-level ``changes``."""
    return lambda: replace(http_job(), **changes)


def with_retry(**changes: Any) -> Callable[[], Job]:
    """A factory for the valid HTTP job with RetryConfig ``changes``."""
    return lambda: replace(http_job(), retry_config=replace(RetryConfig(), **changes))


def seconds(n: float) -> timedelta:
    return timedelta(seconds=n)


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


BIG_HEADERS = {f"X-H{i}": "v" * 1000 for i in range(82)}

INVALID_JOBS = [
    # §2 names
    pytest.param(with_job(name="nameJob"), JOB_NAME_FORMAT_MESSAGE, "name", id="bare-job-id"),
    pytest.param(with_job(name=""), JOB_NAME_FORMAT_MESSAGE, "name", id="empty-name"),
    pytest.param(
        with_job(name="projects/p/locations/us-central1/jobs/bad.id"),
        'name has an invalid job ID "bad.id": use only letters, digits, hyphens and underscores.',
        "name",
        id="job-id-with-period",
    ),
    pytest.param(
        with_job(name="projects/p/locations/us-central1/jobs/" + "a" * 501),
        "name has a job ID of 501 characters; the maximum is 500.",
        "name",
        id="job-id-too-long",
    ),
    pytest.param(
        with_job(name="projects/p q/locations/us-central1/jobs/j"),
        'name has an invalid project ID "p q": use only letters, digits, hyphens, colons and '
        "periods.",
        "name",
        id="project-with-space",
    ),
    pytest.param(
        with_job(name="projects/p/locations/Us-Central1/jobs/j"),
        'name has an invalid location ID "Us-Central1": expected a location such as "us-central1".',
        "name",
        id="location-not-p18",
    ),
    # §3.2 targets
    pytest.param(
        with_job(http_target=None),
        "A job needs exactly one target (httpTarget, appEngineHttpTarget or pubsubTarget); "
        "got none.",
        "target",
        id="no-target",
    ),
    pytest.param(
        with_job(pubsub_target=PubsubTarget("projects/my-project/topics/t", data=b"x")),
        "A job needs exactly one target; got httpTarget and pubsubTarget.",
        "target",
        id="two-targets",
    ),
    pytest.param(
        with_job(app_engine_http_target=AppEngineHttpTarget()),
        "A job needs exactly one target; got httpTarget and appEngineHttpTarget.",
        "target",
        id="http-and-app-engine-targets",
    ),
    # §3.2 schedule and time zone (§7, §8, P10)
    pytest.param(with_job(schedule=""), INVALID_SCHEDULE_MESSAGE, "schedule", id="no-schedule"),
    pytest.param(
        with_job(schedule="   "), INVALID_SCHEDULE_MESSAGE, "schedule", id="blank-schedule"
    ),
    pytest.param(
        with_job(schedule="0 0 2 * * *"),
        INVALID_SCHEDULE_MESSAGE,
        "schedule",
        id="six-field-cron",
    ),
    pytest.param(
        with_job(schedule="61 * * * *"), INVALID_SCHEDULE_MESSAGE, "schedule", id="minute-61"
    ),
    pytest.param(
        with_job(schedule="every fortnight"),
        INVALID_SCHEDULE_MESSAGE,
        "schedule",
        id="unsupported-english",
    ),
    pytest.param(
        with_job(time_zone="Mars/Olympus_Mons"),
        INVALID_SCHEDULE_MESSAGE,
        "timeZone",
        id="unknown-time-zone",
    ),
    pytest.param(
        with_job(time_zone="EST"), INVALID_SCHEDULE_MESSAGE, "timeZone", id="legacy-abbreviation"
    ),
    # §3.2 description
    pytest.param(
        with_job(description="d" * 501),
        "description must be at most 500 characters; got 501.",
        "description",
        id="description-501-characters",
    ),
    # §3.2 attemptDeadline
    pytest.param(
        with_job(attempt_deadline=seconds(14.5)),
        "attemptDeadline of an HTTP target must be between 15s and 1800s; got 14.5s.",
        "attemptDeadline",
        id="http-deadline-below-15s",
    ),
    pytest.param(
        with_job(attempt_deadline=timedelta(minutes=30, microseconds=1)),
        "attemptDeadline of an HTTP target must be between 15s and 1800s; got 1800.000001s.",
        "attemptDeadline",
        id="http-deadline-above-30min",
    ),
    pytest.param(
        with_job(attempt_deadline=seconds(-20)),
        "attemptDeadline of an HTTP target must be between 15s and 1800s; got -20s.",
        "attemptDeadline",
        id="http-deadline-negative",
    ),
    pytest.param(
        lambda: replace(app_engine_job(), attempt_deadline=seconds(10)),
        "attemptDeadline of an App Engine target must be between 15s and 86415s; got 10s.",
        "attemptDeadline",
        id="app-engine-deadline-below-15s",
    ),
    pytest.param(
        lambda: replace(app_engine_job(), attempt_deadline=seconds(86416)),
        "attemptDeadline of an App Engine target must be between 15s and 86415s; got 86416s.",
        "attemptDeadline",
        id="app-engine-deadline-above-24h15s",
    ),
    # §3.3 HttpTarget.uri
    pytest.param(
        lambda: http_job(uri=""), "httpTarget.uri is required.", "httpTarget.uri", id="no-uri"
    ),
    pytest.param(
        lambda: http_job(uri="ftp://x.test/"),
        'httpTarget.uri must start with http:// or https://; got "ftp://x.test/".',
        "httpTarget.uri",
        id="ftp-uri",
    ),
    pytest.param(
        lambda: http_job(uri="/relative/path"),
        'httpTarget.uri must start with http:// or https://; got "/relative/path".',
        "httpTarget.uri",
        id="relative-uri",
    ),
    pytest.param(
        lambda: http_job(uri="http:example.com"),
        'httpTarget.uri must start with http:// or https://; got "http:example.com".',
        "httpTarget.uri",
        id="uri-without-slashes",
    ),
    pytest.param(
        lambda: http_job(uri="http:///path"),
        'httpTarget.uri must be a URL with a valid host and port; got "http:///path".',
        "httpTarget.uri",
        id="uri-without-host",
    ),
    pytest.param(
        lambda: http_job(uri="http://host:99999/"),
        'httpTarget.uri must be a URL with a valid host and port; got "http://host:99999/".',
        "httpTarget.uri",
        id="uri-with-bad-port",
    ),
    pytest.param(
        lambda: http_job(uri="https://x.test/" + "a" * 2069),
        "httpTarget.uri must be at most 2083 characters after percent-encoding; got 2084.",
        "httpTarget.uri",
        id="uri-2084-characters",
    ),
    pytest.param(
        lambda: http_job(uri="https://x.test/" + " " * 690),
        "httpTarget.uri must be at most 2083 characters after percent-encoding; got 2085.",
        "httpTarget.uri",
        id="uri-too-long-once-spaces-are-encoded",
    ),
    # §3.3 body vs method
    pytest.param(
        lambda: http_job(http_method=HttpMethod.GET, body=b"plain text"),
        "httpTarget.body is only allowed with httpMethod POST, PUT or PATCH; got httpMethod GET.",
        "httpTarget.body",
        id="body-with-get",
    ),
    pytest.param(
        lambda: http_job(http_method=HttpMethod.DELETE, body=b"x"),
        "httpTarget.body is only allowed with httpMethod POST, PUT or PATCH; got httpMethod "
        "DELETE.",
        "httpTarget.body",
        id="body-with-delete",
    ),
    pytest.param(
        lambda: http_job(http_method=HttpMethod.HEAD, body=b"x"),
        "httpTarget.body is only allowed with httpMethod POST, PUT or PATCH; got httpMethod HEAD.",
        "httpTarget.body",
        id="body-with-head",
    ),
    pytest.param(
        lambda: http_job(http_method=HttpMethod.OPTIONS, body=b"x"),
        "httpTarget.body is only allowed with httpMethod POST, PUT or PATCH; got httpMethod "
        "OPTIONS.",
        "httpTarget.body",
        id="body-with-options",
    ),
    # §3.3 headers
    pytest.param(
        lambda: http_job(headers={"X-Team": "a", "x-team": "b"}),
        'httpTarget.headers must have one value per header name; got "X-Team" and "x-team" '
        "(names are case-insensitive).",
        "httpTarget.headers",
        id="duplicate-header-names",
    ),
    pytest.param(
        lambda: http_job(headers=BIG_HEADERS),
        f"httpTarget.headers must total less than 80 KB ({MAX_HEADERS_BYTES} bytes); got "
        f"{82 * 1000 + sum(len(k) for k in BIG_HEADERS) + len('User-AgentGoogle-Cloud-Scheduler')}"
        " bytes.",
        "httpTarget.headers",
        id="headers-over-80KB",
    ),
    pytest.param(
        lambda: http_job(headers={"X Bad": "v"}),
        'httpTarget.headers has an invalid header name "X Bad".',
        "httpTarget.headers",
        id="header-name-with-space",
    ),
    pytest.param(
        lambda: http_job(headers={"X-A": "v\r\nX-Injected: 1"}),
        "httpTarget.headers has a line break or NUL in the value of 'X-A': 'v\\r\\nX-Injected: 1'.",
        "httpTarget.headers",
        id="header-value-with-line-break",
    ),
    # §3.3 tokens
    pytest.param(
        lambda: http_job(oidc_token=OidcToken(SA), oauth_token=OAuthToken(SA)),
        "httpTarget can have oidcToken or oauthToken, not both.",
        "httpTarget.oauthToken",
        id="oidc-and-oauth",
    ),
    pytest.param(
        lambda: http_job(oidc_token=OidcToken("")),
        "httpTarget.oidcToken.serviceAccountEmail is required.",
        "httpTarget.oidcToken.serviceAccountEmail",
        id="oidc-without-email",
    ),
    pytest.param(
        lambda: http_job(oidc_token=OidcToken("scheduler-invoker")),
        "httpTarget.oidcToken.serviceAccountEmail must be an email address; got "
        '"scheduler-invoker".',
        "httpTarget.oidcToken.serviceAccountEmail",
        id="oidc-email-not-email-shaped",
    ),
    pytest.param(
        lambda: http_job(oauth_token=OAuthToken("")),
        "httpTarget.oauthToken.serviceAccountEmail is required.",
        "httpTarget.oauthToken.serviceAccountEmail",
        id="oauth-without-email",
    ),
    pytest.param(
        lambda: http_job(oauth_token=OAuthToken("a b@c.d")),
        'httpTarget.oauthToken.serviceAccountEmail must be an email address; got "a b@c.d".',
        "httpTarget.oauthToken.serviceAccountEmail",
        id="oauth-email-with-space",
    ),
    # §3.5 App Engine
    pytest.param(
        lambda: app_engine_job(http_method=HttpMethod.PATCH),
        "appEngineHttpTarget.httpMethod must not be PATCH or OPTIONS; got PATCH.",
        "appEngineHttpTarget.httpMethod",
        id="app-engine-patch",
    ),
    pytest.param(
        lambda: app_engine_job(http_method=HttpMethod.OPTIONS),
        "appEngineHttpTarget.httpMethod must not be PATCH or OPTIONS; got OPTIONS.",
        "appEngineHttpTarget.httpMethod",
        id="app-engine-options",
    ),
    pytest.param(
        lambda: app_engine_job(relative_uri="run"),
        'appEngineHttpTarget.relativeUri must start with "/"; got "run".',
        "appEngineHttpTarget.relativeUri",
        id="app-engine-relative-uri-without-slash",
    ),
    pytest.param(
        lambda: app_engine_job(relative_uri="/run now"),
        'appEngineHttpTarget.relativeUri must not contain spaces; got "/run now".',
        "appEngineHttpTarget.relativeUri",
        id="app-engine-relative-uri-with-space",
    ),
    pytest.param(
        lambda: app_engine_job(relative_uri="/" + "a" * 2083),
        "appEngineHttpTarget.relativeUri must be at most 2083 characters after "
        "percent-encoding; got 2084.",
        "appEngineHttpTarget.relativeUri",
        id="app-engine-relative-uri-too-long",
    ),
    pytest.param(
        lambda: app_engine_job(http_method=HttpMethod.DELETE, body=b"x"),
        "appEngineHttpTarget.body is only allowed with httpMethod POST or PUT; got httpMethod "
        "DELETE.",
        "appEngineHttpTarget.body",
        id="app-engine-body-with-delete",
    ),
    pytest.param(
        lambda: app_engine_job(http_method=HttpMethod.GET, body=b"x"),
        "appEngineHttpTarget.body is only allowed with httpMethod POST or PUT; got httpMethod GET.",
        "appEngineHttpTarget.body",
        id="app-engine-body-with-get",
    ),
    pytest.param(
        lambda: app_engine_job(headers={"X-A": "1", "x-a": "2"}),
        'appEngineHttpTarget.headers must have one value per header name; got "X-A" and "x-a" '
        "(names are case-insensitive).",
        "appEngineHttpTarget.headers",
        id="app-engine-duplicate-headers",
    ),
    # §3.5 Pub/Sub
    pytest.param(
        lambda: pubsub_job(topic_name=""),
        "pubsubTarget.topicName is required.",
        "pubsubTarget.topicName",
        id="pubsub-without-topic",
    ),
    pytest.param(
        lambda: pubsub_job(topic_name="my-topic"),
        'pubsubTarget.topicName must be formatted "projects/<PROJECT_ID>/topics/<TOPIC_ID>"; '
        'got "my-topic".',
        "pubsubTarget.topicName",
        id="pubsub-bare-topic",
    ),
    pytest.param(
        lambda: pubsub_job(topic_name="projects/other/topics/t"),
        'pubsubTarget.topicName must be in the job\'s project "my-project"; got '
        '"projects/other/topics/t".',
        "pubsubTarget.topicName",
        id="pubsub-topic-in-another-project",
    ),
    pytest.param(
        lambda: pubsub_job(data=b"", attributes={}),
        "pubsubTarget must have non-empty data or at least one attribute.",
        "pubsubTarget.data",
        id="pubsub-empty-message",
    ),
    # §11.1 RetryConfig
    pytest.param(
        with_retry(retry_count=9),
        "retryConfig.retryCount must be between 0 and 5; got 9.",
        "retryConfig.retryCount",
        id="retry-count-9",
    ),
    pytest.param(
        with_retry(retry_count=-1),
        "retryConfig.retryCount must be between 0 and 5; got -1.",
        "retryConfig.retryCount",
        id="retry-count-negative",
    ),
    pytest.param(
        with_retry(max_retry_duration=seconds(-1)),
        "retryConfig.maxRetryDuration must not be negative; got -1s.",
        "retryConfig.maxRetryDuration",
        id="negative-max-retry-duration",
    ),
    pytest.param(
        with_retry(min_backoff_duration=seconds(-0.5)),
        "retryConfig.minBackoffDuration must not be negative; got -0.5s.",
        "retryConfig.minBackoffDuration",
        id="negative-min-backoff",
    ),
    pytest.param(
        with_retry(min_backoff_duration=seconds(0), max_backoff_duration=seconds(-5)),
        "retryConfig.maxBackoffDuration must not be negative; got -5s.",
        "retryConfig.maxBackoffDuration",
        id="negative-max-backoff",
    ),
    pytest.param(
        with_retry(min_backoff_duration=seconds(60), max_backoff_duration=seconds(30)),
        "retryConfig.minBackoffDuration must not exceed maxBackoffDuration; got 60s > 30s.",
        "retryConfig.minBackoffDuration",
        id="min-backoff-above-max-backoff",
    ),
    pytest.param(
        with_retry(max_doublings=-1),
        "retryConfig.maxDoublings must not be negative; got -1.",
        "retryConfig.maxDoublings",
        id="negative-max-doublings",
    ),
    # §15 size
    pytest.param(
        lambda: http_job(body=b"x" * MAX_JOB_SIZE_BYTES),
        f"The job must be at most {MAX_JOB_SIZE_BYTES} bytes; got "
        f"{MAX_JOB_SIZE_BYTES + job_size_bytes(http_job(body=b'x')) - 1}.",
        "job",
        id="job-over-1MB",
    ),
]


@pytest.mark.parametrize(("make_job", "message", "field"), INVALID_JOBS)
def test_invalid_job_is_rejected_naming_the_field(
    make_job: Callable[[], Job], message: str, field: str
) -> None:
    assert_invalid(make_job(), message, field)


VALID_JOBS = [
    pytest.param(http_job, id="minimal-http"),
    pytest.param(
        lambda: Job(name=NAME, schedule="0 2 * * *", http_target=HttpTarget(URI)),
        id="raw-job-without-defaults",
    ),
    pytest.param(
        lambda: Job(
            name=NAME,
            schedule="0 2 * * *",
            http_target=HttpTarget(URI, http_method=HttpMethod.HTTP_METHOD_UNSPECIFIED, body=b"x"),
        ),
        id="unspecified-method-counts-as-post-for-body",
    ),
    pytest.param(
        lambda: Job(
            name="projects/example.com:p/locations/us-central1/jobs/" + "j" * 500,
            schedule="0 2 * * *",
            http_target=HttpTarget(URI),
        ),
        id="domain-scoped-project-and-500-char-id",
    ),
    pytest.param(with_job(time_zone="utc"), id="time-zone-utc-lower-case"),
    pytest.param(with_job(time_zone="UTC"), id="time-zone-UTC"),
    pytest.param(with_job(time_zone="America/Los_Angeles"), id="time-zone-iana-region"),
    pytest.param(with_job(schedule="every 5 minutes"), id="english-like-schedule"),
    pytest.param(with_job(description="d" * 500), id="description-500-characters"),
    pytest.param(with_job(description="é" * 500), id="description-counts-characters"),
    pytest.param(with_job(attempt_deadline=seconds(15)), id="http-deadline-15s"),
    pytest.param(with_job(attempt_deadline=timedelta(minutes=30)), id="http-deadline-30min"),
    pytest.param(with_job(attempt_deadline=None), id="http-deadline-unset"),
    pytest.param(
        lambda: replace(app_engine_job(), attempt_deadline=timedelta(0)),
        id="app-engine-deadline-0",
    ),
    pytest.param(
        lambda: replace(app_engine_job(), attempt_deadline=seconds(15)),
        id="app-engine-deadline-15s",
    ),
    pytest.param(
        lambda: replace(app_engine_job(), attempt_deadline=timedelta(hours=24, seconds=15)),
        id="app-engine-deadline-24h15s",
    ),
    pytest.param(
        lambda: replace(pubsub_job(), attempt_deadline=timedelta(hours=99)),
        id="pubsub-deadline-ignored",
    ),
    pytest.param(lambda: http_job(uri="HTTPS://x.test/"), id="upper-case-scheme"),
    pytest.param(lambda: http_job(uri="https://x.test/" + "a" * 2068), id="uri-2083-characters"),
    pytest.param(lambda: http_job(uri="http://[::1]:8080/x"), id="ipv6-uri"),
    pytest.param(lambda: http_job(http_method=HttpMethod.PUT, body=b"x"), id="body-with-put"),
    pytest.param(lambda: http_job(http_method=HttpMethod.PATCH, body=b"x"), id="body-with-patch"),
    pytest.param(lambda: http_job(http_method=HttpMethod.OPTIONS), id="http-options-no-body"),
    pytest.param(lambda: http_job(headers={"X-List": "a, b, c"}), id="header-value-with-commas"),
    pytest.param(
        lambda: http_job(headers={f"X-H{i}": "v" * 1000 for i in range(79)}),
        id="headers-just-under-80KB",
    ),
    pytest.param(lambda: http_job(oidc_token=OidcToken(SA)), id="oidc-without-audience"),
    pytest.param(lambda: http_job(oauth_token=OAuthToken(SA, scope="s")), id="oauth-with-scope"),
    pytest.param(
        lambda: app_engine_job(
            relative_uri="/run?x=1",
            http_method=HttpMethod.PUT,
            body=b"x",
            app_engine_routing=AppEngineRouting(service="worker"),
        ),
        id="app-engine-put-with-body",
    ),
    pytest.param(lambda: app_engine_job(relative_uri=""), id="app-engine-empty-relative-uri"),
    pytest.param(lambda: pubsub_job(data=b"", attributes={"k": "v"}), id="pubsub-attributes-only"),
    pytest.param(with_retry(retry_count=0), id="retry-count-0"),
    pytest.param(with_retry(retry_count=5), id="retry-count-5"),
    pytest.param(
        with_retry(min_backoff_duration=seconds(30), max_backoff_duration=seconds(30)),
        id="min-backoff-equal-to-max",
    ),
    pytest.param(with_retry(max_doublings=0), id="max-doublings-0"),
    pytest.param(
        lambda: http_job(
            body=b"x" * (MAX_JOB_SIZE_BYTES - job_size_bytes(http_job(body=b"x")) + 1)
        ),
        id="job-exactly-1MB",
    ),
]


@pytest.mark.parametrize("make_job", VALID_JOBS)
def test_valid_job_passes(make_job: Callable[[], Job]) -> None:
    validate_job(make_job())


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
        job = http_job(body=b"12345", headers={"X-A": "b"})
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
