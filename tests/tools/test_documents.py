"""documents.load_document: the one reader of jobs files, fault plans and scenarios — documents
read exactly as PyYAML's SafeLoader reads them, and a list's item limit counted while parsing."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import pytest
import yaml

from scheduler_emulator.domain.errors import ConfigurationError
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


#: Run in a process of its own: tracemalloc counts every thread's allocations, and a thread
#: an earlier test of the same worker left winding down (on a loaded machine) pushed the peak
#: over the bound.
MEASURED_LOAD = """
import tracemalloc
from scheduler_emulator.tools import documents
from scheduler_emulator.tools.documents import TooManyItems, load_document

built = []
for loader in (documents._ItemLoader, documents.BoundedSafeLoader):
    loader.construct_document = lambda self, node: built.append(node)
text = "".join(f"- {{name: j{i}, schedule: '* * * * *'}}\\n" for i in range(96_669))
tracemalloc.start()
try:
    load_document(text, "f.yaml", max_items=50_000)
except TooManyItems:
    print(built == [], tracemalloc.get_traced_memory()[1] / len(text))
"""


def test_a_list_far_over_the_limit_is_refused_before_any_item_is_built() -> None:
    done = subprocess.run(
        [sys.executable, "-c", MEASURED_LOAD], capture_output=True, text=True, timeout=60
    )
    nothing_built, peak_per_byte = done.stdout.split()
    assert nothing_built == "True", done.stderr
    assert float(peak_per_byte) < 2  # the lines' count, not 96,669 jobs' objects


def test_a_file_far_over_the_limit_is_refused_without_a_python_object_per_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def scan(text: str, max_items: int | None) -> bool:
        raise AssertionError("the scan that builds an object per YAML event ran")

    monkeypatch.setattr(documents, "_scan", scan)
    text = "# jobs\n" + "".join(f"- {{name: j{i}, schedule: '* * * * *'}}\n" for i in range(600))
    with pytest.raises(TooManyItems):
        load_document(text, "f.yaml", max_items=500)


@pytest.mark.parametrize(
    ("text", "limit", "over"),
    [
        pytest.param("- a\n" * 5, 3, True, id="plain"),
        pytest.param("# jobs\n---\n- a\n- b\n-\n  c: d\n- e\n", 3, True, id="after-a-header"),
        pytest.param("- a\n" * 5, 4, False, id="one-over-is-left-to-the-scan"),
        pytest.param('- "a\n- b\n- c\n- d\n- e"\n- f\n', 3, False, id="dashes-in-a-quoted-value"),
        pytest.param("- 'a\n- b\n- c\n- d'\n- e\n- f\n", 2, False, id="dashes-in-single-quotes"),
        pytest.param("- [a,\n- b,\n- c,\n- d]\n", 2, False, id="dashes-in-a-flow-list"),
        pytest.param("a:\n- 1\n- 2\n- 3\nb:\n- 4\n- 5\n- 6\n", 4, False, id="two-lists"),
        pytest.param("- |\n  - a\n  - b\n- c\n- d\n", 2, False, id="dashes-in-a-block-value"),
        pytest.param("[a, b, c, d, e]\n", 3, False, id="flow-list"),
    ],
)
def test_the_quick_count_refuses_only_lists_certainly_over_the_limit(
    text: str, limit: int, over: bool
) -> None:
    assert documents._surely_over(text, limit) is over


def test_lists_each_under_the_limit_are_read_whatever_their_dashes_add_up_to() -> None:
    text = "a:\n- 1\n- 2\n- 3\nb:\n- 4\n- 5\n- 6\n"
    assert load_document(text, "f.yaml", max_items=4) == {"a": [1, 2, 3], "b": [4, 5, 6]}


def test_a_json_array_is_decoded_only_up_to_the_item_after_the_limit() -> None:
    text = "[" + ", ".join(json.dumps({"n": i}) for i in range(10)) + ", {oops]"
    with pytest.raises(TooManyItems):
        load_document(text, "f.json", max_items=3)  # the bad tail is never reached


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- {n: 1}\n- {n: 2}\n- {n: 3}\n", id="yaml"),
        pytest.param('[{"n": 1}, {"n": 2}, {"n": 3}]', id="json-array"),
        pytest.param("- &x {n: 1}\n- {n: 2}\n- {n: 3}\n- *x\n", id="yaml-with-aliases"),
    ],
)
def test_each_item_of_a_list_is_handed_over_in_order_and_replaced(text: str) -> None:
    seen: list[tuple[int, object]] = []

    def each(index: int, item: object) -> str:
        seen.append((index, item))
        return f"item {index}"

    document = load_document(text, "f.yaml", max_items=10, each=each)
    items = yaml.load(text, Loader=yaml.SafeLoader)
    assert seen == list(enumerate(items))
    assert document == [f"item {index}" for index in range(len(items))]


def test_each_is_not_called_for_a_document_that_is_not_a_list() -> None:
    def each(index: int, item: object) -> None:
        raise AssertionError("called")

    assert load_document("jobs:\n- a\n", "f.yaml", each=each) == {"jobs": ["a"]}


def test_a_list_read_item_by_item_never_holds_every_item() -> None:
    text = "".join(f"- {{name: job-{i}, description: {'x' * 200}}}\n" for i in range(5_000))
    peaks = []
    for each in (None, lambda index, item: index):
        tracemalloc.start()
        try:
            load_document(text, "f.yaml", max_items=5_000, each=each)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    whole, by_item = peaks
    assert by_item < whole / 2  # what remains is mostly libyaml's copy of the text


def test_a_bad_number_in_an_item_is_named_by_its_place_in_the_list() -> None:
    text = "- {n: 1}\n- {n: 1" + "0" * 5000 + "}\n"
    with pytest.raises(ConfigurationError, match=r"^f\.yaml: \[1\]\.n is a whole number out"):
        load_document(text, "f.yaml", max_items=10)
