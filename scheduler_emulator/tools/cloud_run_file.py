"""``--cloud-run-jobs FILE``: the Cloud Run jobs the emulator runs locally, read from YAML or
JSON files through the one bounded reader of user files (:mod:`.documents`).

A file holds one Cloud Run job or a list of them, each a v2 REST ``Job`` or what
``gcloud run jobs describe J --format=export`` prints (the v1 shape); see
:func:`~scheduler_emulator.domain.cloud_run.parse_cloud_run_job`.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..domain.cloud_run import parse_cloud_run_job
from ..domain.errors import ConfigurationError
from ..domain.resources import Job
from ..wire import cloud_run_job_of
from .documents import load_document, read_text
from .jobs_file import each_problem

__all__ = ["load_cloud_run_jobs", "undefined_runs"]


def undefined_runs(jobs: Sequence[Job], defined: Collection[str]) -> list[tuple[int, Job, str]]:
    """The scheduler jobs of ``jobs`` whose ``jobs/J:run`` URI names a Cloud Run job not among
    ``defined`` (job IDs), each with its index and that ID: their attempts are answered 404."""
    found = []
    for index, job in enumerate(jobs):
        named = cloud_run_job_of(job.http_target.uri if job.http_target else "")
        if named is not None and named not in defined:
            found.append((index, job, named))
    return found


def unauthenticated_runs(jobs: Sequence[Job]) -> list[Job]:
    """The scheduler jobs of ``jobs`` that call the Cloud Run Admin API's run method without
    an ``oauthToken``: their attempts are answered 401, as in production."""
    return [
        job
        for job in jobs
        if job.http_target
        and cloud_run_job_of(job.http_target.uri)
        and not job.http_target.oauth_token
    ]


def load_cloud_run_jobs(
    paths: Iterable[str | Path], *, project: str, location: str
) -> tuple[Mapping[str, Any], ...]:
    """Read every Cloud Run job of ``paths``, checked.

    :param project: the project of a job named by its bare ID.
    :param location: the location of a bare ID, or of a v1 job without a location label.
    :raises ConfigurationError: (exit 2) naming the file, the job, the field and the value, or
        a job defined twice: every such problem of the files, one per line. A program that is
        neither on ``PATH`` nor a file here is warned about on stderr (it may appear later;
        until then its tasks fail ``not started``).
    :return: the definitions, in file order, for ``EmulatorOptions.cloud_run_jobs``.
    """
    definitions: list[Mapping[str, Any]] = []
    seen: dict[str, str] = {}
    problems: list[str] = []
    for path in paths:
        document = load_document(read_text(path, "the Cloud Run jobs file"), str(path))
        if document is None or document == []:  # an empty file, or an empty list
            raise ConfigurationError(f"{path}: the Cloud Run jobs file holds no job.")
        items = document if isinstance(document, list) else [document]
        for number, item in enumerate(items, 1):
            unnamed = "the Cloud Run job" + (f" of entry {number}" if len(items) > 1 else "")
            job, refused = each_problem(
                item,
                functools.partial(
                    parse_cloud_run_job, project=project, location=location, unnamed=unnamed
                ),
            )
            problems.extend(f"{path}: {exc.describe()}" for exc in refused)
            if job is None:
                continue
            if job.name in seen:
                problems.append(
                    f"{path}: Cloud Run job {job.name} is defined twice (first in "
                    f"{seen[job.name]})."
                )
            seen[job.name] = str(path)
            if job.argv and shutil.which(program := job.argv[0]) is None:
                what = (  # (trials 139, 143: a script without its x bit, a bare name here)
                    "a file here that is not executable (chmod +x)"
                    if os.sep in program and os.path.isfile(program)
                    else f"not on PATH (a file here is run as ./{program})"
                    if os.path.isfile(program)
                    else "neither a program on PATH nor a file here"
                )
                print(
                    f"warning: {path}: Cloud Run job {job.job_id} runs {program!r}, which is "
                    f"{what}: its tasks fail 'not started' until it is.",
                    file=sys.stderr,
                )
            if unset := [name for name in job.secrets if name not in os.environ]:  # (trial 208)
                print(
                    f"warning: {path}: Cloud Run job {job.job_id} takes {', '.join(unset)} from "
                    "a secret, which the emulator does not read, and this environment has no "
                    f"such variable: its tasks get none (start it as {unset[0]}=… "
                    "scheduler-emulator start …).",
                    file=sys.stderr,
                )
            definitions.append(item)
    if problems:
        raise ConfigurationError("\n".join(problems))
    return tuple(definitions)
