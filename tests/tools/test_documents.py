"""documents.load_document: the one reader of jobs files, fault plans and scenarios — documents
read exactly as PyYAML's SafeLoader reads them, and a list's item limit counted while parsing."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
import yaml

from scheduler_emulator.tools import documents
from scheduler_emulator.tools.documents import TooManyItems, load_document
from tests.support import case_table


@case_table(__file__, "as_safe_loader")
def test_a_document_reads_as_pyyaml_safe_loader_reads_it(text: str) -> None:
    assert repr(load_document(text, "f.yaml")) == repr(yaml.load(text, Loader=yaml.SafeLoader))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- a\n- b\n- c\n- d\n", id="yaml-list"),
        pytest.param('["a", "b", "c", "d"]', id="json-array"),
        pytest.param('{"jobs": ["a", "b", "c", "d"]}\n', id="json-object-of-a-list"),
        pytest.param("jobs:\n  - a\n  - b\n  - c\n  - d\n", id="yaml-mapping-of-a-list"),
        pytest.param('- "a\n- b"\n- it\'s\n- c\n- d\n', id="quoted-over-two-lines"),
        pytest.param("- &x a\n- *x\n- *x\n- *x\n", id="aliases"),
    ],
)
def test_a_list_over_the_item_limit_is_refused_and_one_at_it_is_not(text: str) -> None:
    with pytest.raises(TooManyItems, match=r"^f\.yaml: a list holds more than 3 items\.$"):
        load_document(text, "f.yaml", max_items=3)
    assert load_document(text, "f.yaml", max_items=4) == load_document(text, "f.yaml")


def test_without_libyaml_the_pure_python_loader_counts_the_items(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(documents, "_ItemLoader", None)
    with pytest.raises(TooManyItems):
        load_document("- a\n- b\n- [c]\n- d\n", "f.yaml", max_items=3)
    assert load_document("- a\n- b\n- [c]\n", "f.yaml", max_items=3) == ["a", "b", ["c"]]


def test_a_dash_line_inside_a_quoted_value_is_not_counted_as_an_item() -> None:
    text = '- "one\n- still one"\n- two\n'
    assert load_document(text, "f.yaml", max_items=2) == ["one - still one", "two"]


def test_a_list_far_over_the_limit_is_refused_before_any_item_is_built(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built: list[object] = []
    for loader in (documents._ItemLoader, documents.BoundedSafeLoader):
        monkeypatch.setattr(loader, "construct_document", lambda self, node: built.append(node))
    text = "".join(f"- {{name: j{i}, schedule: '* * * * *'}}\n" for i in range(96_669))
    tracemalloc.start()
    try:
        with pytest.raises(TooManyItems):
            load_document(text, "f.yaml", max_items=50_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert built == []
    assert peak < 2 * len(text)  # the lines' count, not 96,669 jobs' objects


def test_a_json_array_is_decoded_only_up_to_the_item_after_the_limit() -> None:
    text = "[" + ", ".join(json.dumps({"n": i}) for i in range(10)) + ", {oops]"
    with pytest.raises(TooManyItems):
        load_document(text, "f.json", max_items=3)  # the bad tail is never reached
