"""The ``cloud_scheduler`` fixture defines Cloud Run jobs and asserts on their executions."""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any

import pytest

from pytest_plugin import CloudScheduler
from scheduler_emulator.domain.cloud_run import RunOverrides
from scheduler_emulator.domain.errors import InvalidArgument

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

TEST_FILE = '''
import os
from datetime import timedelta

URI = "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/{job}:run"
OAUTH = {"serviceAccountEmail": "runner@my-project.iam.gserviceaccount.com"}


def export():
    """A Cloud Run task: task 1 fails on its first attempt."""
    index, attempt = os.environ["CLOUD_RUN_TASK_INDEX"], os.environ["CLOUD_RUN_TASK_ATTEMPT"]
    print("exporting", index, attempt, os.environ["BUCKET"])
    return 1 if (index, attempt) == ("1", "0") else 0


def broken():
    raise RuntimeError("no bucket")


def nightly(job):
    return {
        "name": "nightly-" + job,
        "schedule": "0 2 * * *",
        "httpTarget": {"uri": URI.format(job=job), "httpMethod": "POST", "oauthToken": OAUTH},
    }


def test_a_callable_job_runs_each_night(cloud_scheduler):
    cloud_scheduler.define_cloud_run_job(
        "export", export, task_count=2, max_retries=1, env={"BUCKET": "b"}
    )
    cloud_scheduler.create_job(nightly("export"))
    cloud_scheduler.advance(timedelta(days=1))
    [execution] = cloud_scheduler.assert_executed("export", count=1)
    assert sorted((a.index, a.attempt, a.exit_code) for a in execution.attempts) == [
        (0, 0, 0), (1, 0, 1), (1, 1, 0)
    ]
    assert "exporting 1 1 b" in execution.attempts[-1].stdout or any(
        "exporting 1 1 b" in a.stdout for a in execution.attempts
    )
    cloud_scheduler.assert_attempted("nightly-export", count=1, code="OK")


def test_assert_executed_lists_what_ran(cloud_scheduler):
    cloud_scheduler.define_cloud_run_job("broken", broken, max_retries=0)
    cloud_scheduler.create_job(nightly("broken"))
    cloud_scheduler.advance(timedelta(days=1))
    cloud_scheduler.assert_executed("broken")


def test_assert_executed_says_why_the_scheduler_could_not_run_it(cloud_scheduler):
    cloud_scheduler.define_cloud_run_job("export", export, env={"BUCKET": "b"})
    job = nightly("export")
    del job["httpTarget"]["oauthToken"]
    cloud_scheduler.create_job(job)
    cloud_scheduler.advance(timedelta(days=1))
    cloud_scheduler.assert_executed("export")
'''


def test_a_test_defines_a_job_by_callable_and_asserts_its_executions(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_nightly=TEST_FILE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*expected at least one execution of Cloud Run job 'broken' in state SUCCEEDED;"
            " 0 of 1 matched*",
            "*broken-* created 2026-01-01T02:00:00Z FAILED (task 0 attempt 0: 1 (RuntimeError: "
            "no bucket))*",
            "*(no executions; Cloud Run jobs defined: export)*",
            "*scheduler job nightly-export: UNAUTHENTICATED: *missing required authentication"
            " credential*give the job?s httpTarget an oauthToken*",
        ]
    )


def test_a_command_given_as_one_string_is_refused_as_the_daemons_files_refuse_it(
    cloud_scheduler: CloudScheduler,
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        cloud_scheduler.define_cloud_run_job("export", "python export.py")
    assert 'command must be a list of strings; got "python export.py"' in str(refused.value)
    assert cloud_scheduler.emulator.cloud_run.jobs() == []


@pytest.mark.parametrize(
    ("keywords", "said"),
    [
        ({"command": "python x.py"}, 'command must be a list of strings; got "python x.py"'),
        ({"command": []}, "command must be the local command to run"),
        ({"args": "-v"}, 'args must be a list of strings; got "-v"'),
        ({"task_count": 0}, "task_count must be a whole number from 1 to 10000; got 0"),
        ({"parallelism": -1}, "parallelism must be a whole number from 0 to 10000; got -1"),
        ({"max_retries": 11}, "max_retries must be a whole number from 0 to 10; got 11"),
        ({"timeout": "soon"}, 'timeout must be a duration like "600s"'),
    ],
)
def test_a_refused_definition_names_the_keyword_not_a_field_the_test_never_wrote(
    cloud_scheduler: CloudScheduler, keywords: dict[str, Any], said: str
) -> None:
    """A trial: ``define_cloud_run_job("export", "python x.py")`` named
    ``template.template.containers[0].command``, a path of the definition it builds."""
    with pytest.raises(InvalidArgument) as refused:
        cloud_scheduler.define_cloud_run_job("export", **{"command": ["true"], **keywords})
    assert f"jobs/export: define_cloud_run_job's {said}" in str(refused.value)


def _task() -> int:
    return 0


def test_a_function_of_a_module_not_on_sys_path_is_refused_when_defined(
    cloud_scheduler: CloudScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 228: under ``pytest --import-mode=importlib`` each task attempt failed with
    ModuleNotFoundError, four process starts later, saying nothing of why."""
    monkeypatch.setattr(_task, "__module__", "tests.not_on_sys_path")
    with pytest.raises(TypeError, match=r"imports the module 'tests.not_on_sys_path' by name, wh"):
        cloud_scheduler.define_cloud_run_job("export", _task)
    assert cloud_scheduler.emulator.cloud_run.jobs() == []


def test_args_follow_the_command_and_a_runs_override_replaces_them(
    cloud_scheduler: CloudScheduler,
) -> None:
    name = cloud_scheduler.define_cloud_run_job("export", ["python", "export.py"], args=["a"])
    [job] = cloud_scheduler.emulator.cloud_run.jobs()
    assert (job.name, job.argv) == (name, ("python", "export.py", "a"))
    overridden = job.with_overrides(RunOverrides(args=("b",)))
    assert overridden.argv == ("python", "export.py", "b")


def test_assert_executed_says_why_a_command_did_not_start(cloud_scheduler: CloudScheduler) -> None:
    cloud_scheduler.define_cloud_run_job("export", ["no-such-command-xyz"], max_retries=0)
    cloud_scheduler.emulator.cloud_run.run(cloud_scheduler.emulator.cloud_run.jobs()[0])
    cloud_scheduler.advance(timedelta(seconds=1))  # returns once the execution has ended
    with pytest.raises(AssertionError) as failed:
        cloud_scheduler.assert_executed("export")
    assert "task 0 attempt 0: not started (cannot start 'no-such-command-xyz': " in str(
        failed.value
    )


def test_runs_hours_apart_in_one_move_do_not_overlap_in_real_time(
    cloud_scheduler: CloudScheduler,
) -> None:
    cloud_scheduler.define_cloud_run_job("export", [sys.executable, "-c", "pass"], max_retries=0)
    uri = "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/export:run"
    oauth = {"serviceAccountEmail": "runner@my-project.iam.gserviceaccount.com"}
    for name, schedule in (("early", "0 2 * * *"), ("late", "0 3 * * *")):
        target = {"uri": uri, "httpMethod": "POST", "oauthToken": oauth}
        cloud_scheduler.create_job(name=name, schedule=schedule, http_target=target)
    cloud_scheduler.advance(timedelta(days=1))
    first, second = cloud_scheduler.assert_executed("export", count=2)
    [ran_first], [ran_second] = first.attempts, second.attempts
    assert ran_first.end is not None and ran_first.end <= ran_second.start


def succeeds() -> int:
    """A Cloud Run task that succeeds (run in a task process by its module and name)."""
    return 0


def test_assert_executed_takes_a_state_in_any_case_and_refuses_an_unknown_one(
    cloud_scheduler: CloudScheduler,
) -> None:
    """A trial: ``state="succeeded"`` matched nothing ("0 of 1 matched … SUCCEEDED"), and a
    misspelt state was taken as one no execution is in."""
    cloud_scheduler.define_cloud_run_job("ok", succeeds)
    cloud_scheduler.emulator.cloud_run.run(cloud_scheduler.emulator.cloud_run.jobs()[0])
    cloud_scheduler.advance(timedelta(seconds=1))  # returns once the execution has ended
    assert len(cloud_scheduler.assert_executed("ok", count=1, state="succeeded")) == 1
    with pytest.raises(ValueError, match="^state must be one of RUNNING, SUCCEEDED, FAILED, "):
        cloud_scheduler.assert_executed("ok", state="SUCEEDED")


def test_assert_executed_names_a_failed_call_to_a_misspelt_cloud_run_job(
    cloud_scheduler: CloudScheduler,
) -> None:
    """A trial: with ``…/jobs/nighlty:run`` in the scheduler job's URI, ``assert_executed`` said
    only "no executions; Cloud Run jobs defined: nightly", not the 404 the call got."""
    cloud_scheduler.define_cloud_run_job("nightly", succeeds)
    uri = "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/nighlty:run"
    oauth = {"serviceAccountEmail": "runner@my-project.iam.gserviceaccount.com"}
    cloud_scheduler.create_job(
        name="nightly-work", schedule="0 2 * * *",
        http_target={"uri": uri, "http_method": "POST", "oauth_token": oauth},
    )  # fmt: skip
    cloud_scheduler.advance(timedelta(days=1))
    with pytest.raises(AssertionError) as failed:
        cloud_scheduler.assert_executed("nightly")
    assert "  scheduler job nightly-work: NOT_FOUND: Resource 'nighlty'" in str(failed.value)


def test_no_execution_yet_says_when_the_scheduler_job_runs_it_and_a_misspelt_one_is_named(
    cloud_scheduler: CloudScheduler,
) -> None:
    """Trial 228: asserted before the 02:00 run, or of ``exprot``, the failure said only which
    Cloud Run jobs were defined."""
    cloud_scheduler.define_cloud_run_job("export", ["true"])
    where = (
        f"projects/{cloud_scheduler.emulator.project}/locations/{cloud_scheduler.emulator.location}"
    )
    uri = f"https://run.googleapis.com/v2/{where}/jobs/export:run"
    oauth = {"serviceAccountEmail": "runner@my-project.iam.gserviceaccount.com"}
    cloud_scheduler.create_job(
        name="nightly-export", schedule="0 2 * * *", http_target={"uri": uri, "oauthToken": oauth}
    )
    due = cloud_scheduler.get_job("nightly-export").schedule_time
    with pytest.raises(AssertionError) as early:
        cloud_scheduler.assert_executed("export", count=1)
    assert (
        f"scheduler job nightly-export runs it next at {due:%Y-%m-%dT%H:%M:%SZ} (advance the"
        in (str(early.value))
    )
    with pytest.raises(AssertionError, match=r"defined: export; did you mean 'export'\?\)"):
        cloud_scheduler.assert_executed("exprot")


def test_a_cloud_run_job_defined_twice_is_refused(cloud_scheduler: CloudScheduler) -> None:
    """Trial 228: the second definition replaced the first without a word."""
    cloud_scheduler.define_cloud_run_job("export", ["true"])
    with pytest.raises(InvalidArgument, match="'export' is defined already in this test"):
        cloud_scheduler.define_cloud_run_job("export", ["false"])
    [job] = cloud_scheduler.emulator.cloud_run.jobs()
    assert job.argv == ("true",)


def test_a_refused_definition_is_shown_at_the_tests_line(pytester: pytest.Pytester) -> None:
    """Trial 228: some 40 lines of the plugin's frames (its docstring too) came first."""
    pytester.makepyfile(
        test_bad="def test_bad(cloud_scheduler):\n"
        "    cloud_scheduler.define_cloud_run_job('export', ['true'], task_count=0)\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*define_cloud_run_job's task_count must be a whole number*"])
    assert "pytest_plugin/scheduler.py" not in result.stdout.str()
