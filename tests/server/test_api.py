"""The v1 REST API through werkzeug's test client (no socket): routes, JSON rules, errors,
state transitions, as Google's REST reference gives them
(https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from werkzeug.test import Client, TestResponse

from scheduler_emulator import Emulator
from scheduler_emulator.server.server import create_app
from tests.support import TARGET, RecordingTarget, nightly_job, retry_config_json

PARENT = "/v1/projects/my-project/locations/us-central1"
JOBS = PARENT + "/jobs"
NAME = "projects/my-project/locations/us-central1/jobs/nightly"


@pytest.fixture
def api(emulator: Emulator) -> Client:
    return Client(create_app(emulator))


def job_body(**overrides: Any) -> dict[str, Any]:
    """The Orders example's nightly job under its full name (:func:`support.nightly_job`)."""
    return nightly_job(**{"name": NAME, **overrides})


def error_of(response: TestResponse) -> dict[str, Any]:
    assert response.content_type == "application/json; charset=UTF-8"
    return response.json["error"]  # type: ignore[index]


class TestCreate:
    def test_create_normalises_like_the_real_service(self, api: Client) -> None:
        response = api.post(JOBS + "?alt=json", json=job_body())
        assert response.status_code == 200
        assert response.json == {
            "name": NAME,
            "httpTarget": {
                "uri": TARGET,
                "httpMethod": "POST",
                "headers": {"User-Agent": "Google-Cloud-Scheduler"},
            },
            "schedule": "0 2 * * *",
            "timeZone": "Etc/UTC",
            "userUpdateTime": "2026-09-24T01:59:00Z",
            "state": "ENABLED",
            "scheduleTime": "2026-09-24T02:00:00Z",
            "retryConfig": retry_config_json(3),
            "attemptDeadline": "180s",
        }

    def test_python_client_style_body_gets_integer_enums_back(self, api: Client) -> None:
        body = {
            "name": NAME,
            "schedule": "0 2 * * *",
            "httpTarget": {"uri": TARGET, "httpMethod": 1, "body": "e30="},
            "attemptDeadline": "1.500s",
            "retryConfig": {"minBackoffDuration": "1.500s"},
        }
        response = api.post(JOBS + "?%24alt=json%3Benum-encoding%3Dint", json=body)
        assert response.status_code == 400  # attempt deadline below 15 s
        body["attemptDeadline"] = "20.5s"
        job = api.post(JOBS + "?%24alt=json%3Benum-encoding%3Dint", json=body).json
        assert job["state"] == 1
        assert job["httpTarget"]["httpMethod"] == 1
        assert job["httpTarget"]["headers"]["Content-Type"] == "application/octet-stream"
        assert job["attemptDeadline"] == "20.500s"
        assert job["retryConfig"]["minBackoffDuration"] == "1.500s"
        assert job["timeZone"] == "Etc/UTC"

    def test_snake_case_input_is_accepted(self, api: Client) -> None:
        body = {
            "name": NAME,
            "schedule": "0 2 * * *",
            "time_zone": "Europe/Berlin",
            "http_target": {"uri": TARGET, "http_method": "GET"},
            "retry_config": {"retry_count": 2},
        }
        job = api.post(JOBS, json=body).json
        assert (job["timeZone"], job["httpTarget"]["httpMethod"]) == ("Europe/Berlin", "GET")
        assert job["retryConfig"]["retryCount"] == 2

    def test_output_only_fields_are_ignored_on_input(self, api: Client) -> None:
        job = api.post(JOBS, json=job_body(state="PAUSED", status={"code": 5})).json
        assert job["state"] == "ENABLED"
        assert "status" not in job

    def test_a_job_without_name_gets_a_generated_id(self, api: Client) -> None:
        body = job_body()
        del body["name"]
        job = api.post(JOBS, json=body).json
        prefix = "projects/my-project/locations/us-central1/jobs/"
        assert job["name"].startswith(prefix)
        assert len(job["name"]) > len(prefix)

    def test_duplicate_create_is_409_with_googles_message(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        response = api.post(JOBS, json=job_body())
        assert response.status_code == 409
        assert error_of(response) == {
            "code": 409,
            "message": f"Job {NAME} already exists.",
            "status": "ALREADY_EXISTS",
        }

    @pytest.mark.parametrize(
        ("body", "message", "field"),
        [
            pytest.param(
                job_body(schedule="*/5 * * * * *"),
                "Schedule or time zone is invalid.",
                "schedule",
                id="six-field-cron",
            ),
            pytest.param(
                job_body(timeZone="EST"), "Schedule or time zone is invalid.", "timeZone", id="est"
            ),
            pytest.param(
                job_body(name="nameJob"),
                'Job name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/'
                'jobs/<JOB_ID>".',
                "name",
                id="bare-name",
            ),
            pytest.param(
                job_body(retryConfig={"retryCount": 9}),
                "retryConfig.retryCount must be between 0 and 5; got 9.",
                "retryConfig.retryCount",
                id="retry-count-9",
            ),
        ],
    )
    def test_invalid_job_is_400_with_field_violation(
        self, api: Client, body: dict[str, Any], message: str, field: str
    ) -> None:
        response = api.post(JOBS, json=body)
        assert response.status_code == 400
        error = error_of(response)
        assert (error["status"], error["message"]) == ("INVALID_ARGUMENT", message)
        violation = error["details"][0]
        assert violation["@type"] == "type.googleapis.com/google.rpc.BadRequest"
        assert violation["fieldViolations"][0]["field"] == field

    @pytest.mark.parametrize("uri", ["http://x test/a", "http://exa mple.com/", "http://a|b/"])
    def test_a_uri_whose_host_is_not_a_host_is_refused(self, api: Client, uri: str) -> None:
        response = api.post(JOBS, json=job_body(httpTarget={"uri": uri}))
        assert response.status_code == 400
        error = error_of(response)
        assert error["details"][0]["fieldViolations"][0]["field"] == "httpTarget.uri"

    def test_name_in_another_location_is_refused(self, api: Client) -> None:
        body = job_body(name="projects/my-project/locations/europe-west1/jobs/nightly")
        response = api.post(JOBS, json=body)
        assert response.status_code == 400
        assert "is not in the location" in error_of(response)["message"]

    def test_unknown_field_is_refused_naming_it(self, api: Client) -> None:
        response = api.post(JOBS, json=job_body(colour="blue"))
        assert response.status_code == 400
        assert 'Unknown name "colour"' in error_of(response)["message"]

    @pytest.mark.parametrize(
        "data",
        [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe"],
        ids=["broken", "array", "string", "not-utf8"],
    )
    def test_a_body_that_is_not_a_json_object_is_400(self, api: Client, data: bytes) -> None:
        response = api.post(JOBS, data=data, content_type="application/json")
        assert response.status_code == 400
        assert error_of(response)["status"] == "INVALID_ARGUMENT"

    def test_bad_parent_is_400(self, api: Client) -> None:
        response = api.post("/v1/projects/my-project/locations/US_CENTRAL/jobs", json=job_body())
        assert response.status_code == 400


class TestReadAndDelete:
    def test_get_returns_the_job(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        response = api.get(JOBS + "/nightly?alt=json")
        assert response.status_code == 200
        assert response.json["name"] == NAME

    def test_missing_job_is_404_job_not_found(self, api: Client) -> None:
        for response in (api.get(JOBS + "/nope"), api.delete(JOBS + "/nope")):
            assert response.status_code == 404
            assert error_of(response) == {
                "code": 404,
                "message": "Job not found.",
                "status": "NOT_FOUND",
            }

    def test_delete_answers_empty_object_and_the_job_is_gone(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        assert api.delete(JOBS + "/nightly").json == {}
        assert api.get(JOBS + "/nightly").status_code == 404

    def test_invalid_job_id_in_the_url_is_400(self, api: Client) -> None:
        assert api.get(JOBS + "/bad.id").status_code == 400


class TestList:
    def create(self, api: Client, count: int) -> list[str]:
        names = []
        for i in range(count):
            name = f"{NAME}-{i}"
            api.post(JOBS, json=job_body(name=name))
            names.append(name)
        return names

    def test_empty_list_is_an_empty_object(self, api: Client) -> None:
        assert api.get(JOBS).json == {}

    def test_pages_follow_creation_order_until_no_token(self, api: Client) -> None:
        names = self.create(api, 5)
        seen, token, pages = [], "", 0
        while True:
            query = f"?pageSize=2&pageToken={token}" if token else "?pageSize=2"
            page = api.get(JOBS + query).json
            pages += 1
            seen += [job["name"] for job in page["jobs"]]
            token = page.get("nextPageToken", "")
            if not token:
                break
        assert (seen, pages) == (names, 3)

    def test_page_size_zero_or_over_500_means_500(self, api: Client) -> None:
        names = self.create(api, 3)
        for size in ("0", "-4", "9999"):
            page = api.get(JOBS + f"?pageSize={size}").json
            assert [job["name"] for job in page["jobs"]] == names
            assert "nextPageToken" not in page

    def test_pages_stay_stable_when_a_listed_job_is_deleted(self, api: Client) -> None:
        names = self.create(api, 4)
        first = api.get(JOBS + "?pageSize=2").json
        api.delete(JOBS + "/nightly-0")
        second = api.get(JOBS + f"?pageSize=2&pageToken={first['nextPageToken']}").json
        assert [job["name"] for job in second["jobs"]] == names[2:]

    def test_jobs_of_other_locations_are_not_listed(self, api: Client) -> None:
        other = "/v1/projects/my-project/locations/europe-west1/jobs"
        api.post(other, json=job_body(name="projects/my-project/locations/europe-west1/jobs/x"))
        assert api.get(JOBS).json == {}
        assert len(api.get(other).json["jobs"]) == 1

    @pytest.mark.parametrize("token", ["garbage", "-1"])
    def test_unknown_page_token_is_400(self, api: Client, token: str) -> None:
        response = api.get(JOBS + f"?pageToken={token}")
        assert response.status_code == 400
        assert error_of(response)["status"] == "INVALID_ARGUMENT"

    def test_page_size_that_is_not_a_number_is_400(self, api: Client) -> None:
        assert api.get(JOBS + "?pageSize=ten").status_code == 400


class TestStateMachine:
    @pytest.mark.parametrize(
        "body", [b"{}", b"", b'{"name": "x"}'], ids=["empty-object", "empty", "name"]
    )
    def test_pause_and_resume_accept_the_bodies_clients_send(
        self, api: Client, body: bytes
    ) -> None:
        api.post(JOBS, json=job_body())
        paused = api.post(JOBS + "/nightly:pause", data=body, content_type="application/json")
        assert (paused.status_code, paused.json["state"]) == (200, "PAUSED")
        assert "scheduleTime" not in paused.json
        resumed = api.post(JOBS + "/nightly:resume", data=body, content_type="application/json")
        assert (resumed.status_code, resumed.json["state"]) == (200, "ENABLED")
        assert resumed.json["scheduleTime"] == "2026-09-24T02:00:00Z"

    def test_pause_of_a_paused_job_is_failed_precondition(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        api.post(JOBS + "/nightly:pause", json={})
        response = api.post(JOBS + "/nightly:pause", json={})
        assert response.status_code == 400
        error = error_of(response)
        assert error["status"] == "FAILED_PRECONDITION"
        assert error["message"] == f"Job {NAME} is PAUSED; only an ENABLED job can be paused."

    def test_resume_of_an_enabled_job_is_failed_precondition(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        response = api.post(JOBS + "/nightly:resume", json={})
        assert response.status_code == 400
        assert error_of(response)["status"] == "FAILED_PRECONDITION"

    def test_colon_verbs_on_a_missing_job_are_404(self, api: Client) -> None:
        for verb in ("pause", "resume", "run"):
            assert api.post(JOBS + f"/nope:{verb}", json={}).status_code == 404

    def test_colon_verb_body_with_other_fields_is_400(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        response = api.post(JOBS + "/nightly:pause", json={"state": "PAUSED"})
        assert response.status_code == 400

    def test_run_dispatches_now_even_when_paused(
        self, api: Client, target: RecordingTarget
    ) -> None:
        api.post(JOBS, json=job_body())
        api.post(JOBS + "/nightly:pause", json={})
        job = api.post(JOBS + "/nightly:run", json={}).json
        assert job["state"] == "PAUSED"
        [request] = target.wait_for(1)  # :run answers when the run is accepted
        assert request.headers["X-Cloudscheduler-Scheduletime"] == "2026-09-24T02:00:00Z"

    def test_api_jobs_fire_like_jobs_file_jobs(
        self, api: Client, emulator: Emulator, target: RecordingTarget
    ) -> None:
        api.post(JOBS, json=job_body())
        emulator.create_job(
            {"name": "from-file", "schedule": "0 2 * * *", "httpTarget": {"uri": TARGET}}
        )
        emulator.advance(timedelta(minutes=1))
        names = sorted(r.headers["X-Cloudscheduler-Jobname"] for r in target.requests)
        assert names == ["from-file", "nightly"]
        listed = [job["name"].rsplit("/", 1)[1] for job in api.get(JOBS).json["jobs"]]
        assert listed == ["nightly", "from-file"]

    def test_status_and_last_attempt_time_after_a_failure(
        self, api: Client, emulator: Emulator, target: RecordingTarget
    ) -> None:
        target.status = 500
        api.post(JOBS, json=job_body())
        emulator.advance(timedelta(minutes=1))
        job = api.get(JOBS + "/nightly").json
        assert job["status"] == {
            "code": 13,
            "message": "URL_UNREACHABLE-UNREACHABLE_5xx. Original HTTP response code number = 500",
        }
        assert job["lastAttemptTime"] == "2026-09-24T02:00:00Z"
        assert job["scheduleTime"] == "2026-09-24T02:00:05Z"


class TestLocations:
    def test_list_locations_has_the_region_label(self, api: Client) -> None:
        body = api.get("/v1/projects/my-project/locations").json
        assert body["nextPageToken"] == ""
        assert body["locations"][0] == {  # the configured location first
            "name": "projects/my-project/locations/us-central1",
            "locationId": "us-central1",
            "labels": {"cloud.googleapis.com/region": "us-central1"},
        }

    def test_list_locations_has_the_2026_regions_once(self, api: Client) -> None:
        ids = [
            loc["locationId"]
            for loc in api.get("/v1/projects/my-project/locations").json["locations"]
        ]
        assert len(ids) == len(set(ids))
        for region in (
            "europe-west4",
            "europe-west12",
            "me-central1",
            "me-central2",
            "me-west1",
            "asia-southeast3",
            "asia-south2",
            "northamerica-northeast2",
        ):
            assert region in ids
            assert api.get(f"/v1/projects/my-project/locations/{region}").status_code == 200

    def test_list_locations_pages_by_page_size_to_all_41_without_repeats(self, api: Client) -> None:
        first = api.get("/v1/projects/my-project/locations?pageSize=3").json
        assert len(first["locations"]) == 3
        assert first["nextPageToken"]
        ids, token = [], ""
        while True:
            page = api.get(f"/v1/projects/my-project/locations?pageSize=3&pageToken={token}").json
            ids += [loc["locationId"] for loc in page["locations"]]
            token = page["nextPageToken"]
            if not token:
                break
        assert len(ids) == len(set(ids)) == 41
        everything = api.get("/v1/projects/my-project/locations").json["locations"]
        assert ids == [loc["locationId"] for loc in everything]

    def test_list_locations_filters(self, api: Client) -> None:
        query = "filter=labels.cloud.googleapis.com/region%3Deurope-west1%20OR%20locationId%3Dus-*"
        body = api.get(f"/v1/projects/my-project/locations?{query}&pageSize=2").json
        assert [loc["locationId"] for loc in body["locations"]] == ["us-central1", "europe-west1"]
        rest = api.get(
            f"/v1/projects/my-project/locations?{query}&pageToken={body['nextPageToken']}"
        ).json
        assert {loc["locationId"] for loc in rest["locations"]} == {
            "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3",
            "us-west4",
        }  # fmt: skip
        assert rest["nextPageToken"] == ""

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ("pageToken=abc", "pageToken"),
            ("pageToken=9999999999999999999", "pageToken"),  # 19 digits: past any position
            ("pageSize=-1", "pageSize"),
            ("pageSize=three", "pageSize"),
            ("filter=planet%3Dmars", "filter"),
        ],
    )
    def test_a_bad_page_token_size_or_filter_is_400_naming_it(
        self, api: Client, query: str, field: str
    ) -> None:
        response = api.get(f"/v1/projects/my-project/locations?{query}")
        assert response.status_code == 400
        error = error_of(response)
        assert error["status"] == "INVALID_ARGUMENT"
        assert error["details"][0]["fieldViolations"][0]["field"] == field

    def test_get_location(self, api: Client) -> None:
        assert api.get(PARENT).json["locationId"] == "us-central1"

    def test_unknown_location_is_404(self, api: Client) -> None:
        response = api.get("/v1/projects/my-project/locations/mars-north1")
        assert response.status_code == 404
        assert error_of(response)["status"] == "NOT_FOUND"


class TestRouting:
    def test_unknown_route_is_a_json_404(self, api: Client) -> None:
        response = api.get("/v1/nothing/here")
        assert response.status_code == 404
        assert error_of(response)["status"] == "NOT_FOUND"

    @pytest.mark.parametrize(
        ("method", "path", "said"),
        [
            ("PUT", JOBS + "/nightly", "this path takes DELETE or GET or PATCH, not PUT."),
            ("DELETE", JOBS, "this path takes GET or POST, not DELETE."),
            ("POST", JOBS + "/nightly:explode",
             "a job has no ':explode'; it has :pause, :resume and :run."),
            ("GET", JOBS + "/nightly:pause", "':pause' takes POST only."),
        ],
    )  # fmt: skip
    def test_a_method_the_path_does_not_take_is_404_method_not_found(
        self, api: Client, method: str, path: str, said: str
    ) -> None:
        """Trial 92: ``:trigger`` read "this path does not take that HTTP method"."""
        response = api.open(path, method=method, json={})
        assert response.status_code == 404
        error = error_of(response)
        assert error["status"] == "NOT_FOUND"
        assert error["message"] == f"Method not found: {said}"

    @pytest.mark.parametrize(
        "path",  # trials 146, 161: a trailing slash listed the jobs; "//" answered "code 308"
        ["/v1/nothing", "/zzz", "/_emulator/zzz", JOBS + "/", JOBS + "//", "/_emulator//jobs"],
    )
    def test_an_unknown_path_is_a_json_404_naming_the_path(self, api: Client, path: str) -> None:
        response = api.get(path)
        assert response.status_code == 404
        assert error_of(response)["message"] == (
            f"The requested URL {path} was not found on this server."
        )

    @pytest.mark.parametrize("depth", [5000, 100_000])
    def test_a_body_nested_too_deeply_is_400_not_500(self, api: Client, depth: int) -> None:
        for path in (JOBS, JOBS + "/nightly:pause", "/_emulator/clock:advance"):
            response = api.post(
                path, data=b"[" * depth + b"]" * depth, content_type="application/json"
            )
            assert response.status_code == 400, path
            assert error_of(response)["status"] == "INVALID_ARGUMENT"

    def test_googles_standard_query_parameters_are_ignored(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        query = "?alt=json&prettyPrint=false&quotaUser=x&%24.xgafv=2&key=k&fields=name"
        assert api.get(JOBS + "/nightly" + query).status_code == 200

    @pytest.mark.parametrize("alt", ["alt=proto", "%24alt=proto%3Benum-encoding%3Dint", "alt=xml"])
    def test_an_alt_other_than_json_is_refused_not_answered_in_json(
        self, api: Client, alt: str
    ) -> None:
        """Left from earlier trials: ``alt=proto`` and ``alt=xml`` were answered in JSON, which
        a client that asked for protocol buffers cannot read."""
        response = api.get(JOBS + "?" + alt)
        assert response.status_code == 400
        assert error_of(response)["message"].endswith(
            "is not served: the emulator answers JSON only (alt=json; Google also answers "
            "alt=proto in protocol buffers)."
        )
        assert api.get(JOBS + "?alt=JSON").status_code == 200  # the value in any case
        odd = api.get(JOBS + "?%24alt=json%3Benum-encoding%3Dfoo")  # (trial 217: it was taken)
        assert (odd.status_code, error_of(odd)["message"]) == (
            400,
            'alt=json;enum-encoding=foo: "enum-encoding=foo" is not an option of alt=json, '
            "which takes enum-encoding=int (enums as numbers; as names without it).",
        )

    @pytest.mark.parametrize(
        ("path", "query", "said"),
        [  # trial 52: a misspelt pageSize was ignored (every job listed); 223: no hint
            (JOBS, "?pagesize=1", "did you mean 'pageSize'?"),
            (JOBS, "?filter=state%3DPAUSED", "it takes pageSize, pageToken."),  # no filter in v1
            (JOBS + "/nightly", "?foo=bar", "it takes none."),
            (JOBS + "/nightly:pause", "?pageSize=1", "it takes none."),  # another method's
        ],
    )
    def test_a_query_parameter_no_method_takes_is_400_naming_it(
        self, api: Client, path: str, query: str, said: str
    ) -> None:
        api.post(JOBS, json=job_body())
        response = api.post(path + query) if ":" in path else api.get(path + query)
        assert response.status_code == 400
        error, name = error_of(response), query[1:].split("=")[0]
        assert error["message"] == (
            f'Invalid JSON payload received. Unknown name "{name}": Cannot bind query parameter. '
            f"Field '{name}' could not be found in request message."
        )
        [violation] = error["details"][0]["fieldViolations"]
        assert violation["field"] == name
        assert (
            violation["description"] == f'"{name}" is not a query parameter of this method; {said}'
        )
        assert api.get(JOBS + "/nightly").json["state"] == "ENABLED"  # nothing changed

    def test_each_methods_own_fields_are_taken_in_either_spelling(self, api: Client) -> None:
        api.post(JOBS, json=job_body())
        api.post(JOBS, json=job_body(name=NAME + "2"))
        for query in (
            "?pageSize=1",
            "?page_size=1",
            "?%24alt=json%3Benum-encoding%3Dint&pageSize=1",
        ):
            assert len(api.get(JOBS + query).json["jobs"]) == 1, query
        patched = api.patch(JOBS + "/nightly?update_mask=schedule", json={"schedule": "0 3 * * *"})
        assert patched.json["schedule"] == "0 3 * * *"
        assert api.get(PARENT.rsplit("/", 1)[0] + "?filter=&pageSize=5").status_code == 200

    def test_an_empty_json_string_body_is_an_empty_message(self, api: Client) -> None:
        """Trial 56: Node's REST fallback (google-gax) sends ``""`` for a job left empty once
        its name went into the URL, so clearing a field by its mask alone was 400 "Expected
        an object, got str"."""
        api.post(JOBS, json=job_body(description="nightly sweep"))
        cleared = api.patch(
            JOBS + "/nightly?updateMask=description", data='""', content_type="application/json"
        )
        assert cleared.status_code == 200, cleared.json
        assert "description" not in cleared.json
        refused = api.patch(JOBS + "/nightly", data="[1]", content_type="application/json")
        assert error_of(refused)["message"] == (
            "Invalid JSON payload received. Expected an object, got an array."
        )

    def test_a_body_that_is_not_utf8_is_refused_naming_the_byte(self, api: Client) -> None:
        """Trial 92: the message was Python's ("'utf-8' codec can't decode byte 0xff…")."""
        refused = api.post(JOBS, data=b'{"name": "\xff"}', content_type="application/json")
        assert refused.status_code == 400
        assert error_of(refused)["message"] == (
            "Invalid JSON payload received. The body is not UTF-8: byte 0xff at position 10."
        )

    @pytest.mark.parametrize(
        "query",
        [
            "?updateMask=schedule&updateMask=description",
            "?updateMask=schedule&update_mask=description",
        ],
    )
    def test_a_field_given_twice_as_a_query_parameter_is_400(self, api: Client, query: str) -> None:
        """Trial 59: the first value won and the rest was dropped: half an update, with a 200."""
        api.post(JOBS, json=job_body(description="hello"))
        body = {"schedule": "0 9 * * 3", "description": "x"}
        response = api.patch(JOBS + "/nightly" + query, json=body)
        assert response.status_code == 400
        assert error_of(response)["message"] == (
            'updateMask is given 2 times ("schedule", "description"); give it once.'
        )
        assert api.get(JOBS + "/nightly").json["schedule"] == "0 2 * * *"  # nothing changed
        assert api.get(JOBS + "?pageSize=1&page_size=2").status_code == 400
