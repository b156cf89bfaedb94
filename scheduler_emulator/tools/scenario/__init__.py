"""Scenario files: jobs, a virtual clock, faults, a target and what should come out of it.

A scenario is a YAML (or JSON) file that ``scheduler-emulator replay SCENARIO`` runs on a
:class:`~scheduler_emulator.ManualClock` with an in-memory store, the same way
every time for the same seed. A small one::

    start: "2026-09-24T01:59:00Z"
    jobs:                                  # REST-shape jobs, short names OK (like a jobs file)
      - name: nightly
        schedule: "0 2 * * *"
        httpTarget: {uri: "http://orders.test/_triggers/timer/nightly"}
        retryConfig: {retryCount: 3}
    target:
      base_url: http://orders.test         # the origin the jobs' URIs use ...
      app: "orders_target:create_app()"    # ... served in-process by this WSGI app (or url: …)
    faults:
      seed: 7
      rules:
        - {action: lost_ack, job: nightly, run: 1, attempt: 1}
    steps:
      - advance: 2d                        # or 3600s, 90m, 1h30m, a number of seconds
      - run_job: nightly
    probe:
      path: /sweeps                        # GET, JSON answer
      fields: {sweeps: sweeps}             # name: dotted path (or len(path))
    expect:
      nightly:
        runs: 2                            # distinct ScheduleTime values delivered
        attempts: ">= 3"
        codes: {OK: 2}
        statuses: {409: 0}
        probe: {sweeps: "== runs"}

Top-level keys: ``start``, ``project``, ``location``, ``jobs``, ``steps``, ``faults``,
``target``, ``probe``, ``expect`` and ``extends`` (a scenario file whose top-level keys this one
replaces one by one). Every value is checked before anything runs, and every problem is reported
(one line each, in one :class:`ConfigurationError`), naming the file, the key path and the
value, e.g. ``duplicates.yaml: steps[2].advance: not a duration: "7 days"``.

**The expectation language.** A dotted key names a quantity whole (``codes.OK: 2`` is
``codes: {OK: 2}``; ``executions: 1`` beside ``executions.FAILED: 0``). Each value is a
*check*: a whole number ``N`` (the same as ``"== N"``) or a string ``"OP OPERAND"`` where
``OP`` is ``==``, ``!=``, ``<``, ``<=``, ``>`` or ``>=`` and ``OPERAND`` is a whole number or
a *quantity* of the same job, optionally ``+ N`` or ``- N`` (``"== runs"``, ``"<= runs +
1"``). Quantities of a job:

- ``runs`` — distinct ``X-CloudScheduler-ScheduleTime`` values delivered for the job (an attempt
  without the header counts as its own run): what a deduplicating target should process;
- ``runs.STATE`` — the job's runs that stand in ``STATE`` at the end (``succeeded``,
  ``gave-up``, ``retrying``), as ``GET /_emulator/runs`` shows them;
- ``attempts`` — attempts recorded, retries and injected duplicate deliveries included;
- ``codes.NAME`` — attempts that ended with that google.rpc code (``codes: {OK: 2}``);
- ``statuses.N`` — attempts recorded with HTTP status ``N`` (the target's answer, or the one a
  ``status`` fault injected);
- ``executions`` and ``executions.STATE`` — the Cloud Run executions the job's attempts started
  (with ``cloud_run_jobs``), all or those in that state (``SUCCEEDED``, ``FAILED``, ``RUNNING``,
  ``INTERRUPTED``): a ``:run`` is answered 200 whatever its execution does;
- ``probe.FIELD`` (or bare ``FIELD``) — a number read from the probe's JSON answer.

The probe is read once, after the last step.
"""

from __future__ import annotations

from .app import load_app, rebase_url
from .load import load_scenario
from .model import Check, Scenario, parse_duration, parse_instant
from .run import CheckResult, ScenarioRun, count_runs, evaluate, run_scenario, select

# The values a scenario is made of (steps, the target, the probe, expectations) and the key
# names are in :mod:`.model`.
__all__ = [
    "Check",
    "CheckResult",
    "Scenario",
    "ScenarioRun",
    "count_runs",
    "evaluate",
    "load_app",
    "load_scenario",
    "parse_duration",
    "parse_instant",
    "rebase_url",
    "run_scenario",
    "select",
]
