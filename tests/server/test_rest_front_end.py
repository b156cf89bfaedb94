"""What Google's REST front end adds that clients use: partial responses (``fields``,
``$fields``, ``X-Goog-FieldMask``),
``X-HTTP-Method-Override``, the CMEK configuration with its operations, and output-only fields
(``satisfiesPzs``) ignored on create and patch."""

from __future__ import annotations

from typing import Any

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator
from scheduler_emulator.server.server import create_app
from tests.support import TARGET

LOCATION = "/v1/projects/my-project/locations/us-central1"
JOBS = LOCATION + "/jobs"
NAME = "projects/my-project/locations/us-central1/jobs/nightly"


@pytest.fixture
def api(emulator: Emulator) -> Client:
    client = Client(create_app(emulator))
    response = client.post(
        JOBS, json={"name": NAME, "schedule": "0 2 * * *", "httpTarget": {"uri": TARGET}}
    )
    assert response.status_code == 200, response.json
    return client


class TestFields:
    def test_a_partial_list(self, api: Client) -> None:
        assert api.get(JOBS + "?fields=jobs(name,httpTarget/uri)").json == {
            "jobs": [{"name": NAME, "httpTarget": {"uri": TARGET}}]
        }

    def test_snake_case_and_slashes(self, api: Client) -> None:
        assert api.get(JOBS + "/nightly?fields=time_zone,state").json == {
            "timeZone": "Etc/UTC",
            "state": "ENABLED",
        }

    def test_errors_are_never_filtered(self, api: Client) -> None:
        assert api.get(JOBS + "/missing?fields=name").json["error"]["code"] == 404

    def test_a_malformed_selection_is_a_400_naming_it(self, api: Client) -> None:
        error = api.get(JOBS + "?fields=jobs(name").json["error"]
        assert error["code"] == 400
        assert error["details"][0]["fieldViolations"][0]["field"] == "fields"
        assert '"jobs(name"' in error["message"]

    def test_dollar_fields_filters_the_answer(self, api: Client) -> None:
        assert api.get(JOBS + "/nightly?%24fields=name").json == {"name": NAME}

    def test_the_field_mask_header_filters_the_answer(self, api: Client) -> None:
        response = api.get(JOBS + "/nightly", headers={"X-Goog-FieldMask": "name,schedule"})
        assert response.json == {"name": NAME, "schedule": "0 2 * * *"}
        listed = api.get(JOBS, headers={"X-Goog-FieldMask": "jobs.name"})
        assert listed.json == {"jobs": [{"name": NAME}]}

    def test_a_star_selects_every_field(self, api: Client) -> None:
        whole = api.get(JOBS + "/nightly").json
        assert api.get(JOBS + "/nightly?fields=*").json == whole
        assert api.get(JOBS + "?fields=jobs(*)").json == {"jobs": [whole]}

    def test_two_masks_that_differ_are_a_400_naming_both(self, api: Client) -> None:
        response = api.get(JOBS + "/nightly?fields=name", headers={"X-Goog-FieldMask": "state"})
        assert response.status_code == 400
        error = response.json["error"]
        assert error["details"][0]["fieldViolations"][0]["field"] == "X-Goog-FieldMask"
        assert "fields" in error["message"]
        same = api.get(JOBS + "/nightly?fields=name", headers={"X-Goog-FieldMask": "name"})
        assert same.json == {"name": NAME}
        # spelled otherwise, the same fields (trial 59: refused as different)
        spelled = api.get(JOBS + "?fields=jobs(name)&%24fields=jobs/name")
        assert spelled.status_code == 200, spelled.json
        assert (
            api.get(JOBS + "?fields=jobs(name)", headers={"X-Goog-FieldMask": "jobs.name"}).json
            == spelled.json
        )

    def test_a_malformed_mask_changes_nothing(self, api: Client) -> None:
        response = api.post(
            JOBS + "?%24fields=name(",
            json={"name": NAME + "2", "schedule": "0 2 * * *", "httpTarget": {"uri": TARGET}},
        )
        assert response.status_code == 400
        assert response.json["error"]["details"][0]["fieldViolations"][0]["field"] == "$fields"
        assert api.get(JOBS + "/nightly2").status_code == 404


class TestMethodOverride:
    def test_post_as_patch(self, api: Client) -> None:
        response = api.post(
            JOBS + "/nightly?updateMask=schedule",
            json={"schedule": "0 5 * * *"},
            headers={"X-HTTP-Method-Override": "PATCH"},
        )
        assert response.json["schedule"] == "0 5 * * *"

    def test_post_as_get_and_delete(self, api: Client) -> None:
        get = api.post(JOBS + "/nightly", headers={"X-HTTP-Method-Override": "get"})
        assert get.json["name"] == NAME
        api.post(JOBS + "/nightly", headers={"X-HTTP-Method-Override": "DELETE"})
        assert api.get(JOBS + "/nightly").status_code == 404

    def test_an_unknown_override_is_a_400(self, api: Client) -> None:
        response = api.post(JOBS + "/nightly", headers={"X-HTTP-Method-Override": "TRACE"})
        assert response.status_code == 400
        assert "TRACE" in response.json["error"]["message"]


def test_satisfies_pzs_is_ignored_on_create_and_patch(api: Client) -> None:
    created = api.post(
        JOBS,
        json={
            "name": NAME + "2",
            "schedule": "0 2 * * *",
            "httpTarget": {"uri": TARGET},
            "satisfiesPzs": True,
        },
    )
    assert created.status_code == 200, created.json
    assert "satisfiesPzs" not in created.json
    patched = api.patch(JOBS + "/nightly", json={"satisfiesPzs": False, "description": "d"})
    assert patched.status_code == 200, patched.json
    assert patched.json["description"] == "d"


def test_the_cmek_config_and_its_operations(api: Client) -> None:
    config = LOCATION + "/cmekConfig"
    assert api.get(config).json == {"name": "projects/my-project/locations/us-central1/cmekConfig"}
    key = "projects/my-project/locations/us-central1/keyRings/ring/cryptoKeys/key"
    operation: dict[str, Any] = api.patch(
        config + "?updateMask=kmsKeyName", json={"kmsKeyName": key}
    ).json
    assert operation["done"] is True
    assert operation["name"].startswith("projects/my-project/locations/us-central1/operations/")
    assert operation["response"]["@type"].endswith("google.cloud.scheduler.v1.CmekConfig")
    assert api.get(config).json["kmsKeyName"] == key
    assert api.get("/v1/" + operation["name"]).json == operation
    assert api.get(LOCATION + "/operations").json == {"operations": [operation]}
    missing = api.get(LOCATION + "/operations/nope")
    assert missing.status_code == 404
    bad = api.patch(config, json={"kmsKeyName": "key"})
    assert bad.status_code == 400
    assert bad.json["error"]["details"][0]["fieldViolations"][0]["field"] == "kmsKeyName"


@pytest.mark.parametrize(
    ("method", "suffix", "name"),
    [("POST", ":cancel", "CancelOperation"), ("DELETE", "", "DeleteOperation")],
)
def test_cancelling_or_deleting_an_operation_is_501_unimplemented(
    api: Client, method: str, suffix: str, name: str
) -> None:
    response = api.open(LOCATION + "/operations/operation-1" + suffix, method=method, json={})
    assert response.status_code == 501
    error = response.json["error"]
    assert (error["code"], error["status"]) == (501, "UNIMPLEMENTED")
    assert error["message"].startswith(f"{name} (operations.")
