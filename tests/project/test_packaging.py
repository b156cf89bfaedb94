"""The package survives a build-output entry in a .gitignore.

Issue: ``scheduler_emulator/target/`` is named like a build-output folder. With ``target/`` in a
global gitignore (as Rust and Maven templates set), new files there vanished from
``git status`` and ``git add -A``, ``ruff check .`` skipped the folder, and with ``target/`` in
the repository's .gitignore the built wheel held none of it. The target-side helpers are now
``scheduler_emulator/service/``; here a fresh clone under such ignore files (global and the
repository's) still shows new files, lints every module, and builds a wheel with all of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tools.test_scaffold import GENERATED_TEST_COUNT

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("scheduler_emulator", "pytest_plugin")
#: Folder names that common .gitignore templates treat as build output.
BUILD_OUTPUT_NAMES = ("target", "build", "dist", "out", "bin")


def test_no_package_folder_is_named_like_a_build_output() -> None:
    folders = [
        path.relative_to(REPO)
        for package in PACKAGES
        for path in (REPO / package).rglob("*")
        if path.is_dir() and path.name in BUILD_OUTPUT_NAMES
    ]
    assert folders == []


def test_the_old_name_is_a_warning_alias_of_the_new_package() -> None:
    import importlib

    from scheduler_emulator import service
    from scheduler_emulator.service import guard

    for name in [n for n in sys.modules if n.startswith("scheduler_emulator.target")]:
        del sys.modules[name]
    with pytest.warns(DeprecationWarning, match=r"scheduler_emulator\.target is now .*service"):
        old = importlib.import_module("scheduler_emulator.target")
    assert old.TimerRouter is service.TimerRouter
    assert importlib.import_module("scheduler_emulator.target.guard") is guard


@dataclass
class Clone:
    path: Path
    env: dict[str, str]

    def run(self, *command: str, timeout: float = 120) -> str:
        result = subprocess.run(
            command, cwd=self.path, env=self.env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def package_files(self) -> list[str]:
        """The package's tracked files (what the wheel must hold)."""
        return self.run("git", "ls-files", "--", *PACKAGES).split()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clone]:
    """A fresh clone with every build-output name in a global gitignore (a HOME of its own
    whose ``core.excludesFile`` lists them) and in the repository's .gitignore."""
    root = tmp_path_factory.mktemp("clone")
    home = root / "home"
    home.mkdir()
    ignored = "".join(f"{name}/\n" for name in BUILD_OUTPUT_NAMES)
    (home / "gitignore").write_text(ignored)
    (home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'gitignore'}\n")
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("XDG_CONFIG_HOME", None)
    subprocess.run(
        ["git", "clone", "--quiet", str(REPO), str(root / "repo")],
        env=env, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    with (root / "repo" / ".gitignore").open("a") as gitignore:
        gitignore.write(ignored)
    yield Clone(root / "repo", env)


@pytest.mark.timeout(120)
def test_a_new_module_in_the_clone_is_seen_by_git(clone: Clone) -> None:
    assert clone.run("git", "config", "core.excludesFile").strip().endswith("gitignore")
    new = clone.path / "scheduler_emulator" / "service" / "new_module.py"
    new.write_text('"""New."""\n')
    try:
        status = clone.run("git", "status", "--porcelain", "--untracked-files=all")
        assert "?? scheduler_emulator/service/new_module.py" in status
    finally:
        new.unlink()


@pytest.mark.timeout(120)
def test_ruff_lints_every_module_of_the_clone(clone: Clone) -> None:
    ruff = [sys.executable, "-m", "ruff"]
    checked = {
        Path(line.strip()).resolve().relative_to(clone.path.resolve()).as_posix()
        for line in clone.run(*ruff, "check", "--show-files", ".").splitlines()
        if line.strip().endswith(".py")
    }
    modules = [f for f in clone.package_files() if f.endswith(".py")]
    assert [m for m in modules if m not in checked] == []
    assert any(m.startswith("scheduler_emulator/service/") for m in modules)
    clone.run(*ruff, "check", ".")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_of_the_clone_holds_every_package_file(clone: Clone, tmp_path: Path) -> None:
    pytest.importorskip("hatchling")  # the build backend (the test extra installs it)
    clone.run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--disable-pip-version-check", "--wheel-dir", str(tmp_path), ".", timeout=240,
    )  # fmt: skip
    [wheel] = tmp_path.glob("cloud_scheduler_emulator-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [f for f in clone.package_files() if f not in names] == []
    assert "scheduler_emulator/service/guard.py" in names


@pytest.fixture(scope="module")
def user(clone: Clone, tmp_path_factory: pytest.TempPathFactory) -> Clone:
    """The clone in a user's own shell (their HOME and pip settings) with a fresh virtualenv
    first on its PATH, in which the README's first command alone, ``pip install -e
    '.[examples]'``, has run (packages from the package index); made once for the tests
    below, each of which needs nothing else in it."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    hidden = ("PYTHONPATH", "PYTEST_ADDOPTS", "VIRTUAL_ENV", "PYTEST_XDIST_WORKER")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    shell = Clone(clone.path, env)
    shell.run(sys.executable, "-m", "venv", str(venv))
    # (--no-compile: byte-compiling every installed package is a third of the install's CPU,
    # and what the tests import is compiled as it is imported)
    shell.run(
        "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
        "-e", ".[examples]", timeout=600,
    )  # fmt: skip
    return shell


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readmes_first_install_alone_runs_the_example_tests(user: Clone) -> None:
    """The README's first install is enough for ``pytest examples/orders``: the project's pytest
    settings (its ``timeout``) need pytest-timeout, which the examples extra installs."""
    out = user.run("pytest", "-q", "-p", "no:cacheprovider", "examples/orders", timeout=240)
    assert " passed" in out and "failed" not in out and "error" not in out.lower(), out


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readmes_first_install_alone_starts_the_daemon(user: Clone, tmp_path: Path) -> None:
    """``scheduler-emulator start`` with nothing but the examples extra: trial 57's start was a
    traceback there (a check for the [pubsub] extra found no google package at all), and the
    suite, whose environment has every extra, never saw it."""
    jobs = tmp_path / "jobs.yaml"
    topic = '{"topicName": "projects/my-project/topics/restock", "data": "aGk="}'
    jobs.write_text(f'[{{"name": "restock", "schedule": "0 6 * * *", "pubsubTarget": {topic}}}]')
    env = {k: v for k, v in user.env.items() if k != "PUBSUB_EMULATOR_HOST"}
    command = ["scheduler-emulator", "start", "--in-memory", "--port", "0", "--jobs", str(jobs)]
    daemon = subprocess.Popen(
        command, cwd=user.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert daemon.stdout is not None
        first = daemon.stdout.readline()  # the startup line (or nothing: it ended)
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=30)
    assert "scheduler-emulator listening on http://127.0.0.1:" in first, err
    assert "--with-pubsub (either needs pip install 'cloud-scheduler-emulator[pubsub]'; " in err


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_generated_project_passes_its_own_tests_in_a_fresh_venv(
    user: Clone, tmp_path: Path
) -> None:
    """The acceptance check "a project generated by ``scheduler-emulator init`` passes its own
    tests in a fresh venv": the venv's own ``scheduler-emulator init`` writes the project, its
    ``requirements.txt`` installs, and the venv's pytest runs its tests (the templates it
    renders are package files, which the wheel test above finds in the wheel)."""
    project = tmp_path / "svc"
    assert "Wrote a Cloud Scheduler timer service" in user.run(
        "scheduler-emulator", "init", str(project)
    )
    svc = Clone(project, user.env)
    svc.run("pip", "install", "--quiet", "--disable-pip-version-check", "-r", "requirements.txt")
    out = svc.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", timeout=240)
    assert f"{GENERATED_TEST_COUNT} passed" in out, out
