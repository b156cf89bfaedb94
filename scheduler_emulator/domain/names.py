"""Job and location resource names.

A job is named ``projects/{PROJECT_ID}/locations/{LOCATION_ID}/jobs/{JOB_ID}``; its location is
``projects/{PROJECT_ID}/locations/{LOCATION_ID}``. The character rules are the proto's:

- PROJECT_ID: Google's rule for project IDs (cloud.google.com/resource-manager/docs/
  creating-managing-projects): 6 to 30 lower-case letters, digits and hyphens, starting with a
  letter and not ending with a hyphen; optionally domain-scoped (``example.com:my-project``, a
  lower-case domain, a colon, then such an ID). A project *number* (digits only, as Google's
  resource names also accept) is allowed too.
- LOCATION_ID: any ID of the shape ``us-central1`` (``^[a-z]+(-[a-z]+)*[0-9]*$``, the emulator's
  rule); whether the location is *served* is the store's business, not this module's.
- JOB_ID: ``^[A-Za-z0-9_-]{1,500}$``.

Every error is :class:`~scheduler_emulator.domain.errors.InvalidArgument` with ``field="name"`` (or
the field the caller names). A string that is not of the ``projects/…/jobs/…`` shape gets Google's
verbatim message (:data:`JOB_NAME_FORMAT_MESSAGE`); a well-shaped name with a bad segment
gets a short sentence naming the segment and its value.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import NamedTuple

from .errors import InvalidArgument, show_value

__all__ = [
    "JOB_NAME_FORMAT_MESSAGE",
    "JobName",
    "LocationName",
    "MAX_JOB_ID_LENGTH",
    "check_job_id",
    "check_location_id",
    "check_project_id",
    "generate_job_id",
    "job_labels",
    "location_name",
    "parse_job_name",
    "parse_location_name",
    "qualify_job_name",
]

#: Google's message for a job name that is not a full resource name.
JOB_NAME_FORMAT_MESSAGE = (
    'Job name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/jobs/<JOB_ID>".'
)

_PROJECT_ID = r"[a-z][a-z0-9-]{4,28}[a-z0-9]"
_DOMAIN = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+"
PROJECT_ID_RE = re.compile(rf"(?:{_DOMAIN}:)?{_PROJECT_ID}|[0-9]{{1,19}}")
LOCATION_ID_RE = re.compile(r"[a-z]+(-[a-z]+)*[0-9]*")
JOB_ID_RE = re.compile(r"[A-Za-z0-9_\-]{1,500}")

#: Longest JOB_ID the service accepts.
MAX_JOB_ID_LENGTH = 500


class LocationName(NamedTuple):
    """A parsed location name ``projects/{project}/locations/{location}``."""

    project: str
    location: str

    @property
    def full(self) -> str:
        """The full resource name, ``projects/P/locations/L``."""
        return f"projects/{self.project}/locations/{self.location}"


class JobName(NamedTuple):
    """A parsed job name ``projects/{project}/locations/{location}/jobs/{job_id}``.

    Build one with :func:`parse_job_name` (which validates) or directly from parts you have
    already checked.
    """

    project: str
    location: str
    job_id: str

    @property
    def full(self) -> str:
        """The full resource name, ``projects/P/locations/L/jobs/J``."""
        return f"projects/{self.project}/locations/{self.location}/jobs/{self.job_id}"

    @property
    def parent(self) -> LocationName:
        """The location the job lives in."""
        return LocationName(self.project, self.location)


class _Segment(NamedTuple):
    """The character rule of one segment of a name, and what its error message says."""

    noun: str
    pattern: re.Pattern[str]
    advice: str

    def check(self, value: str, field: str) -> str:
        """Return ``value`` when the pattern matches all of it.

        :raises InvalidArgument: naming ``field``, the segment and ``value``, when it does not.
        """
        if not self.pattern.fullmatch(value):
            raise InvalidArgument(
                f"{field} has an invalid {self.noun} {show_value(value)}: {self.advice}",
                field=field,
            )
        return value


_PROJECT = _Segment(
    "project ID",
    PROJECT_ID_RE,
    "a project ID is 6 to 30 lower-case letters, digits and hyphens, starting with a letter "
    'and not ending with a hyphen, such as "my-project" (or domain-scoped: '
    '"example.com:my-project"; or a project number).',
)
_LOCATION_ID = _Segment(  # (trial 217: "mars-1" refused, the rule unsaid)
    "location ID",
    LOCATION_ID_RE,
    'expected lower-case words joined by hyphens, then digits, such as "us-central1" or '
    '"europe-west4".',
)
_JOB_ID = _Segment("job ID", JOB_ID_RE, "use only letters, digits, hyphens and underscores.")


def check_project_id(project: str, *, field: str = "name") -> str:
    """Check a PROJECT_ID against Google's rule for project IDs (module docstring).

    :param project: the project ID, e.g. ``my-project``, ``example.com:my-project`` or a
        project number such as ``123456789012``.
    :param field: the field path reported in the error.
    :raises InvalidArgument: for anything else (``A``, ``..``, ``shop``, 31 characters, a
        trailing hyphen), naming ``field`` and the value.
    :return: ``project`` unchanged.
    """
    return _PROJECT.check(project, field)


def check_location_id(location: str, *, field: str = "name") -> str:
    """Check a LOCATION_ID against the emulator's location rule (the shape
    ``us-central1``: ``^[a-z]+(-[a-z]+)*[0-9]*$``).

    :param location: the location ID, e.g. ``us-central1``.
    :param field: the field path reported in the error.
    :raises InvalidArgument: when it does not match ``^[a-z]+(-[a-z]+)*[0-9]*$``.
    :return: ``location`` unchanged.
    """
    return _LOCATION_ID.check(location, field)


def check_job_id(job_id: str, *, field: str = "name") -> str:
    """Check a JOB_ID against the proto's rule ``^[A-Za-z0-9_-]{1,500}$``.

    :param job_id: the short job ID, e.g. ``nightly``.
    :param field: the field path reported in the error.
    :raises InvalidArgument: when it is empty, longer than 500 characters, or contains anything
        but letters, digits, hyphens and underscores.
    :return: ``job_id`` unchanged.
    """
    if len(job_id) > MAX_JOB_ID_LENGTH:
        raise InvalidArgument(
            f"{field} has a job ID of {len(job_id)} characters; the maximum is "
            f"{MAX_JOB_ID_LENGTH}.",
            field=field,
        )
    return _JOB_ID.check(job_id, field)


def parse_location_name(name: str, *, field: str = "parent") -> LocationName:
    """Parse and validate ``projects/{P}/locations/{L}`` (any location of the shape
    ``us-central1``).

    :param name: the location resource name, e.g. a CreateJob/ListJobs ``parent``.
    :param field: the field path reported in the error.
    :raises InvalidArgument: when the shape is wrong or a segment breaks its rule.
    :return: the parts as a :class:`LocationName`.
    """
    parts = name.split("/")
    if len(parts) != 4 or parts[0] != "projects" or parts[2] != "locations":
        raise InvalidArgument(
            f"{field} {show_value(name)} must be formatted: "
            '"projects/<PROJECT_ID>/locations/<LOCATION_ID>".',
            field=field,
        )
    return LocationName(
        check_project_id(parts[1], field=field), check_location_id(parts[3], field=field)
    )


def parse_job_name(name: str, *, parent: str | None = None, field: str = "name") -> JobName:
    """Parse and validate a full job name.

    :param name: ``projects/{P}/locations/{L}/jobs/{J}``.
    :param parent: optional location name (``projects/P/locations/L``, e.g. the URL's parent of a
        CreateJob); when given, the job must live in it.
    :param field: the field path reported in the error.
    :raises InvalidArgument: with Google's verbatim :data:`JOB_NAME_FORMAT_MESSAGE` when ``name``
        is not of the ``projects/…/locations/…/jobs/…`` shape (e.g. a bare ID); with a specific
        sentence when a segment breaks its character rule or the job is not in ``parent``.
    :return: the parts as a :class:`JobName`.
    """
    parts = name.split("/")
    if (
        len(parts) != 6
        or parts[0] != "projects"
        or parts[2] != "locations"
        or parts[4] != "jobs"
        or not all(parts[1::2])
    ):
        raise InvalidArgument(
            JOB_NAME_FORMAT_MESSAGE,
            field=field,
            description=f"{field} {show_value(name)} is not of the form "
            "projects/<PROJECT_ID>/locations/<LOCATION_ID>/jobs/<JOB_ID>.",
        )
    job_name = JobName(
        check_project_id(parts[1], field=field),
        check_location_id(parts[3], field=field),
        check_job_id(parts[5], field=field),
    )
    if parent is not None and job_name.parent.full != parent:
        raise InvalidArgument(
            f'{field} {show_value(name)} is not in the location "{parent}" of the request.',
            field=field,
        )
    return job_name


def location_name(project: str, location: str) -> str:
    """Build and validate ``projects/{project}/locations/{location}``.

    :param project: the project ID.
    :param location: the location ID (of the shape ``us-central1``).
    :raises InvalidArgument: when either part breaks its rule (``field="parent"``).
    :return: the full location name.
    """
    return LocationName(
        check_project_id(project, field="parent"), check_location_id(location, field="parent")
    ).full


def generate_job_id() -> str:
    """Return a new random job ID for a create without a name.

    Google does not document the format of generated IDs; the emulator uses 32
    lowercase hexadecimal digits of a random UUID4 (e.g. ``9f1c2e4b7a3d4c0e8b5a6f7e1d2c3b4a``),
    which satisfies the JOB_ID rule and is unique for all practical purposes.

    :return: the short job ID (not the full name).
    """
    return uuid.uuid4().hex


def qualify_job_name(name_or_id: str, project: str, location: str) -> str:
    """Turn a jobs-file ``name`` into a full job name.

    A short name (no ``/``) such as ``nightly`` gets ``project`` and ``location``; a full name is
    validated and kept as is (it may name another project or location).

    :param name_or_id: a JOB_ID or a full ``projects/P/locations/L/jobs/J`` name.
    :param project: the default project ID.
    :param location: the default location ID.
    :raises InvalidArgument: (``field="name"``) when the result is not a valid job name.
    :return: the full job name.
    """
    if "/" in name_or_id:
        return parse_job_name(name_or_id).full
    return JobName(
        check_project_id(project),
        check_location_id(location),
        check_job_id(name_or_id),
    ).full


def job_labels(names: Sequence[str]) -> list[str]:
    """What the JOB column shows for each full job name: its ID, or ``PROJECT/LOCATION/ID`` when
    the names span more than one project or location (trial 59: three jobs ``dup`` of three
    locations read as one job, three times).

    >>> job_labels(["projects/p/locations/l/jobs/a", "projects/q/locations/l/jobs/a"])
    ['p/l/a', 'q/l/a']
    """
    if len({name.rsplit("/jobs/", 1)[0] for name in names}) <= 1:
        return [name.rsplit("/", 1)[-1] for name in names]
    short = (name.removeprefix("projects/").replace("/locations/", "/") for name in names)
    return [name.replace("/jobs/", "/") for name in short]
