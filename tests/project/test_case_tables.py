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


#: Second entries the reader refuses after a good first one (``id = "a"``, ``x = 1``), by id,
#: and what the error says of them.
BAD_SECOND_ENTRIES = {
    "no-id": ("x = 2\n", "entry 2 (None): missing ['id'], unexpected []"),
    "repeated-id": ('id = "a"\nx = 2\n', "entry 2: id 'a' is entry 1's too"),
    "misspelt-key": ('id = "b"\nz = 2\n', "entry 2 ('b'): missing ['x'], unexpected ['z']"),
    "extra-key": ('id = "b"\nx = 2\ny = 3\n', "entry 2 ('b'): missing [], unexpected ['y']"),
}


@pytest.mark.parametrize(("second", "said"), BAD_SECOND_ENTRIES.values(), ids=BAD_SECOND_ENTRIES)
def test_a_bad_entry_is_refused(tmp_path: Path, second: str, said: str) -> None:
    test_file = _write(tmp_path, f'[[t]]\nid = "a"\nx = 1\n\n[[t]]\n{second}')
    with pytest.raises(ValueError) as refused:
        case_table(test_file, "t")
    assert str(refused.value) == (
        f"{tmp_path / 'cases' / 'sample.toml'} [[t]]: every entry needs the keys id, x; {said}"
    )


def test_a_misspelt_key_in_the_first_entry_is_blamed_on_it(tmp_path: Path) -> None:
    entries = ['id = "a"\nxx = 1\n', 'id = "b"\nx = 2\n', 'id = "c"\nx = 3\n']
    test_file = _write(tmp_path, "\n".join(f"[[t]]\n{entry}" for entry in entries))
    with pytest.raises(
        ValueError, match=r"keys id, x; entry 1 \('a'\): missing \['x'\], unexpected \['xx'\]$"
    ):
        case_table(test_file, "t")


def test_a_missing_table_is_refused(tmp_path: Path) -> None:
    test_file = _write(tmp_path, '[[t]]\nid = "a"\nx = 1\n')
    with pytest.raises(KeyError, match=r"sample\.toml has no \[\[u\]\]; its tables: t"):
        case_table(test_file, "u")


def test_cases_given_in_python_follow_the_files(tmp_path: Path) -> None:
    test_file = _write(tmp_path, '[[t]]\nid = "a"\nx = 1\n')
    names, params = case_table(test_file, "t", pytest.param(2, id="computed")).args
    assert (names, [(p.id, p.values) for p in params]) == (["x"], [("a", (1,)), ("computed", (2,))])
