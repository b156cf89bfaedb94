"""The firebase bridge's pure parts and its command line, without node: the jobs made of
``/backends`` entries (as ``firebase deploy`` makes them), trigger keys, the legacy v1 event,
``firebase`` as ``start --firebase``, and exit 2 when nothing answers at the hub.

Against a real Functions emulator: tests/test_firebase_emulator.py.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

from scheduler_emulator.domain.codec import job_from_json
from scheduler_emulator.tools.firebase.command import start_argv
from scheduler_emulator.tools.firebase.functions import (
    ScheduledFunction,
    legacy_event,
    project_of,
    scheduled_functions,
    trigger_key,
    valid_trigger_keys,
)

URL = "http://127.0.0.1:5001/functions/projects/demo-p/triggers/us-central1-fn-0"


def trigger(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "us-central1-fn",
        "name": "fn",
        "region": "us-central1",
        "platform": "gcfv2",
        "timeoutSeconds": 60,
        "labels": {
            "EVENTARC_CLOUD_EVENT_SOURCE": "run-emulated.googleapis.com/projects/demo-p/"
            "locations/us-central1/services/fn"
        },
        "schedule": {"schedule": "0 9 * * 1-5", "retryConfig": {"retryCount": None}},
    }
    entry.update(overrides)
    return entry


def test_a_v2_function_gets_an_http_job_with_a_token_and_a_clamped_deadline() -> None:
    fn = ScheduledFunction.from_trigger(trigger(timeoutSeconds=3600))
    job = fn.job_json("demo-p", URL)
    assert job == {
        "name": "projects/demo-p/locations/us-central1/jobs/firebase-schedule-fn-us-central1",
        "schedule": "0 9 * * 1-5",
        "timeZone": "UTC",
        "httpTarget": {
            "uri": URL,
            "httpMethod": "POST",
            "oidcToken": {
                "serviceAccountEmail": "demo-p-compute@developer.gserviceaccount.com",
                "audience": "https://us-central1-demo-p.cloudfunctions.net/fn",
            },
        },
        "attemptDeadline": "1800s",
    }
    job_from_json(job)  # a valid job
    assert ScheduledFunction.from_trigger(trigger(timeoutSeconds=9)).attempt_deadline_seconds == 180
    assert (
        ScheduledFunction.from_trigger(trigger(timeoutSeconds=300)).attempt_deadline_seconds == 300
    )


def test_a_v1_function_gets_productions_pubsub_job_in_los_angeles_by_default() -> None:
    retry = {"retryCount": 3, "minBackoffSeconds": 10, "maxRetrySeconds": 600, "maxDoublings": None}
    fn = ScheduledFunction.from_trigger(
        trigger(platform="gcfv1", schedule={"schedule": "every 5 minutes", "retryConfig": retry})
    )
    job = fn.job_json("demo-p", URL, audience="ignored for v1")
    assert job == {
        "name": "projects/demo-p/locations/us-central1/jobs/firebase-schedule-fn-us-central1",
        "schedule": "every 5 minutes",
        "timeZone": "America/Los_Angeles",
        "pubsubTarget": {
            "topicName": "projects/demo-p/topics/firebase-schedule-fn-us-central1",
            "attributes": {"scheduled": "true"},
        },
        "retryConfig": {"retryCount": 3, "minBackoffDuration": "10s", "maxRetryDuration": "600s"},
    }
    job_from_json(job)


def test_backends_duplicates_collapse_by_id_and_unscheduled_functions_are_left_out() -> None:
    answer = {
        "backends": [
            {
                "functionTriggers": [
                    trigger(schedule={"schedule": "0 1 * * *"}),
                    {"id": "us-central1-web", "name": "web", "region": "us-central1"},
                    trigger(schedule={"schedule": "0 2 * * *", "timeZone": "Europe/Berlin"}),
                ]
            }
        ]
    }
    [fn] = scheduled_functions(answer)
    assert (fn.schedule, fn.time_zone) == ("0 2 * * *", "Europe/Berlin")
    assert project_of(answer) == "demo-p"


def test_trigger_keys_come_from_the_404_and_the_newest_generation_wins() -> None:
    text = (
        "Function scheduler-emulator-probe does not exist, valid functions are: "
        "us-central1-fn-0, us-central1-fn-2, us-central1-fnx-3, us-central1-web"
    )
    keys = valid_trigger_keys(text)
    assert keys == ["us-central1-fn-0", "us-central1-fn-2", "us-central1-fnx-3", "us-central1-web"]
    assert trigger_key("us-central1-fn", keys) == "us-central1-fn-2"
    assert trigger_key("us-central1-web", keys) == "us-central1-web"
    assert trigger_key("us-central1-gone", keys) is None
    assert valid_trigger_keys("Not Found") == []


def test_the_legacy_event_has_the_schedule_time_and_productions_topic() -> None:
    event = legacy_event(
        "projects/p/topics/firebase-schedule-fn-us-central1",
        {"scheduled": "true"},
        "",
        "2026-01-05T08:00:00Z",
        "id-1",
    )
    assert event == {
        "context": {
            "eventId": "id-1",
            "timestamp": "2026-01-05T08:00:00Z",
            "eventType": "google.pubsub.topic.publish",
            "resource": {
                "service": "pubsub.googleapis.com",
                "name": "projects/p/topics/firebase-schedule-fn-us-central1",
            },
        },
        "data": {
            "@type": "type.googleapis.com/google.pubsub.v1.PubsubMessage",
            "attributes": {"scheduled": "true"},
        },
    }


def test_firebase_is_start_with_firebase() -> None:
    assert start_argv(["firebase", "--hub", "h:1", "--port", "0"]) == [
        "start", "--firebase", "h:1", "--port", "0",
    ]  # fmt: skip
    assert start_argv(["firebase", "--functions=f:2"]) == ["start", "--firebase-functions=f:2"]
    assert start_argv(["firebase", "--in-memory"]) == ["start", "--in-memory", "--firebase="]
    assert start_argv(["firebase", "--help"]) == ["firebase", "--help"]
    assert start_argv(["start", "--hub", "x"]) == ["start", "--hub", "x"]


def test_nothing_at_the_hub_exits_2_naming_the_address() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "firebase", "--hub", f"127.0.0.1:{port}",
         "--in-memory"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"nothing answers at --hub 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
