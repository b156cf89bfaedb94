"""Case files (``tests/<layer>/cases/<name>.toml``): every table is read by its test module, and
the reader refuses an entry it would otherwise drop or mislabel."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.support import case_table

TESTS = Path(__file__).resolve().parents[1]
CASE_FILES = sorted(TESTS.glob("**/cases/*.toml"))


def test_there_are_case_files() -> None:
    assert CASE_FILES, "no tests/**/cases/*.toml found"


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_every_table_is_read_by_its_test_module(path: Path) -> None:
    module = path.parent.parent / f"test_{path.stem}.py"
    assert module.is_file(), f"{path} has no test module {module.name}"
    source = module.read_text()
    with path.open("rb") as handle:
        tables = tomllib.load(handle)
    read = re.findall(r'case_table\(\s*__file__,\s*"(\w+)"', source)
    unread = [name for name in tables if name not in read]
    assert not unread, f"{path}: tables no test reads: {unread}"


def _write(tmp_path: Path, text: str) -> str:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "sample.toml").write_text(text)
    return str(tmp_path / "test_sample.py")


def test_entries_become_params_in_the_first_entrys_key_order(tmp_path: Path) -> None:
    test_file = _write(
        tmp_path,
        '[[t]]\nid = "a"\nx = 1\ny = "one"\n\n[[t]]\ny = "two"\nid = "b"\nx = 2\n',
    )
    mark = case_table(test_file, "t")
    names, params = mark.args
    assert names == ["x", "y"]
    assert [(p.id, p.values) for p in params] == [("a", (1, "one")), ("b", (2, "two"))]


#: Second entries the reader refuses after a good first one (``id = "a"``, ``x = 1``), by id.
BAD_SECOND_ENTRIES = {
    "no-id": "x = 2\n",
    "repeated-id": 'id = "a"\nx = 2\n',
    "misspelt-key": 'id = "b"\nz = 2\n',
    "extra-key": 'id = "b"\nx = 2\ny = 3\n',
}


@pytest.mark.parametrize("second", BAD_SECOND_ENTRIES.values(), ids=BAD_SECOND_ENTRIES)
def test_a_bad_entry_is_refused(tmp_path: Path, second: str) -> None:
    test_file = _write(tmp_path, f'[[t]]\nid = "a"\nx = 1\n\n[[t]]\n{second}')
    with pytest.raises(
        ValueError, match=r"sample\.toml \[\[t\]\]: entry .* must have keys id, \['x'\]"
    ):
        case_table(test_file, "t")


def test_a_missing_table_is_refused(tmp_path: Path) -> None:
    test_file = _write(tmp_path, '[[t]]\nid = "a"\nx = 1\n')
    with pytest.raises(KeyError, match="u"):
        case_table(test_file, "u")


def test_cases_given_in_python_follow_the_files(tmp_path: Path) -> None:
    test_file = _write(tmp_path, '[[t]]\nid = "a"\nx = 1\n')
    names, params = case_table(test_file, "t", pytest.param(2, id="computed")).args
    assert (names, [(p.id, p.values) for p in params]) == (["x"], [("a", (1,)), ("computed", (2,))])
