"""``scheduler-emulator init``: the files it writes, its refusals, the written project's tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler_emulator.tools import scaffold
from scheduler_emulator.tools.cli import main
from scheduler_emulator.tools.scaffold import (
    FRAMEWORKS,
    PROJECT_FILES,
    emulator_requirement,
    next_commands,
    render,
    template,
    write_project,
)

REPO = Path(__file__).resolve().parents[2]
#: The tests ``test_app.py.tmpl`` holds (two of its tests run in both styles).
GENERATED_TEST_COUNT = 6


def run(
    command: list[str], cwd: Path, timeout: float, code: int = 0
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` with a bound; fail the test with its output if it exits
    otherwise than with ``code``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    # A nested pytest keeps its temporary directories under cwd, not in the per-user base
    # folder the outer run uses (pytest prunes old ones there: with -n 2 the outer run's
    # directories vanished under its tests).
    temp_root = cwd / ".pytest-tmp"
    temp_root.mkdir(exist_ok=True)
    env["PYTEST_DEBUG_TEMPROOT"] = str(temp_root)
    result = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=max(timeout, 1),
        check=False,
    )
    assert result.returncode == code, (
        f"{' '.join(command)} exited with {result.returncode}\n"
        f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"
    )
    return result


class TestInit:
    def test_it_writes_every_project_file_from_its_template(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        project = tmp_path / "svc"
        assert main(["init", str(project)]) == 0
        assert sorted(p.name for p in project.iterdir()) == sorted(PROJECT_FILES)
        for name in PROJECT_FILES:
            assert (project / name).read_text(encoding="utf-8") == render(name)
        out = capsys.readouterr().out
        assert out.startswith(f"Wrote a Cloud Scheduler timer service (Flask) to {project}:\n")
        for name, description in PROJECT_FILES.items():
            assert f"{project / name}" in out and description in out
        assert out.endswith(
            "\nNext:\n"
            f"  cd {project}\n"
            "  pip install -r requirements.txt\n"
            "  python -m pytest\n"
            "  python app.py 8000 &\n"
            "  scheduler-emulator start --jobs jobs.yaml --in-memory --clock manual "
            "--start 2026-09-24T01:59:00Z &\n"
            "  until curl -sf http://127.0.0.1:8095/_emulator/health >/dev/null && curl -sf "
            "http://127.0.0.1:8000/runs >/dev/null; do sleep 0.2; done\n"  # (trials 136, 137)
            "  curl -X POST http://127.0.0.1:8095/_emulator/clock:advance "
            "-H 'Content-Type: application/json' -d "
            "'{\"seconds\": 120}'\n"
            "(Port 8000 or 8095 taken? Give app.py another port and change it in jobs.yaml's "
            "URIs (the tests follow them); give start --port and use it in the curls. No "
            "cloud-scheduler-emulator on your package index? README.md says how to install it "
            "first.)\n"
        )

    @pytest.mark.parametrize(
        ("framework", "requirements"),
        [
            ("flask", ["flask>=3.0"]),
            ("fastapi", ["fastapi>=0.110", "uvicorn>=0.29", "httpx>=0.27"]),
        ],
    )
    def test_the_requirements_name_the_emulator_and_the_framework(
        self, framework: str, requirements: list[str]
    ) -> None:
        lines = [
            line.split("#")[0].strip()
            for line in render("requirements.txt", framework).splitlines()
            if line.strip() and not line.startswith("#")
        ]
        assert lines == [emulator_requirement(), *requirements]
        assert template("requirements.txt").count("{framework_requirements}") == 1

    def test_the_emulator_requirement_of_a_clone_names_no_path(self) -> None:
        # this checkout is installed editable (pip install -e .): pip recorded its directory,
        # which only this machine has
        requirement = emulator_requirement()
        assert requirement.startswith("cloud-scheduler-emulator>=")
        assert "file:" not in render("requirements.txt")
        assert str(REPO) not in render("requirements.txt")

    @pytest.mark.parametrize(
        ("direct_url", "requirement"),
        [
            pytest.param(
                '{"url": "https://github.com/o/cloud-scheduler-emulator.git", '
                '"vcs_info": {"vcs": "git", "commit_id": "abc123"}}',
                "cloud-scheduler-emulator @ "
                "git+https://github.com/o/cloud-scheduler-emulator.git@abc123",
                id="git",
            ),
            pytest.param(None, "cloud-scheduler-emulator>=9.8.7", id="index"),
            pytest.param(
                '{"url": "file:///home/me/cloud-scheduler-emulator", "dir_info": {}}',
                "cloud-scheduler-emulator>=9.8.7",
                id="local-directory",
            ),
        ],
    )
    def test_the_emulator_requirement_follows_where_pip_installed_it_from(
        self, monkeypatch: pytest.MonkeyPatch, direct_url: str | None, requirement: str
    ) -> None:
        class Installed:
            version = "9.8.7"

            def read_text(self, name: str) -> str | None:
                return direct_url if name == "direct_url.json" else None

        monkeypatch.setattr(scaffold.metadata, "distribution", lambda name: Installed())
        assert emulator_requirement() == requirement

    def test_without_a_directory_it_writes_into_the_current_one_and_prints_no_cd(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.chdir(tmp_path)
        assert main(["init"]) == 0
        assert (tmp_path / "app.py").is_file()
        assert "cd " not in capsys.readouterr().out
        assert next_commands(".")[0].startswith("pip install -r requirements.txt")

    def test_an_existing_file_is_refused_with_exit_2_naming_it_and_nothing_is_written(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "jobs.yaml").write_text("mine\n")
        assert main(["init", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {tmp_path / 'jobs.yaml'} exists already; nothing was")
        assert "--force" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.yaml"]
        assert (tmp_path / "jobs.yaml").read_text() == "mine\n"

    def test_force_overwrites_the_project_files_and_leaves_other_files_alone(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "app.py").write_text("old\n")
        (tmp_path / "notes.txt").write_text("keep\n")
        assert main(["init", "--force", str(tmp_path)]) == 0
        assert (tmp_path / "app.py").read_text(encoding="utf-8") == template("app.py")
        assert (tmp_path / "notes.txt").read_text() == "keep\n"

    def test_a_directory_argument_that_is_a_file_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "svc").write_text("")
        assert main(["init", str(tmp_path / "svc")]) == 2
        assert "exists and is not a directory" in capsys.readouterr().err

    def test_an_unknown_template_name_lists_the_project_files(self) -> None:
        with pytest.raises(KeyError, match="the project files are"):
            template("setup.py")


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
class TestTheGeneratedProject:
    def test_its_tests_pass_in_this_environment(self, tmp_path: Path, framework: str) -> None:
        # inside a folder whose pytest settings it must not read (trial 136: a clone's
        # pyproject.toml named pytest-timeout's option, and no test ran)
        (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--nope"\n')
        project = tmp_path / "svc"
        write_project(project, framework=framework)
        jobs = project / "jobs.yaml"  # trial 81: a port changed there, the tests kept 8000
        jobs.write_text(jobs.read_text().replace("127.0.0.1:8000", "127.0.0.1:9940"))
        for name in PROJECT_FILES:  # every {…} name filled in
            text = (project / name).read_text()
            assert [key for key in FRAMEWORKS[framework] if f"{{{key}}}" in text] == [], name
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error"]
        result = run(command, cwd=project, timeout=120)
        assert f"{GENERATED_TEST_COUNT} passed" in result.stdout
        # a misspelt marker is an error there (trial 218: the test ran at the defaults)
        (project / "test_typo.py").write_text(
            "import pytest\n\n@pytest.mark.cloud_schedular(start='2026-01-01T00:00:00Z')\n"
            "def test_x(cloud_scheduler):\n    pass\n"
        )
        typo = run([*command, "test_typo.py"], cwd=project, timeout=120, code=2)
        assert "'cloud_schedular' not found in `markers` configuration option" in typo.stdout

    def test_it_passes_ruff_with_its_defaults(self, tmp_path: Path, framework: str) -> None:
        pytest.importorskip("ruff")
        write_project(tmp_path, framework=framework)
        ruff = [sys.executable, "-m", "ruff"]
        run([*ruff, "check", "--select", "E,F,W,I,B,UP,SIM", "."], cwd=tmp_path, timeout=60)
        run([*ruff, "format", "--check", "."], cwd=tmp_path, timeout=60)
