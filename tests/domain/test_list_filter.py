"""List filters in Google's filtering language (https://google.aip.dev/160) over a resource's
REST JSON, as ListLocations' ``filter`` takes them."""

from __future__ import annotations

import pytest

from scheduler_emulator.api.locations import LOCATION_FIELDS, Location
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.domain.list_filter import MAX_FILTER_CHARS, parse_filter
from tests.support import case_table

LOCATIONS = [
    Location("p", region).to_json()
    for region in ("us-central1", "europe-west1", "europe-north1", "asia-east1")
]


@case_table(__file__, "kept")
def test_a_filter_keeps_the_matching_locations(filter: str, kept: list[str]) -> None:
    keep = parse_filter(filter, LOCATION_FIELDS)
    assert [loc["locationId"] for loc in LOCATIONS if keep(loc)] == kept


@case_table(
    __file__,
    "refused",
    pytest.param("x" * (MAX_FILTER_CHARS + 1), "longer than 4096", id="too-long"),
    pytest.param("(" * 40 + "name=a" + ")" * 40, "nested more than 32", id="too-deep"),
)
def test_a_bad_filter_is_invalid_argument_naming_it(filter: str, shown: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_filter(filter, LOCATION_FIELDS)
    assert shown in caught.value.message
    assert [v.field for v in caught.value.violations] == ["filter"]
