"""UpdateJob (PATCH) semantics: the update mask governs which fields change. Our pinned rules
where Google documents none: without a mask every field in the body is applied, and a headers
map holding a JSON ``null`` edits the stored map (null deletes) instead of replacing it.

The tables of plain cases (gcloud flags, mask paths, header edits, clearing) are in
cases/update_mask.toml; its head says how a case writes a job's changes.
"""

from __future__ import annotations

import copy
import doctest
import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_emulator import HttpTarget, Job, RetryConfig, State
from scheduler_emulator.domain import update_mask
from scheduler_emulator.domain.codec import job_from_json, job_to_json, parse_duration
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.domain.resources import (
    AppEngineHttpTarget,
    HttpMethod,
    OAuthToken,
    OidcToken,
    PubsubTarget,
    Status,
)
from scheduler_emulator.domain.update_mask import apply_update, parse_update_mask
from tests.support import case_table

NAME = "projects/demo-proj/locations/us-central1/jobs/nightly"
OTHER_NAME = "projects/demo-proj/locations/us-central1/jobs/other"
SA = "sa@demo-proj.iam.gserviceaccount.com"
TOPIC = "projects/demo-proj/topics/exports"
FAILURE = "URL_UNREACHABLE-UNREACHABLE_5xx. Original HTTP response code number = 500"
UA = "Google-Cloud-Scheduler"
OCTET = "application/octet-stream"


def stored(**overrides: Any) -> Job:
    """A stored HTTP job with every field set and the output-only fields of a paused job that ran.

    ``overrides`` replace top-level keys of the create body. Its headers end up as
    ``X-Existing: 1`` plus the server's ``User-Agent`` and, for its body, ``Content-Type``.
    """
    body: dict[str, Any] = {
        "name": NAME,
        "description": "nightly export",
        "schedule": "0 3 * * *",
        "timeZone": "Europe/Berlin",
        "httpTarget": {
            "uri": "https://svc.example/run",
            "httpMethod": "POST",
            "headers": {"X-Existing": "1"},
            "body": "e30=",
            "oidcToken": {"serviceAccountEmail": SA, "audience": "https://svc.example"},
        },
        "retryConfig": {
            "retryCount": 3,
            "maxRetryDuration": "600s",
            "minBackoffDuration": "10s",
            "maxBackoffDuration": "300s",
            "maxDoublings": 2,
        },
        "attemptDeadline": "300s",
    }
    body.update(overrides)
    return replace(
        job_from_json(body),
        state=State.PAUSED,
        status=Status(13, FAILURE),
        schedule_time=datetime(2026, 5, 8, 1, 0, tzinfo=UTC),
        last_attempt_time=datetime(2026, 5, 7, 1, 0, tzinfo=UTC),
        user_update_time=datetime(2026, 5, 1, 9, 30, tzinfo=UTC),
    )


def stored_oauth() -> Job:
    """The stored job with an OAuth token (default scope) instead of the OIDC token."""
    return stored(
        httpTarget={"uri": "https://svc.example/run", "oauthToken": {"serviceAccountEmail": SA}}
    )


def stored_pubsub() -> Job:
    """The stored job with a Pub/Sub target instead of the HTTP target."""
    return stored(
        httpTarget=None, pubsubTarget={"topicName": TOPIC, "attributes": {"kind": "a", "Kind": "b"}}
    )


def changed(job: Job, *, http: dict[str, Any] | None = None, **fields: Any) -> Job:
    """``job`` with top-level ``fields`` and HttpTarget fields ``http`` replaced."""
    if http is not None:
        assert job.http_target is not None
        fields["http_target"] = replace(job.http_target, **http)
    return replace(job, **fields)


def retried(job: Job, **config: Any) -> Job:
    """``job`` with RetryConfig fields ``config`` replaced."""
    return replace(job, retry_config=replace(job.retry_config, **config))


def gcloud_body(
    *, http: dict[str, Any] | None = None, retry: dict[str, Any] | None = None, **top: Any
) -> dict[str, Any]:
    """The body ``gcloud scheduler jobs update http nightly …`` sends.

    gcloud always sends ``timeZone: Etc/UTC``, ``httpTarget.httpMethod: POST`` and the four
    retry defaults next to the flags' values, whatever the mask says. ``http`` and ``retry``
    update those two objects (a ``None`` value removes the key, as a ``--clear-…`` flag does);
    ``top`` adds top-level keys.
    """
    http_target: dict[str, Any] = {"httpMethod": "POST", **(http or {})}
    retry_config: dict[str, Any] = {
        "maxBackoffDuration": "3600s",
        "maxDoublings": 5,
        "minBackoffDuration": "5s",
        "retryCount": 0,
    }
    for key, value in (retry or {}).items():
        if value is None:
            del retry_config[key]
        else:
            retry_config[key] = value
    return {
        "httpTarget": http_target,
        "name": NAME,
        "retryConfig": retry_config,
        "timeZone": "Etc/UTC",
        **top,
    }


def raises_invalid(job: Job, body: Any, mask: Any) -> InvalidArgument:
    """Call apply_update expecting INVALID_ARGUMENT; check neither input changed."""
    job_before, body_before = job_to_json(job), copy.deepcopy(body)
    with pytest.raises(InvalidArgument) as caught:
        apply_update(job, body, mask)
    assert job_to_json(job) == job_before
    assert body == body_before
    return caught.value


def gcloud_sends(flags: dict[str, Any]) -> dict[str, Any]:
    """:func:`gcloud_body` with what the flags add written in the body's own shape, as the case
    file writes it: ``httpTarget`` and ``retryConfig`` update gcloud's two objects, other keys
    are added at the top level."""
    top = dict(flags)
    return gcloud_body(http=top.pop("httpTarget", None), retry=top.pop("retryConfig", None), **top)


def with_changes(job: Job, changes: dict[str, Any]) -> Job:
    """``job`` with ``changes`` as the case file writes them (its head says how): Job fields at
    the top, HttpTarget fields under ``http`` and RetryConfig fields under ``retry``."""
    top = {name: as_held(name, value) for name, value in changes.items()}
    http = {name: as_held(name, value) for name, value in top.pop("http", {}).items()}
    retry = {name: as_held(name, value) for name, value in top.pop("retry", {}).items()}
    return retried(changed(job, http=http or None, **top), **retry)


def as_held(field: str, value: Any) -> Any:
    """A field's value as the case file writes it, turned into the value a Job holds: durations
    ("600s") parsed, the HTTP method by name, a body's text encoded, a token from its fields or
    ``None`` for "none"; anything else as it is."""
    if field.endswith(("_duration", "_deadline")):
        return parse_duration(value)
    if field == "http_method":
        return HttpMethod[value]
    if field == "body":
        return value.encode()
    if field in TOKENS:
        return None if value == "none" else TOKENS[field](**value)
    return value


TOKENS: dict[str, type[OidcToken | OAuthToken]] = {
    "oidc_token": OidcToken,
    "oauth_token": OAuthToken,
}

#: The stored job a gcloud_flags case starts from, by the token it holds.
STORED_BY_TOKEN: dict[str, Callable[[], Job]] = {
    "oidc": stored,
    "oauth": stored_oauth,
    "no-token": lambda: changed(stored(), http={"oidc_token": None}),
}

#: Masks with no paths: absent, or nothing but separators.
NO_PATHS = [
    pytest.param(None, id="absent"),
    pytest.param("", id="empty-string"),
    pytest.param([], id="empty-list"),
    pytest.param(",", id="only-commas"),
]


class TestGcloudFlags:
    """Every flag of ``gcloud scheduler jobs update http`` and the mask path it sends, with the
    default-laden body gcloud really sends."""

    @case_table(__file__, "gcloud_flags")
    def test_flag_changes_only_its_masked_fields(
        self, token: str, mask: str, body: str, expected: dict[str, Any]
    ) -> None:
        before = STORED_BY_TOKEN[token]()

        updated = apply_update(before, gcloud_sends(json.loads(body)), mask)

        assert updated == with_changes(before, expected)

    def test_schedule_flag_keeps_the_stored_retry_settings(self) -> None:
        body = gcloud_body(schedule="0 3 * * *")

        updated = apply_update(stored(), body, "schedule")

        assert updated.retry_config.retry_count == 3
        assert updated.retry_config == stored().retry_config
        assert updated.time_zone == "Europe/Berlin"

    def test_gcloud_url_encoded_mask_is_accepted(self) -> None:
        body = gcloud_body(schedule="0 4 * * *", timeZone="Asia/Tokyo")

        updated = apply_update(stored(), body, "schedule%2CtimeZone")

        assert (updated.schedule, updated.time_zone) == ("0 4 * * *", "Asia/Tokyo")


class TestMaskSpelling:
    @case_table(__file__, "spellings")
    def test_snake_case_paths_name_the_same_fields_as_camel_case(
        self, camel: str, snake: str | list[str]
    ) -> None:
        assert parse_update_mask(snake) == parse_update_mask(camel)

    def test_snake_case_mask_updates_like_camel_case(self) -> None:
        body = {
            "schedule": "0 5 * * *",
            "httpTarget": {"uri": "https://new.example/"},
            "retryConfig": {"maxDoublings": 1},
        }
        camel = "schedule,httpTarget.uri,retryConfig.maxDoublings"
        snake = ["schedule", "http_target.uri", "retry_config.max_doublings"]

        assert apply_update(stored(), body, snake) == apply_update(stored(), body, camel)
        assert apply_update(stored(), body, snake) == retried(
            changed(stored(), schedule="0 5 * * *", http={"uri": "https://new.example/"}),
            max_doublings=1,
        )

    @case_table(__file__, "normalised")
    def test_mask_is_normalised_to_proto_paths(
        self, mask: str | list[str], expected: list[str]
    ) -> None:
        assert parse_update_mask(mask) == tuple(expected)

    @pytest.mark.parametrize("mask", NO_PATHS)
    def test_no_paths_means_no_mask(self, mask: str | list[str] | None) -> None:
        assert parse_update_mask(mask) is None


class TestPythonClientBody:
    def test_body_without_name_and_with_integer_enums_updates_masked_fields(self) -> None:
        body = {
            "schedule": "*/10 * * * *",
            "httpTarget": {"uri": "https://svc.example/v2", "httpMethod": 4},
            "retryConfig": {"minBackoffDuration": "1.500s", "retryCount": 1},
        }
        mask = "schedule,httpTarget.uri,httpTarget.httpMethod,retryConfig.minBackoffDuration"

        updated = apply_update(stored(), body, mask)

        assert updated == retried(
            changed(
                stored(),
                schedule="*/10 * * * *",
                http={"uri": "https://svc.example/v2", "http_method": HttpMethod.PUT},
            ),
            min_backoff_duration=timedelta(seconds=1.5),
        )

    @pytest.mark.parametrize(
        "method", [pytest.param(6, id="number"), pytest.param("6", id="numeric-string")]
    )
    def test_integer_enum_as_number_or_string_is_accepted(self, method: int | str) -> None:
        body = {"httpTarget": {"httpMethod": method}}

        updated = apply_update(stored(), body, "httpTarget.httpMethod")

        assert updated.http_target is not None
        assert updated.http_target.http_method is HttpMethod.PATCH

    def test_name_in_the_body_is_ignored(self) -> None:
        body = {"name": OTHER_NAME, "description": "renamed?"}

        updated = apply_update(stored(), body, "name,description")

        assert updated.name == NAME
        assert updated.description == "renamed?"


class TestNoMask:
    """Our pinned rule: without a mask every field present in the body is applied."""

    @pytest.mark.parametrize("mask", NO_PATHS)
    def test_every_present_field_is_applied(self, mask: str | list[str] | None) -> None:
        body = {"description": "new", "retryConfig": {"retryCount": 5}}

        updated = apply_update(stored(), body, mask)

        assert updated == retried(changed(stored(), description="new"), retry_count=5)

    def test_gcloud_update_without_flags_applies_its_defaults(self) -> None:
        updated = apply_update(stored(), gcloud_body(), "")

        assert updated == retried(  # (its retryCount 0 is a proto3 default: not present)
            changed(stored(), time_zone="Etc/UTC"),
            min_backoff_duration=timedelta(seconds=5),
            max_backoff_duration=timedelta(hours=1),
            max_doublings=5,
        )

    def test_nested_fields_are_applied_one_by_one(self) -> None:
        body = {"httpTarget": {"uri": "https://svc.example/v2", "oidcToken": {"audience": "a"}}}

        updated = apply_update(stored(), body, None)

        assert updated == changed(
            stored(), http={"uri": "https://svc.example/v2", "oidc_token": OidcToken(SA, "a")}
        )

    def test_output_only_fields_and_name_in_the_body_are_ignored(self) -> None:
        body = {
            "name": OTHER_NAME,
            "state": "ENABLED",
            "status": {},
            "scheduleTime": "2030-01-01T00:00:00Z",
            "lastAttemptTime": "2030-01-01T00:00:00Z",
            "userUpdateTime": "2030-01-01T00:00:00Z",
            "schedule": "0 6 * * *",
        }

        updated = apply_update(stored(), body, None)

        assert updated == changed(stored(), schedule="0 6 * * *")

    def test_empty_body_changes_nothing(self) -> None:
        assert apply_update(stored(), {}, None) == stored()

    def test_body_without_http_target_keeps_it(self) -> None:
        updated = apply_update(stored(), {"schedule": "0 6 * * *"}, None)

        assert updated.http_target == stored().http_target


class TestHeaderEdits:
    """Our pinned rule: a null value makes the body's map an edit of the stored map (null
    deletes, other keys are set); else the body's map replaces it."""

    @case_table(__file__, "header_edits")
    def test_map_with_null_values_edits_the_stored_headers(
        self, headers: str, expected: dict[str, str]
    ) -> None:
        body = gcloud_body(http={"headers": json.loads(headers)})

        updated = apply_update(stored(), body, "httpTarget.headers")

        assert updated.http_target is not None
        assert dict(updated.http_target.headers) == expected

    def test_map_without_null_values_replaces_the_stored_headers(self) -> None:
        body = {"httpTarget": {"headers": {"X-Only": "1"}}}

        updated = apply_update(stored(), body, "httpTarget.headers")

        assert updated.http_target is not None
        assert dict(updated.http_target.headers) == {
            "X-Only": "1",
            "User-Agent": UA,
            "Content-Type": OCTET,
        }

    def test_edit_applies_when_the_whole_target_is_masked(self) -> None:
        body = {"httpTarget": {"uri": "https://svc.example/", "headers": {"X-Existing": None}}}

        updated = apply_update(stored(), body, "httpTarget")

        assert updated.http_target == HttpTarget(
            uri="https://svc.example/", headers={"User-Agent": UA, "Content-Type": OCTET}
        )

    def test_edit_applies_without_a_mask(self) -> None:
        body = {"httpTarget": {"headers": {"X-New": "1", "X-Existing": None}}}

        updated = apply_update(stored(), body, None)

        assert updated == changed(
            stored(), http={"headers": {"X-New": "1", "User-Agent": UA, "Content-Type": OCTET}}
        )

    def test_app_engine_headers_are_edited_case_insensitively(self) -> None:
        before = stored(
            httpTarget=None, appEngineHttpTarget={"relativeUri": "/run", "headers": {"X-A": "1"}}
        )
        body = {"appEngineHttpTarget": {"headers": {"x-a": None, "X-B": "2"}}}

        updated = apply_update(before, body, "appEngineHttpTarget.headers")

        assert updated.app_engine_http_target is not None
        assert dict(updated.app_engine_http_target.headers) == {"X-B": "2"}

    def test_pubsub_attribute_names_match_exactly(self) -> None:
        body = {"pubsubTarget": {"attributes": {"kind": None, "new": "1"}}}

        updated = apply_update(stored_pubsub(), body, "pubsubTarget.attributes")

        assert updated.pubsub_target is not None
        assert dict(updated.pubsub_target.attributes) == {"Kind": "b", "new": "1"}


class TestClearing:
    """A masked field absent from the body is cleared to its default."""

    @case_table(__file__, "clearing")
    def test_masked_field_absent_from_the_body_is_cleared(
        self, before: dict[str, Any], mask: str, expected: dict[str, Any]
    ) -> None:
        job = with_changes(stored(), before)

        assert apply_update(job, {}, mask) == with_changes(job, expected)

    def test_null_counts_as_absent(self) -> None:
        body = {"description": None, "retryConfig": {"retryCount": None}}

        updated = apply_update(stored(), body, "description,retryConfig.retryCount")

        assert updated == retried(changed(stored(), description=""), retry_count=0)


class TestInvalidResult:
    """The result passes create's validation, or the update fails and nothing changes."""

    @case_table(__file__, "invalid_result")
    def test_invalid_result_is_refused_and_the_job_is_unchanged(
        self, mask: str, gcloud: bool, body: dict[str, Any], field: str, message: str
    ) -> None:
        exc = raises_invalid(stored(), gcloud_sends(body) if gcloud else body, mask)

        assert exc.violations[0].field == field
        assert exc.message == message

    def test_invalid_value_in_an_unmasked_field_is_not_checked(self) -> None:
        body = gcloud_body(schedule="0 4 * * *", retry={"retryCount": 9})

        updated = apply_update(stored(), body, "schedule")

        assert updated.retry_config.retry_count == 3

    def test_successful_update_changes_neither_input(self) -> None:
        before = stored()
        job_before = job_to_json(before)
        body = gcloud_body(http={"headers": {"X-Existing": None}})
        body_before = copy.deepcopy(body)

        apply_update(before, body, "httpTarget.headers")

        assert job_to_json(before) == job_before
        assert before == stored()
        assert body == body_before


class TestBodyErrors:
    """The whole body is parsed by the codec, so its errors are create's, mask or not."""

    @pytest.mark.parametrize(
        "body",
        [
            pytest.param({"foo": 1}, id="unknown-top-level"),
            pytest.param(
                {"httpTarget": {"uri": "https://a.example/", "foo": 1}}, id="unknown-nested"
            ),
            pytest.param({"retryConfig": {"retryCount": "abc"}}, id="wrong-type-off-the-mask"),
            pytest.param({"httpTarget": "https://a.example/"}, id="message-not-an-object"),
            pytest.param({"timeZone": "UTC", "time_zone": "UTC"}, id="both-spellings"),
        ],
    )
    def test_body_error_is_the_one_create_gives(self, body: dict[str, Any]) -> None:
        with pytest.raises(InvalidArgument) as on_create:
            job_from_json({"schedule": "0 3 * * *", **body}, default_name=NAME)

        exc = raises_invalid(stored(), body, "schedule")

        assert exc.message == on_create.value.message
        assert exc.violations == on_create.value.violations

    def test_two_targets_in_the_body_are_refused_whatever_the_mask(self) -> None:
        body = {
            "httpTarget": {"uri": "https://a.example/"},
            "pubsubTarget": {"topicName": TOPIC, "data": "e30="},
        }

        exc = raises_invalid(stored(), body, "description")

        with pytest.raises(InvalidArgument) as on_create:
            job_from_json({"schedule": "0 3 * * *", **body}, default_name=NAME)
        assert exc.message == "A job needs exactly one target; got httpTarget and pubsubTarget."
        assert exc.message == on_create.value.message
        assert exc.violations[0].field == "target"

    def test_two_tokens_in_the_body_are_refused_whatever_the_mask(self) -> None:
        body = {
            "httpTarget": {
                "oidcToken": {"serviceAccountEmail": SA},
                "oauthToken": {"serviceAccountEmail": SA},
            }
        }

        exc = raises_invalid(stored(), body, "description")

        assert exc.message == "httpTarget can have oidcToken or oauthToken, not both."


class TestMaskPaths:
    @case_table(__file__, "unknown_paths")
    def test_unknown_path_is_refused_naming_it(self, mask: str, path: str) -> None:
        exc = raises_invalid(stored(), gcloud_body(schedule="0 4 * * *"), mask)

        assert exc.violations[0].field == "updateMask"
        assert exc.message == f"Invalid mask for Job: {path}"
        assert f'"{path}"' in exc.violations[0].description

    def test_unknown_path_message_lists_the_fields_that_exist(self) -> None:
        exc = raises_invalid(stored(), {}, "httpTarget.foo")

        assert exc.violations[0].description == (
            'updateMask has an unknown field path "http_target.foo": HttpTarget has no field '
            '"foo"; it has uri, http_method, headers, body, oauth_token, oidc_token.'
        )

    @case_table(__file__, "ignored_paths")
    def test_output_only_and_name_paths_are_ignored(self, mask: str) -> None:
        body = {
            "name": OTHER_NAME,
            "state": "ENABLED",
            "status": {"code": 0},
            "scheduleTime": "2030-01-01T00:00:00Z",
            "lastAttemptTime": "2030-01-01T00:00:00Z",
            "userUpdateTime": "2030-01-01T00:00:00Z",
            "description": "not masked",
        }

        assert apply_update(stored(), body, mask) == stored()

    def test_output_only_path_beside_a_real_one_is_ignored(self) -> None:
        body = {"state": "ENABLED", "schedule": "0 7 * * *"}

        updated = apply_update(stored(), body, "state,schedule")

        assert updated == changed(stored(), schedule="0 7 * * *")
        assert updated.state is State.PAUSED

    def test_app_engine_routing_host_path_is_ignored(self) -> None:
        before = stored(
            httpTarget=None,
            appEngineHttpTarget={"appEngineRouting": {"service": "api"}, "relativeUri": "/run"},
        )
        body = {"appEngineHttpTarget": {"appEngineRouting": {"host": "x.appspot.com"}}}

        assert apply_update(before, body, "appEngineHttpTarget.appEngineRouting.host") == before

    def test_wildcard_replaces_every_settable_field(self) -> None:
        body = {
            "name": OTHER_NAME,
            "schedule": "0 1 * * *",
            "httpTarget": {"uri": "https://a.test/"},
        }

        updated = apply_update(stored(), body, "*")

        assert updated == replace(
            stored(),
            schedule="0 1 * * *",
            time_zone="Etc/UTC",
            description="",
            http_target=HttpTarget(uri="https://a.test/", headers={"User-Agent": UA}),
            retry_config=RetryConfig(),
            attempt_deadline=timedelta(seconds=180),
        )


class TestTargetSwitch:
    """Target and token are oneofs: setting one member removes the other."""

    def test_masking_pubsub_target_replaces_the_http_target(self) -> None:
        body = {"pubsubTarget": {"topicName": TOPIC, "data": "e30="}}

        updated = apply_update(stored(), body, "pubsubTarget")

        assert updated == replace(
            stored(),
            http_target=None,
            pubsub_target=PubsubTarget(topic_name=TOPIC, data=b"{}"),
            attempt_deadline=None,
        )

    def test_masking_app_engine_target_in_snake_case_replaces_the_http_target(self) -> None:
        body = {"app_engine_http_target": {"relative_uri": "/run", "http_method": "GET"}}

        updated = apply_update(stored(), body, "app_engine_http_target")

        assert updated.http_target is None
        assert updated.app_engine_http_target == AppEngineHttpTarget(
            relative_uri="/run", http_method=HttpMethod.GET
        )
        assert updated.attempt_deadline == timedelta(seconds=300)

    def test_nested_path_creates_the_target_the_body_has(self) -> None:
        body = {"httpTarget": {"uri": "https://a.example/"}}

        updated = apply_update(stored_pubsub(), body, "httpTarget.uri")

        assert updated == replace(
            stored_pubsub(),
            pubsub_target=None,
            http_target=HttpTarget(uri="https://a.example/", headers={"User-Agent": UA}),
            attempt_deadline=timedelta(seconds=180),
        )

    def test_nested_path_into_a_target_neither_side_has_changes_nothing(self) -> None:
        assert apply_update(stored_pubsub(), {}, "httpTarget.uri") == stored_pubsub()

    def test_no_mask_switches_the_target_the_body_has(self) -> None:
        body = {"httpTarget": {"uri": "https://a.example/", "httpMethod": 2}}

        updated = apply_update(stored_pubsub(), body, None)

        assert updated.pubsub_target is None
        assert updated.http_target == HttpTarget(
            uri="https://a.example/", http_method=HttpMethod.GET, headers={"User-Agent": UA}
        )


class TestOutputOnlyFields:
    def test_update_keeps_the_paused_state_and_every_output_only_field(self) -> None:
        before = stored()

        updated = apply_update(before, gcloud_body(schedule="0 4 * * *"), "schedule")

        assert updated.state is State.PAUSED
        assert updated.status == Status(13, FAILURE)
        assert updated.schedule_time == before.schedule_time
        assert updated.last_attempt_time == before.last_attempt_time
        assert updated.user_update_time == before.user_update_time

    def test_module_docstring_example_holds(self) -> None:
        assert doctest.testmod(update_mask).failed == 0
