"""The import direction of docs/architecture.md holds, and the check would catch a break."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture()
def copy_of_the_project(tmp_path: Path) -> Path:
    for name in ("scheduler_emulator", "pytest_plugin"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_its_layers() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "broken"),
    [
        ("domain/retry.py", "from ..runtime import clock", "Layers"),
        ("core/faults.py", "import sqlite3", "no I/O"),
        ("service/request.py", "from ..domain import errors", "load no emulator code"),
    ],
)
def test_an_import_against_the_direction_fails_the_check(
    copy_of_the_project: Path, module: str, bad_import: str, broken: str
) -> None:
    path = copy_of_the_project / "scheduler_emulator" / module
    path.write_text(path.read_text() + f"\n{bad_import}  # noqa\n")
    result = _lint(copy_of_the_project)
    assert result.returncode != 0
    assert f"{broken}" in result.stdout and "BROKEN" in result.stdout
