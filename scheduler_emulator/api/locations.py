"""Locations (``google.cloud.location.Locations``): the ones ListLocations shows.

Cloud Scheduler's production ListLocations answers with the regions it runs in. The emulator
shows the locations it was configured with (``--location``/``--locations``) first, then the
regions below, so a client that looks a region up (``gcloud scheduler locations describe``)
finds it; jobs may be created in any well-formed location either way. ListLocations pages
(``pageSize``, ``pageToken``) and filters (``filter``, Google's filtering language over the
fields of :data:`LOCATION_FIELDS`) as Google's Locations API does
(https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations/list).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Cloud Scheduler's regions as of 2026 (Google's region list, including the 2026 additions
#: europe-west4, europe-west12, me-central1, me-central2, me-west1, asia-southeast3,
#: asia-south2 and northamerica-northeast2).
GOOGLE_REGIONS: tuple[str, ...] = (
    "africa-south1",
    "asia-east1",
    "asia-east2",
    "asia-northeast1",
    "asia-northeast2",
    "asia-northeast3",
    "asia-south1",
    "asia-south2",
    "asia-southeast1",
    "asia-southeast2",
    "asia-southeast3",
    "australia-southeast1",
    "australia-southeast2",
    "europe-central2",
    "europe-north1",
    "europe-southwest1",
    "europe-west1",
    "europe-west2",
    "europe-west3",
    "europe-west4",
    "europe-west6",
    "europe-west8",
    "europe-west9",
    "europe-west10",
    "europe-west12",
    "me-central1",
    "me-central2",
    "me-west1",
    "northamerica-northeast1",
    "northamerica-northeast2",
    "southamerica-east1",
    "southamerica-west1",
    "us-central1",
    "us-east1",
    "us-east4",
    "us-east5",
    "us-south1",
    "us-west1",
    "us-west2",
    "us-west3",
    "us-west4",
)

#: The label every location carries (``cloud.googleapis.com/region``).
REGION_LABEL = "cloud.googleapis.com/region"
#: The fields of ``google.cloud.location.Location`` a ListLocations filter may name (its
#: ``metadata`` is not shown).
LOCATION_FIELDS = ("name", "locationId", "displayName", "labels")


@dataclass(frozen=True)
class Location:
    """One location resource.

    :param project: the project ID of the request.
    :param location_id: the region, e.g. ``us-central1``.
    """

    project: str
    location_id: str

    @property
    def name(self) -> str:
        """``projects/{project}/locations/{location_id}``."""
        return f"projects/{self.project}/locations/{self.location_id}"

    def to_json(self) -> dict[str, object]:
        """The REST JSON of ``google.cloud.location.Location`` (name, locationId, labels)."""
        return {
            "name": self.name,
            "locationId": self.location_id,
            "labels": {REGION_LABEL: self.location_id},
        }


def shown_locations(configured: tuple[str, ...]) -> tuple[str, ...]:
    """The location IDs ListLocations shows: ``configured`` first, then :data:`GOOGLE_REGIONS`
    not among them, each once."""
    return tuple(dict.fromkeys((*configured, *GOOGLE_REGIONS)))
