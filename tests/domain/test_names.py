"""Job and location names: ``projects/P/locations/L/jobs/J``, J of letters, digits, ``-`` and
``_``, at most 500 characters, as Google's REST reference says
(https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs); a location is
any ID shaped like ``us-central1`` (our pinned rule, where Google checks for a real region)."""

from __future__ import annotations

import pytest

from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.domain.names import (
    JOB_NAME_FORMAT_MESSAGE,
    JobName,
    LocationName,
    generate_job_id,
    location_name,
    parse_job_name,
    parse_location_name,
    qualify_job_name,
)
from tests.support import case_table

GOOGLE_FORMAT_MESSAGE = (
    'Job name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/jobs/<JOB_ID>".'
)


def assert_invalid(exc: InvalidArgument, message: str, field: str) -> None:
    """Check status, message and field violation of an InvalidArgument."""
    assert exc.http_status == 400
    assert exc.status == "INVALID_ARGUMENT"
    assert exc.message == message
    assert [v.field for v in exc.violations] == [field]


class TestParseJobName:
    @case_table(
        __file__,
        "valid_names",
        pytest.param(
            "projects/my-project/locations/northamerica-northeast1/jobs/" + "j" * 500,
            {"project": "my-project", "location": "northamerica-northeast1", "job_id": "j" * 500},
            id="job-id-of-500-characters",
        ),
    )
    def test_valid_names_parse_into_their_parts(self, name: str, expected: dict[str, str]) -> None:
        parsed = parse_job_name(name)

        assert parsed == JobName(**expected)
        assert parsed.full == name

    def test_google_message_is_verbatim(self) -> None:
        assert JOB_NAME_FORMAT_MESSAGE == GOOGLE_FORMAT_MESSAGE

    @case_table(__file__, "wrong_shapes")
    def test_names_of_the_wrong_shape_get_googles_message(self, name: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_job_name(name)

        assert_invalid(caught.value, GOOGLE_FORMAT_MESSAGE, "name")
        assert name in caught.value.violations[0].description

    @case_table(
        __file__,
        "bad_segments",
        pytest.param(
            "projects/my-project/locations/us-central1/jobs/" + "j" * 501,
            "name has a job ID of 501 characters; the maximum is 500.",
            id="job-id-of-501-characters",
        ),
    )
    def test_names_with_a_bad_segment_name_the_segment(self, name: str, message: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_job_name(name)

        assert_invalid(caught.value, message, "name")

    def test_name_outside_the_requested_parent_is_rejected(self) -> None:
        name = "projects/my-project/locations/us-central1/jobs/j"

        with pytest.raises(InvalidArgument) as caught:
            parse_job_name(name, parent="projects/my-project/locations/europe-west1")

        assert_invalid(
            caught.value,
            f'name "{name}" is not in the location '
            '"projects/my-project/locations/europe-west1" of the request.',
            "name",
        )

    def test_name_inside_the_requested_parent_is_accepted(self) -> None:
        parsed = parse_job_name(
            "projects/my-project/locations/us-central1/jobs/j",
            parent="projects/my-project/locations/us-central1",
        )

        assert parsed.parent == LocationName("my-project", "us-central1")
        assert parsed.parent.full == "projects/my-project/locations/us-central1"

    def test_field_can_be_renamed(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_job_name("nope", field="job.name")

        assert caught.value.violations[0].field == "job.name"


class TestProjectIds:
    """Google's rule for project IDs (cloud.google.com/resource-manager/docs/
    creating-managing-projects): 6 to 30 lower-case letters, digits and hyphens, starting with a
    letter, not ending with a hyphen; or domain-scoped (``example.com:my-project``)."""

    @case_table(__file__, "project_ids")
    def test_a_project_id_is_accepted_only_as_google_accepts_it(
        self, project: str, valid: bool
    ) -> None:
        name = f"projects/{project}/locations/us-central1/jobs/j"
        if valid:
            assert parse_job_name(name).project == project
            return
        with pytest.raises(InvalidArgument) as caught:
            parse_job_name(name)
        assert caught.value.message.startswith('name has an invalid project ID "')
        assert "6 to 30 lower-case letters, digits and hyphens" in caught.value.message

    def test_a_long_project_id_is_shown_shortened(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_job_name(f"projects/{'x' * 200}/locations/us-central1/jobs/j")
        assert "x" * 77 + '…"' in caught.value.message  # the quote closes after the cut
        assert "x" * 81 not in caught.value.message


class TestLocationNames:
    def test_location_name_joins_project_and_location(self) -> None:
        assert (
            location_name("my-project", "us-central1")
            == "projects/my-project/locations/us-central1"
        )

    @case_table(__file__, "bad_location_parts")
    def test_location_name_rejects_bad_parts(self, project: str, location: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            location_name(project, location)

        assert caught.value.violations[0].field == "parent"

    def test_parse_location_name_returns_the_parts(self) -> None:
        assert parse_location_name("projects/my-project/locations/us-east1") == LocationName(
            "my-project", "us-east1"
        )

    @case_table(__file__, "bad_location_shapes")
    def test_parse_location_name_rejects_other_shapes(self, name: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_location_name(name)

        assert_invalid(
            caught.value,
            f'parent "{name}" must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>".',
            "parent",
        )


class TestGenerateJobId:
    def test_generated_id_is_32_lowercase_hex_digits(self) -> None:
        job_id = generate_job_id()

        assert len(job_id) == 32
        assert set(job_id) <= set("0123456789abcdef")
        parse_job_name(f"projects/my-project/locations/us-central1/jobs/{job_id}")

    def test_generated_ids_are_unique(self) -> None:
        assert len({generate_job_id() for _ in range(1000)}) == 1000


class TestQualifyJobName:
    def test_short_name_gets_default_project_and_location(self) -> None:
        assert (
            qualify_job_name("nightly", "my-project", "us-central1")
            == "projects/my-project/locations/us-central1/jobs/nightly"
        )

    def test_full_name_is_kept(self) -> None:
        name = "projects/other-project/locations/europe-west1/jobs/nightly"

        assert qualify_job_name(name, "my-project", "us-central1") == name

    @case_table(__file__, "bad_qualified")
    def test_invalid_results_are_rejected(
        self, name_or_id: str, project: str, location: str, message: str
    ) -> None:
        with pytest.raises(InvalidArgument) as caught:
            qualify_job_name(name_or_id, project, location)

        assert_invalid(caught.value, message, "name")
