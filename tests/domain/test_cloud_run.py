"""Cloud Run job definitions, run requests and the rules of an execution's tasks."""

from __future__ import annotations

import copy

import pytest

from scheduler_emulator.domain.cloud_run import (
    DEFAULT_MAX_RETRIES,
    CloudRunJob,
    RunOverrides,
    TaskRules,
    parse_cloud_run_job,
    parse_run_request,
)
from scheduler_emulator.domain.errors import InvalidArgument

V2 = {
    "name": "projects/shop/locations/europe-west1/jobs/export",
    "template": {
        "taskCount": 3,
        "parallelism": 2,
        "template": {
            "maxRetries": 1,
            "timeout": "120s",
            "containers": [
                {
                    "image": "europe-docker.pkg.dev/shop/jobs/export:1",
                    "command": ["python", "export.py"],
                    "args": ["--all"],
                    "env": [{"name": "BUCKET", "value": "b1"}],
                }
            ],
        },
    },
}

# What `gcloud run jobs describe export --format=export` prints (v1 shape), abridged.
V1 = {
    "apiVersion": "run.googleapis.com/v1",
    "kind": "Job",
    "metadata": {
        "name": "export",
        "namespace": "123456789012",
        "labels": {"cloud.googleapis.com/location": "europe-west1"},
    },
    "spec": {
        "template": {
            "spec": {
                "taskCount": 3,
                "parallelism": 2,
                "template": {
                    "spec": {
                        "maxRetries": 1,
                        "timeoutSeconds": "120",
                        "containers": [
                            {
                                "image": "europe-docker.pkg.dev/shop/jobs/export:1",
                                "command": ["python", "export.py"],
                                "args": ["--all"],
                                "env": [{"name": "BUCKET", "value": "b1"}],
                            }
                        ],
                    }
                },
            }
        }
    },
}


SECRET = {"name": "DB_PASS", "valueSource": {"secretKeyRef": {"secret": "db", "version": "1"}}}


class TestDefinitions:
    def test_a_variable_from_a_secret_is_left_to_the_daemons_environment(self) -> None:
        """Trial 204: it was set empty over the value the daemon was started with."""
        v1_secret = {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "1"}}}
        env = [{"name": "BUCKET", "value": "b1"}, SECRET, v1_secret]
        body = {
            "name": "j",
            "template": {"template": {"containers": [{"command": ["x"], "env": env}]}},
        }
        job = parse_cloud_run_job(body, project="p", location="l")
        assert (job.env, job.secrets) == ((("BUCKET", "b1"),), ("DB_PASS", "TOKEN"))

    def test_v2_and_v1_shapes_read_to_the_same_job(self) -> None:
        v2 = parse_cloud_run_job(V2, project="shop", location="us-central1")
        v1 = parse_cloud_run_job(V1, project="shop", location="us-central1")
        assert v2 == v1
        assert v2 == CloudRunJob(
            name="projects/shop/locations/europe-west1/jobs/export",
            argv=("python", "export.py", "--all"),
            env=(("BUCKET", "b1"),),
            task_count=3,
            parallelism=2,
            max_retries=1,
            timeout_seconds=120.0,
            command_length=2,
            image="europe-docker.pkg.dev/shop/jobs/export:1",
        )

    def test_defaults_are_googles(self) -> None:
        job = parse_cloud_run_job(
            {"name": "j", "template": {"template": {"containers": [{"command": ["true"]}]}}},
            project="p",
            location="us-east1",
        )
        assert job.name == "projects/p/locations/us-east1/jobs/j"
        assert (job.task_count, job.parallelism, job.max_retries, job.timeout_seconds) == (
            1,
            0,
            DEFAULT_MAX_RETRIES,
            600.0,
        )

    def test_emulator_command_names_what_runs_for_an_image_without_command(self) -> None:
        job = parse_cloud_run_job(
            {
                "name": "j",
                "template": {
                    "template": {
                        "containers": [
                            {"image": "gcr.io/p/j", "emulatorCommand": ["./run.sh"], "args": ["x"]}
                        ]
                    }
                },
            },
            project="p",
            location="l",
        )
        assert job.argv == ("./run.sh", "x") and job.command_length == 1

    @pytest.mark.parametrize(
        ("change", "named"),
        [
            pytest.param({"taskCount": 0}, ["template.taskCount", "0"], id="task-count"),
            pytest.param({"parallelism": -1}, ["template.parallelism", "-1"], id="parallelism"),
            pytest.param(
                {"template": {"containers": [{"image": "gcr.io/p/j"}]}},
                ["export", "emulatorCommand", "got nothing."],
                id="no-command",
            ),
            pytest.param(
                {"template": {"timeout": "10m", "containers": [{"command": ["x"]}]}},
                ["template.template.timeout", 'a duration like "600s"', '"10m"'],
                id="timeout-in-minutes",
            ),
            pytest.param(
                {"template": {"maxRetries": 11, "containers": [{"command": ["x"]}]}},
                ["template.template.maxRetries", "11"],
                id="retries",
            ),
            pytest.param(
                {"template": {"timeout": "soon", "containers": [{"command": ["x"]}]}},
                ["template.template.timeout", "soon"],
                id="timeout",
            ),
            pytest.param(
                {"template": {"containers": [{"command": "python job.py"}]}},
                ["containers[0].command", "python job.py"],
                id="command-string",
            ),
            pytest.param(  # a trial read "got 1" as the value being wrong
                {"taskCont": 3},
                ["template.taskCont is not a field Cloud Run knows here", "taskCount"],
                id="misspelt-field",
            ),
            pytest.param(
                {"template": {"maxRetry": 1, "containers": [{"command": ["x"]}]}},
                ["template.template.maxRetry is not a field", "maxRetries"],
                id="misspelt-task-field",
            ),
            pytest.param(  # a trial's "comand" read as a missing emulatorCommand, unnamed
                {"template": {"containers": [{"image": "x", "comand": ["python", "t.py"]}]}},
                ["containers[0].comand is not a field", "did you mean 'command'?"],
                id="misspelt-command",
            ),
            pytest.param(  # a trial's "argz": the job ran without its args, unwarned
                {"template": {"containers": [{"command": ["python"], "argz": ["t.py"]}]}},
                ["containers[0].argz is not a field", "did you mean 'args'?"],
                id="misspelt-args",
            ),
            pytest.param(  # trial 204: the variable reached the task empty
                {
                    "template": {
                        "containers": [{"command": ["x"], "env": [{"name": "D", "valeu": 1}]}]
                    }
                },
                ["containers[0].env[0].valeu is not a field", "did you mean 'value'?"],
                id="misspelt-env-value",
            ),
            pytest.param(
                {
                    "template": {
                        "containers": [{"command": ["x"], "env": [SECRET | {"value": "v"}]}]
                    }
                },
                ["containers[0].env[0].valueSource must be left out beside a value"],
                id="secret-and-value",
            ),
            pytest.param(  # trial 208: a misspelt key of a secret's reference was taken
                {
                    "template": {
                        "containers": [
                            {
                                "command": ["x"],
                                "env": [
                                    {
                                        "name": "P",
                                        "valueSource": {"secretKeyRef": {"secrett": "db"}},
                                    }
                                ],
                            }
                        ]
                    }
                },
                ["env[0].valueSource.secretKeyRef.secrett is not a field", "'secret'"],
                id="secret-ref-field",
            ),
        ],
    )
    def test_a_bad_definition_names_job_field_and_value(
        self, change: dict[str, object], named: list[str]
    ) -> None:
        body = {"name": "export", "template": {**V2["template"], **change}}  # type: ignore[dict-item]
        with pytest.raises(InvalidArgument) as caught:
            parse_cloud_run_job(body, project="p", location="l")
        message = caught.value.describe()
        assert "projects/p/locations/l/jobs/export" in message
        for part in named:
            assert part in message

    @pytest.mark.parametrize(
        ("where", "misspelt", "named"),
        [
            pytest.param("execution", "taskcount", "did you mean 'taskCount'?", id="task-count"),
            pytest.param("execution", "paralellism", "'parallelism'", id="parallelism"),
            pytest.param("task", "maxRetrie", "'maxRetries'", id="retries"),
            pytest.param("task", "timeoutSecond", "'timeoutSeconds'", id="timeout"),
        ],
    )
    def test_a_misspelt_v1_field_is_refused(self, where: str, misspelt: str, named: str) -> None:
        """Trial 220: gcloud's export shape took a misspelt taskCount, and ran the default."""
        body = copy.deepcopy(V1)
        execution = body["spec"]["template"]["spec"]  # type: ignore[index]
        fields = execution if where == "execution" else execution["template"]["spec"]
        right = {"taskcount": "taskCount", "paralellism": "parallelism"}.get(
            misspelt, misspelt + "s"
        )
        fields[misspelt] = fields.pop(right)
        with pytest.raises(InvalidArgument) as caught:
            parse_cloud_run_job(body, project="shop", location="us-central1")
        assert f".{misspelt} is not a field Cloud Run knows here; " in caught.value.describe()
        assert named in caught.value.describe()


class TestRunRequests:
    def test_overrides_reach_the_job(self) -> None:
        job = parse_cloud_run_job(V2, project="shop", location="l")
        overrides = parse_run_request(
            {
                "overrides": {
                    "containerOverrides": [
                        {"args": ["--day", "1"], "env": [{"name": "BUCKET", "value": "b2"}]}
                    ],
                    "taskCount": 5,
                    "timeout": "30s",
                }
            }
        )
        run = job.with_overrides(overrides)
        assert run.argv == ("python", "export.py", "--day", "1")
        assert dict(run.env) == {"BUCKET": "b2"}
        assert (run.task_count, run.timeout_seconds) == (5, 30.0)

    def test_clear_args_drops_the_jobs_arguments(self) -> None:
        job = parse_cloud_run_job(V2, project="shop", location="l")
        run = job.with_overrides(RunOverrides(clear_args=True))
        assert run.argv == ("python", "export.py")

    def test_v1_body_names_timeout_seconds(self) -> None:
        assert parse_run_request({"overrides": {"timeoutSeconds": 9}}, v1=True).timeout_seconds == 9

    def test_an_empty_body_overrides_nothing(self) -> None:
        assert parse_run_request({}) == RunOverrides()

    def test_an_override_of_another_container_is_refused(self) -> None:
        """Trial 108: an override naming no container of the job was applied anyway."""
        body = {"overrides": {"containerOverrides": [{"name": "worker", "args": ["x"]}]}}
        with pytest.raises(InvalidArgument) as caught:
            parse_run_request(body, container="export")
        assert str(caught.value).endswith(
            "overrides.containerOverrides[0].name must be the job's container, 'export'; "
            'got "worker".'
        )
        assert parse_run_request(body, container="worker").args == ("x",)
        assert parse_run_request(body).args == ("x",)  # a job whose container has no name

    @pytest.mark.parametrize(
        ("body", "named"),
        [
            pytest.param([], "body", id="not-an-object"),
            pytest.param({"overide": {}}, "overide", id="unknown-field"),
            pytest.param({"overrides": {"taskCount": "many"}}, "overrides.taskCount", id="count"),
            pytest.param(
                {"overrides": {"containerOverrides": [{"args": "x"}]}},
                "containerOverrides[0].args",
                id="args",
            ),
            pytest.param(  # (trial 127: taken as no override)
                {"overrides": {"containerOverrides": {}}},
                "overrides.containerOverrides must be a list of one override",
                id="an-object",
            ),
            pytest.param(
                {"overrides": {"containerOverrides": [None]}},
                "overrides.containerOverrides must be a list of one override",
                id="a-null-override",
            ),
            pytest.param(  # a trial's typo ran the job with its own args, answered 200
                {"overrides": {"containerOverrides": [{"argz": ["x"]}]}},
                "containerOverrides[0].argz is not a field Cloud Run knows here; did you mean "
                "'args'?",
                id="misspelt-override",
            ),
            pytest.param(  # (trial 139: "must be an override field")
                {"overrides": {"containerOverride": [{"args": ["x"]}]}},
                "RunJobRequest: overrides.containerOverride is not a field Cloud Run knows here; "
                "did you mean 'containerOverrides'?",
                id="misspelt-overrides-field",
            ),
        ],
    )
    def test_a_bad_run_request_is_invalid_argument(self, body: object, named: str) -> None:
        with pytest.raises(InvalidArgument, match=named.replace("[", r"\[")):
            parse_run_request(body)


class TestTaskRules:
    def test_at_most_parallelism_tasks_run_at_once(self) -> None:
        rules = TaskRules(task_count=3, parallelism=2, max_retries=0)
        assert [rules.next_start(), rules.next_start(), rules.next_start()] == [
            (0, 0),
            (1, 0),
            None,
        ]
        rules.ended(1, ok=True)
        assert rules.next_start() == (2, 0)

    def test_parallelism_zero_runs_every_task_at_once(self) -> None:
        rules = TaskRules(task_count=4, parallelism=0)
        assert [rules.next_start() for _ in range(4)] == [(i, 0) for i in range(4)]

    def test_a_failed_task_is_retried_with_the_next_attempt_number(self) -> None:
        rules = TaskRules(task_count=1, max_retries=1)
        assert rules.next_start() == (0, 0)
        rules.ended(0, ok=False)
        assert rules.next_start() == (0, 1)
        rules.ended(0, ok=True)
        assert rules.done and rules.state == "SUCCEEDED"

    def test_the_execution_fails_after_max_retries_plus_one_attempts(self) -> None:
        rules = TaskRules(task_count=1, max_retries=2)
        for attempt in range(3):
            assert rules.next_start() == (0, attempt)
            rules.ended(0, ok=False)
        assert rules.next_start() is None
        assert rules.done and rules.state == "FAILED"

    def test_no_task_starts_after_one_failed_for_good_and_running_ones_finish(self) -> None:
        rules = TaskRules(task_count=3, parallelism=2, max_retries=0)
        rules.next_start(), rules.next_start()
        rules.ended(0, ok=False)
        assert rules.next_start() is None and not rules.done
        rules.ended(1, ok=True)
        assert rules.done and rules.state == "FAILED"
