"""The REST JSON edge: durations, timestamps, job_from_json and job_to_json. Input is proto3
JSON (camelCase or snake_case names, integer or named enums); output is camelCase with the
defaults the service fills in on create."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_emulator import HttpTarget, Job, RetryConfig, State
from scheduler_emulator.domain.codec import (
    format_duration,
    job_from_json,
    job_to_json,
    parse_duration,
    parse_timestamp,
    status_to_json,
)
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.domain.resources import (
    AppEngineHttpTarget,
    AppEngineRouting,
    HttpMethod,
    OAuthToken,
    OidcToken,
    PubsubTarget,
    Status,
)
from scheduler_emulator.wire import NaiveDatetimeError, format_timestamp
from tests.support import case_table, stored_http_target

NAME = "projects/demo-proj/locations/us-central1/jobs/job1"
SA = "sa@demo-proj.iam.gserviceaccount.com"
FAILURE = "URL_UNREACHABLE-UNREACHABLE_5xx. Original HTTP response code number = 500"

# The body gcloud 528 sends for `gcloud scheduler jobs create http job1 …`, as recorded.
GCLOUD_CREATE_BODY: dict[str, Any] = {
    "httpTarget": {"httpMethod": "POST", "uri": "https://example.com/hook?x=1"},
    "name": NAME,
    "retryConfig": {
        "maxBackoffDuration": "3600s",
        "maxDoublings": 5,
        "minBackoffDuration": "5s",
        "retryCount": 0,
    },
    "schedule": "*/5 * * * *",
    "timeZone": "Etc/UTC",
}

# What google-cloud-scheduler's REST transport sends: integer enums, only populated fields,
# durations as "1.500s".
PYTHON_CLIENT_BODY: dict[str, Any] = {
    "name": "projects/demo-proj/locations/us-central1/jobs/py1",
    "httpTarget": {
        "uri": "https://example.com/hook",
        "httpMethod": 1,
        "headers": {"Content-Type": "application/json"},
        "body": "eyJhIjogMX0K",
    },
    "schedule": "*/5 * * * *",
    "timeZone": "America/Los_Angeles",
    "retryConfig": {"retryCount": 2, "minBackoffDuration": "1.500s"},
    "attemptDeadline": "30s",
}


def minimal(**overrides: Any) -> dict[str, Any]:
    """A minimal valid HTTP job body; ``overrides`` replace top-level keys."""
    body: dict[str, Any] = {
        "name": NAME,
        "schedule": "0 3 * * *",
        "httpTarget": {"uri": "https://svc.example/run"},
    }
    body.update(overrides)
    return body


def http(**target: Any) -> dict[str, Any]:
    """A minimal valid body whose httpTarget has the extra ``target`` fields."""
    return minimal(httpTarget={"uri": "https://svc.example/run", **target})


def with_target(key: str, target: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A minimal valid body whose one target is ``key`` (``"pubsubTarget"``…) = ``target``;
    ``fields`` add or replace top-level keys."""
    return {"name": NAME, "schedule": "0 3 * * *", key: target, **fields}


def retry(**config: Any) -> dict[str, Any]:
    """A minimal valid body with ``retryConfig`` = ``config``."""
    return minimal(retryConfig=config)


def over_minimal(table: pytest.MarkDecorator, *computed: Any) -> pytest.MarkDecorator:
    """Parametrize over a case table whose first value, ``body``, replaces top-level fields of
    the minimal body: the test gets that body as ``data``; ``computed`` cases give it whole."""
    names, params = table.args
    cases = [pytest.param(minimal(**p.values[0]), *p.values[1:], id=p.id) for p in params]
    return pytest.mark.parametrize(["data", *names[1:]], [*cases, *computed])


def raises_invalid(data: Any, **kwargs: Any) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as caught:
        job_from_json(data, **kwargs)
    assert caught.value.http_status == 400
    assert caught.value.status == "INVALID_ARGUMENT"
    return caught.value


class TestParseDuration:
    @case_table(__file__, "valid_durations")
    def test_valid_durations_parse(self, text: str, expected_seconds: float) -> None:
        assert parse_duration(text) == timedelta(seconds=expected_seconds)

    @case_table(__file__, "malformed_durations")
    def test_malformed_strings_are_rejected(self, text: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_duration(text, field="attemptDeadline")

        assert caught.value.message == (
            f"Invalid duration {json.dumps(text)}: expected seconds with up to 9 fractional "
            'digits and an "s" suffix, such as "180s" or "1.500s".'
        )
        assert caught.value.violations[0].field == "attemptDeadline"

    @pytest.mark.parametrize("value", [pytest.param(180, id="int"), pytest.param(1.5, id="float")])
    def test_json_numbers_are_rejected_because_proto3_durations_are_strings(
        self, value: Any
    ) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_duration(value)

        assert caught.value.message == (
            f'Invalid duration {value}: a duration is a JSON string such as "180s" or "1.500s" '
            "(proto3 JSON), not a number."
        )

    def test_durations_beyond_the_proto_range_are_rejected(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_duration("315576000001s")

        assert caught.value.message == (
            'Invalid duration "315576000001s": at most 315576000000 seconds.'
        )

    @pytest.mark.parametrize("digits", ["9" * 5000, "0" * 4999 + "1" * 13])
    def test_thousands_of_digits_are_refused_before_conversion(self, digits: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_duration(digits + "s", field="retryConfig.maxRetryDuration")

        assert caught.value.message.endswith(": at most 315576000000 seconds.")
        assert len(caught.value.message) < 200  # the value is shown shortened
        assert caught.value.violations[0].field == "retryConfig.maxRetryDuration"

    def test_leading_zeros_do_not_count(self) -> None:
        assert parse_duration("0" * 5000 + "180s") == timedelta(seconds=180)


class TestFormatDuration:
    @case_table(__file__, "formatted_durations")
    def test_canonical_shortest_form(self, seconds: float, text: str) -> None:
        assert format_duration(timedelta(seconds=seconds)) == text

    @pytest.mark.parametrize("text", ["3.5s", "1.5000s", "1.500000000s"])
    def test_any_accepted_form_is_reemitted_canonically(self, text: str) -> None:
        assert format_duration(parse_duration(text)) in ("3.500s", "1.500s")

    @given(
        st.timedeltas(
            min_value=-timedelta(seconds=315_576_000_000),
            max_value=timedelta(seconds=315_576_000_000),
        )
    )
    def test_format_then_parse_is_identity(self, value: timedelta) -> None:
        assert parse_duration(format_duration(value)) == value


class TestTimestamps:
    @case_table(__file__, "valid_timestamps")
    def test_rfc3339_with_any_offset_parses_to_utc(self, text: str, expected: datetime) -> None:
        parsed = parse_timestamp(text)

        assert parsed == expected
        assert parsed.tzinfo is UTC

    @case_table(__file__, "other_timestamp_forms")
    def test_other_forms_are_rejected(self, text: Any) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_timestamp(text, field="time")

        assert caught.value.message.startswith(f"Invalid timestamp {json.dumps(text)}")
        assert caught.value.violations[0].field == "time"

    @pytest.mark.parametrize("offset", ["+25:00", "-24:00", "+05:60"])
    def test_an_offset_out_of_range_is_named(self, offset: str) -> None:
        """RFC 3339's offsets run from -23:59 to +23:59 (not Python's wording, and +05:60 is
        not +06:00)."""
        with pytest.raises(InvalidArgument) as caught:
            parse_timestamp(f"2026-12-03T18:00:00{offset}")

        assert caught.value.message == (
            f'Invalid timestamp "2026-12-03T18:00:00{offset}": the UTC offset {offset} is not '
            "from -23:59 to +23:59."
        )

    @case_table(__file__, "formatted_timestamps")
    def test_format_is_utc_with_z(self, value: datetime, text: str) -> None:
        assert format_timestamp(value) == text

    def test_formatting_a_naive_datetime_says_what_to_pass(self) -> None:
        with pytest.raises(NaiveDatetimeError, match="timezone-aware"):
            format_timestamp(datetime(2026, 5, 7, 5, 46))

    @given(st.datetimes(timezones=st.just(UTC), min_value=datetime(1, 1, 2)))
    def test_format_then_parse_is_identity(self, value: datetime) -> None:
        assert parse_timestamp(format_timestamp(value)) == value


class TestJobFromJsonAcceptsRealClients:
    def test_gcloud_create_body_parses(self) -> None:
        job = job_from_json(GCLOUD_CREATE_BODY)

        assert job == Job(
            name=NAME,
            schedule="*/5 * * * *",
            time_zone="Etc/UTC",
            http_target=stored_http_target("https://example.com/hook?x=1"),
            retry_config=RetryConfig(),
            attempt_deadline=timedelta(seconds=180),
        )

    def test_a_timedelta_from_python_is_a_duration(self) -> None:
        """The plugin's keyword dicts (``retry_config={"min_backoff_duration": ...}``) may
        give a ``timedelta``; it was refused quoting its str, "0:00:10" (trial 30)."""
        job = job_from_json(
            {"name": NAME, "schedule": "* * * * *", "http_target": {"uri": "http://x/"},
             "attempt_deadline": timedelta(seconds=30),
             "retry_config": {"min_backoff_duration": timedelta(seconds=10, microseconds=5)}}
        )  # fmt: skip
        assert job.attempt_deadline == timedelta(seconds=30)
        assert job.retry_config.min_backoff_duration == timedelta(seconds=10, microseconds=5)
        with pytest.raises(InvalidArgument, match="must be"):
            job_from_json({"name": NAME, "attempt_deadline": timedelta(days=-100_000_000)})

    def test_python_client_body_with_integer_enums_parses(self) -> None:
        job = job_from_json(PYTHON_CLIENT_BODY)

        assert job.http_target is not None
        assert job.http_target.http_method is HttpMethod.POST
        assert job.http_target.body == b'{"a": 1}\n'
        assert dict(job.http_target.headers) == {
            "Content-Type": "application/json",
            "User-Agent": "Google-Cloud-Scheduler",
        }
        assert job.time_zone == "America/Los_Angeles"
        assert job.retry_config == RetryConfig(
            retry_count=2, min_backoff_duration=timedelta(seconds=1.5)
        )
        assert job.attempt_deadline == timedelta(seconds=30)

    def test_snake_case_keys_are_accepted_at_every_level(self) -> None:
        job = job_from_json(
            {
                "name": NAME,
                "schedule": "0 3 * * *",
                "time_zone": "UTC",
                "attempt_deadline": "60s",
                "http_target": {
                    "uri": "https://svc.example/run",
                    "http_method": "PUT",
                    "oauth_token": {"service_account_email": SA, "scope": "s"},
                },
                "retry_config": {
                    "retry_count": 1,
                    "max_retry_duration": "10s",
                    "min_backoff_duration": "1s",
                    "max_backoff_duration": "2s",
                    "max_doublings": 2,
                },
            }
        )

        assert job.time_zone == "UTC"
        assert job.attempt_deadline == timedelta(seconds=60)
        assert job.http_target is not None
        assert job.http_target.http_method is HttpMethod.PUT
        assert job.http_target.oauth_token == OAuthToken(SA, "s")
        assert job.retry_config == RetryConfig(
            1, timedelta(seconds=10), timedelta(seconds=1), timedelta(seconds=2), 2
        )

    @case_table(__file__, "http_methods", pytest.param(None, "POST", id="null"))
    def test_http_method_as_name_or_integer(self, value: Any, method: str) -> None:
        job = job_from_json(http(httpMethod=value))

        assert job.http_target is not None
        assert job.http_target.http_method is HttpMethod[method]

    @pytest.mark.parametrize(
        "value",
        [pytest.param(3, id="number"), pytest.param("3", id="string"), pytest.param(3.0, id="3.0")],
    )
    def test_int32_as_number_or_numeric_string(self, value: Any) -> None:
        job = job_from_json(retry(retryCount=value, maxDoublings=value))

        assert job.retry_config.retry_count == 3
        assert job.retry_config.max_doublings == 3

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("+/+/", id="standard"),
            pytest.param("-_-_", id="url-safe"),
        ],
    )
    def test_base64_standard_or_url_safe(self, text: str) -> None:
        job = job_from_json(http(body=text))

        assert job.http_target is not None
        assert job.http_target.body == b"\xfb\xff\xbf"

    @case_table(__file__, "padded_base64")
    def test_base64_padded_or_not(self, text: str) -> None:
        import base64

        expected = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

        job = job_from_json(http(body=text))

        assert job.http_target is not None
        assert job.http_target.body == expected

    def test_null_header_values_are_dropped(self) -> None:
        job = job_from_json(http(headers={"X-A": "1", "X-C": None}))

        assert job.http_target is not None
        assert dict(job.http_target.headers) == {"X-A": "1", "User-Agent": "Google-Cloud-Scheduler"}

    def test_null_fields_mean_not_set(self) -> None:
        job = job_from_json(
            minimal(
                description=None,
                retryConfig=None,
                attemptDeadline=None,
                pubsubTarget=None,
                timeZone=None,
            )
        )

        assert job.description == ""
        assert job.retry_config == RetryConfig()
        assert job.attempt_deadline == timedelta(seconds=180)
        assert job.time_zone == "Etc/UTC"

    def test_output_only_fields_are_ignored_once_read(self) -> None:
        job = job_from_json(
            minimal(
                state="PAUSED",
                status={"code": 13, "message": "boom"},
                scheduleTime="2026-05-08T01:00:00Z",
                lastAttemptTime="2026-05-08T01:00:00.5+02:00",
                userUpdateTime="2026-05-08T01:00:00Z",
                schedule_time="2026-05-08T01:00:00Z",
            )
        )

        assert job == job_from_json(minimal())
        assert job.state is State.ENABLED
        assert job.status is None
        assert job.schedule_time is None
        # one of the wrong type or form is refused, as production's JSON front end refuses it
        for wrong in ({"lastAttemptTime": "not even a timestamp"}, {"userUpdateTime": 12}):
            with pytest.raises(InvalidArgument, match="google.protobuf.Timestamp"):
                job_from_json(minimal(**wrong))

    def test_default_name_is_used_when_the_body_has_none(self) -> None:
        body = minimal()
        del body["name"]

        assert job_from_json(body, default_name=NAME).name == NAME
        assert job_from_json({**body, "name": ""}, default_name=NAME).name == NAME

    def test_name_in_the_body_wins_over_default_name(self) -> None:
        other = "projects/demo-proj/locations/us-central1/jobs/other"

        assert job_from_json(minimal(), default_name=other).name == NAME

    def test_pubsub_attempt_deadline_is_ignored(self) -> None:
        job = job_from_json(
            with_target(
                "pubsubTarget",
                {"topicName": "projects/demo-proj/topics/tick", "attributes": {"k": "v"}},
                attemptDeadline="9999s",
            )
        )

        assert job.attempt_deadline is None
        assert job.pubsub_target == PubsubTarget("projects/demo-proj/topics/tick", b"", {"k": "v"})

    def test_app_engine_target_with_output_only_host(self) -> None:
        routing = {"service": "worker", "host": "worker.example.appspot.com"}
        job = job_from_json(
            with_target(
                "appEngineHttpTarget",
                {"httpMethod": "PUT", "appEngineRouting": routing, "body": "e30="},
                attemptDeadline="0s",
            )
        )

        assert job.app_engine_http_target == AppEngineHttpTarget(
            relative_uri="/",
            http_method=HttpMethod.PUT,
            app_engine_routing=AppEngineRouting(service="worker"),
            body=b"{}",
        )

    def test_server_defaults_are_applied(self) -> None:
        job = job_from_json(
            http(
                body="e30=",
                oauthToken={"serviceAccountEmail": SA},
                httpMethod="HTTP_METHOD_UNSPECIFIED",
            )
        )

        assert job.http_target == HttpTarget(
            uri="https://svc.example/run",
            http_method=HttpMethod.POST,
            headers={
                "User-Agent": "Google-Cloud-Scheduler",
                "Content-Type": "application/octet-stream",
            },
            body=b"{}",
            oauth_token=OAuthToken(SA, "https://www.googleapis.com/auth/cloud-platform"),
        )
        assert job.attempt_deadline == timedelta(seconds=180)
        assert job.time_zone == "Etc/UTC"
        assert job.retry_config == RetryConfig(max_doublings=5)


class TestJobFromJsonRejects:
    @over_minimal(case_table(__file__, "unknown_fields"))
    def test_unknown_fields_are_rejected_naming_the_path(
        self, data: dict[str, Any], message: str, field: str
    ) -> None:
        exc = raises_invalid(data)

        assert exc.message == message
        assert exc.violations[0].field == field

    @pytest.mark.parametrize(
        ("key", "meant"),
        [
            ("timezone", '"timeZone" (or time_zone)'),  # trial 226: a Python keyword's slip
            ("time_zon", '"time_zone"'),
            ("scheduel", '"schedule"'),
        ],
    )
    def test_a_misspelt_field_is_named_in_both_spellings_when_either_was_meant(
        self, key: str, meant: str
    ) -> None:
        exc = raises_invalid(minimal(**{key: "x"}))

        assert exc.violations[0].description.endswith(f"; did you mean {meant}?")

    def test_same_field_under_both_spellings_is_rejected(self) -> None:
        exc = raises_invalid(minimal(timeZone="UTC", time_zone="UTC"))

        assert exc.message == (
            'Invalid JSON payload received. "timeZone" and "time_zone" at \'job\' name the '
            "same field."
        )
        assert exc.violations[0].field == "timeZone"

    @over_minimal(case_table(__file__, "wrong_json_types"))
    def test_wrong_json_types_name_field_and_value(
        self, data: dict[str, Any], message: str, field: str, description: str
    ) -> None:
        exc = raises_invalid(data)

        assert exc.message == message
        assert [(v.field, v.description) for v in exc.violations] == [(field, description)]

    def test_a_body_that_is_not_an_object_is_rejected(self) -> None:
        exc = raises_invalid(["not", "a", "job"])

        assert exc.message == (
            "Invalid value at 'job' (type.googleapis.com/google.cloud.scheduler.v1.Job), "
            '["not", "a", "job"]'
        )

    def test_missing_name_without_default_is_rejected(self) -> None:
        body = minimal()
        del body["name"]

        exc = raises_invalid(body)

        assert exc.message == "name is required."
        assert exc.violations[0].field == "name"

    def test_bare_job_id_gets_googles_message(self) -> None:
        exc = raises_invalid(minimal(name="nameJob"))

        assert exc.message == (
            'Job name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/jobs/'
            '<JOB_ID>".'
        )

    @over_minimal(
        case_table(__file__, "validation_rules"),
        pytest.param(
            {"name": NAME, "httpTarget": {"uri": "https://svc.example/run"}},
            "Schedule or time zone is invalid.",
            "schedule",
            id="missing-schedule",
        ),
    )
    def test_validation_rules_apply(self, data: dict[str, Any], message: str, field: str) -> None:
        exc = raises_invalid(data)

        assert exc.message == message
        assert exc.violations[0].field == field


class TestJobToJson:
    def test_python_client_body_renders_like_the_service(self) -> None:
        job = job_from_json(PYTHON_CLIENT_BODY)

        assert job_to_json(job) == {
            "name": "projects/demo-proj/locations/us-central1/jobs/py1",
            "httpTarget": {
                "uri": "https://example.com/hook",
                "httpMethod": "POST",
                "headers": {
                    "Content-Type": "application/json",
                    "User-Agent": "Google-Cloud-Scheduler",
                },
                "body": "eyJhIjogMX0K",
            },
            "schedule": "*/5 * * * *",
            "timeZone": "America/Los_Angeles",
            "state": "ENABLED",
            "retryConfig": {
                "retryCount": 2,
                "maxRetryDuration": "0s",
                "minBackoffDuration": "1.500s",
                "maxBackoffDuration": "3600s",
                "maxDoublings": 5,
            },
            "attemptDeadline": "30s",
        }

    def test_enum_int_renders_state_and_method_as_numbers(self) -> None:
        job = replace(job_from_json(http(httpMethod="PUT")), state=State.PAUSED)

        out = job_to_json(job, enum_int=True)

        assert out["state"] == 2
        assert out["httpTarget"]["httpMethod"] == 4

    def test_output_only_fields_render_per_spec(self) -> None:
        job = replace(
            job_from_json(minimal(description="example")),
            user_update_time=datetime(2026, 5, 7, 5, 46, 25, 29067, tzinfo=UTC),
            schedule_time=datetime(2026, 5, 8, 1, 0, tzinfo=UTC),
            last_attempt_time=datetime(2026, 5, 7, 1, 0, 0, 123000, tzinfo=UTC),
            status=Status(13, FAILURE),
        )

        out = job_to_json(job)

        assert list(out) == [
            "name",
            "description",
            "httpTarget",
            "schedule",
            "timeZone",
            "userUpdateTime",
            "state",
            "status",
            "scheduleTime",
            "lastAttemptTime",
            "retryConfig",
            "attemptDeadline",
        ]
        assert out["description"] == "example"
        assert out["userUpdateTime"] == "2026-05-07T05:46:25.029067Z"
        assert out["scheduleTime"] == "2026-05-08T01:00:00Z"
        assert out["lastAttemptTime"] == "2026-05-07T01:00:00.123000Z"
        assert out["status"] == {"code": 13, "message": FAILURE}

    @pytest.mark.parametrize(
        ("status", "rendered"),
        [
            pytest.param(None, None, id="never-ran-absent"),
            pytest.param(Status(0), {}, id="ok-empty-object"),
            pytest.param(Status(2), {"code": 2}, id="code-without-message"),
            pytest.param(Status(4, "deadline"), {"code": 4, "message": "deadline"}, id="failure"),
        ],
    )
    def test_status_follows_p14(self, status: Status | None, rendered: Any) -> None:
        out = job_to_json(replace(job_from_json(minimal()), status=status))

        assert status_to_json(status) == rendered
        assert out.get("status") == rendered
        assert ("status" in out) is (rendered is not None)

    def test_proto3_defaults_are_omitted_but_service_defaults_shown(self) -> None:
        out = job_to_json(job_from_json(minimal()))

        assert "description" not in out
        assert "scheduleTime" not in out
        assert "body" not in out["httpTarget"]
        assert out["httpTarget"]["httpMethod"] == "POST"
        assert out["attemptDeadline"] == "180s"
        assert out["retryConfig"] == {
            "maxRetryDuration": "0s",
            "minBackoffDuration": "5s",
            "maxBackoffDuration": "3600s",
            "maxDoublings": 5,
        }

    def test_other_targets_render(self) -> None:
        pubsub = job_from_json(
            with_target(
                "pubsubTarget", {"topicName": "projects/demo-proj/topics/tick", "data": "aGk"}
            )
        )
        app_engine = job_from_json(
            with_target("appEngineHttpTarget", {"appEngineRouting": {"service": "worker"}})
        )

        assert job_to_json(pubsub)["pubsubTarget"] == {
            "topicName": "projects/demo-proj/topics/tick",
            "data": "aGk=",
        }
        assert "attemptDeadline" not in job_to_json(pubsub)
        assert job_to_json(app_engine)["appEngineHttpTarget"] == {
            "httpMethod": "POST",
            "appEngineRouting": {"service": "worker"},
            "relativeUri": "/",
        }
        assert job_to_json(app_engine)["attemptDeadline"] == "180s"

    def test_bytes_are_standard_base64_with_padding(self) -> None:
        job = job_from_json(http(body="-_-_8w", headers={"Content-Type": "x/y"}))

        assert job_to_json(job)["httpTarget"]["body"] == "+/+/8w=="


ROUND_TRIP_JOBS = [
    pytest.param(GCLOUD_CREATE_BODY, id="gcloud"),
    pytest.param(PYTHON_CLIENT_BODY, id="python-client"),
    pytest.param(
        minimal(
            description="d",
            attemptDeadline="15.250s",
            httpTarget={
                "uri": "https://svc.example/run",
                "httpMethod": "PATCH",
                "body": "AAEC",
                "oidcToken": {"serviceAccountEmail": SA, "audience": "https://svc.example"},
            },
            retryConfig={
                "retryCount": 5,
                "maxRetryDuration": "3600.000001s",
                "minBackoffDuration": "0s",
                "maxBackoffDuration": "0s",
                "maxDoublings": 0,
            },
        ),
        id="everything-set-max-doublings-0",
    ),
    pytest.param(
        with_target(
            "appEngineHttpTarget",
            {
                "httpMethod": "DELETE",
                "relativeUri": "/x?y=1",
                "appEngineRouting": {"service": "s", "version": "v", "instance": "i"},
                "headers": {"X-A": "1"},
            },
            schedule="every 5 minutes",
            attemptDeadline="86415s",
        ),
        id="app-engine",
    ),
    pytest.param(
        with_target(
            "pubsubTarget",
            {"topicName": "projects/demo-proj/topics/tick", "attributes": {"k": ""}},
            timeZone="utc",
        ),
        id="pubsub",
    ),
]


@pytest.mark.parametrize("data", ROUND_TRIP_JOBS)
def test_job_from_json_of_job_to_json_is_identity(data: dict[str, Any]) -> None:
    job = job_from_json(data)

    rendered = job_to_json(job)

    assert job_from_json(json.loads(json.dumps(rendered))) == job
    assert job_from_json(job_to_json(job, enum_int=True)) == job


def test_round_trip_ignores_output_only_fields() -> None:
    job = job_from_json(minimal())
    ran = replace(
        job,
        state=State.PAUSED,
        status=Status(0),
        schedule_time=datetime(2026, 5, 8, tzinfo=UTC),
        last_attempt_time=datetime(2026, 5, 7, tzinfo=UTC),
        user_update_time=datetime(2026, 5, 6, tzinfo=UTC),
    )

    assert job_from_json(job_to_json(ran)) == job


def test_oidc_and_oauth_tokens_render() -> None:
    oidc = job_from_json(http(oidcToken={"serviceAccountEmail": SA}))
    oauth = job_from_json(http(oauthToken={"serviceAccountEmail": SA}))

    assert job_to_json(oidc)["httpTarget"]["oidcToken"] == {"serviceAccountEmail": SA}
    assert oidc.http_target is not None
    assert oidc.http_target.oidc_token == OidcToken(SA)
    assert job_to_json(oauth)["httpTarget"]["oauthToken"] == {
        "serviceAccountEmail": SA,
        "scope": "https://www.googleapis.com/auth/cloud-platform",
    }
