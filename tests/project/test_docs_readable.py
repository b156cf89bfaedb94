"""The docs and docstrings cite nothing a reader cannot open.

The project's behavioural specification (its sections, ``§9.3``, and its pinned policies,
``(P12)``) and "the seed page" live with the project's planning documents, not with the
package: a user who reads README.md, docs/*.md, or a docstring through ``help()`` or an editor
cannot follow such a citation, so each rule is said in words where it matters and every pinned
policy is listed, in words, on docs/differences-from-production.md. The same holds for the test
suite: a contributor learns what a test checks from its docstrings, comments and case tables.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import pytest_plugin
import scheduler_emulator
import scheduler_emulator.service

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: A section sign, a policy code such as ``(P12)`` or a bare ``P12`` (capital P, so that a
#: percentile such as ``p50`` is not one), or the planning documents by name.
UNREADABLE = re.compile(r"§|\bP\d{1,2}\b(?!-)|(?i:\(P\d+\)|\bthe seed page\b|\bthe spec\b)")


def citations(text: str) -> list[str]:
    """``"line N: text"`` for each line of ``text`` that cites what a user cannot open."""
    return [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if UNREADABLE.search(line)
    ]


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_no_doc_cites_a_document_users_cannot_open(doc: Path) -> None:
    assert citations(doc.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "line",
    [
        "at least once (spec §9.3)",
        "applies every field (P12).",
        "the earliest missed time (P6; the rest are skipped)",
        "The seed page *Deduplicate job requests* names",
        "as the spec says",
    ],
)
def test_the_check_catches_each_kind_of_citation(line: str) -> None:
    assert citations(f"fine\n{line}\n") == [f"line 2: {line}"]


def test_the_check_leaves_plain_words_alone() -> None:
    text = (
        "RFC 9110, section 7.6.1; retries (P for policy) and P12-style names; a spectrum; "
        "the ASGI spec; P256; SHA-256; lateness p50 / p99"
    )
    assert citations(text) == []


# -- the test suite's own docstrings and comments ----------------------------------------------

#: What a contributor reads to learn what a test checks: every test module and helper, and the
#: case tables with their comments. This file is left out: it quotes the patterns it looks for.
THIS_FILE = Path(__file__).resolve()
#: Besides the patterns above, the planning documents by file name and "seed" plus a title in
#: quotes (seed "Timers").
UNREADABLE_IN_TESTS = re.compile(r"cloud-scheduler-v1|timers-and-testing|\bseed [\"'“]")


def suite_sources(root: Path) -> list[Path]:
    """The test suite's Python files and case tables under ``root``, this file excepted."""
    found = [*root.glob("**/*.py"), *root.glob("**/cases/*.toml")]
    return sorted(path for path in found if path.resolve() != THIS_FILE)


def suite_citations(root: Path) -> list[str]:
    """``"<path>:<line>: text"`` (path relative to ``root``'s parent) for each line of the test
    suite under ``root`` that cites a document a contributor cannot open."""
    found = []
    for path in suite_sources(root):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if UNREADABLE.search(line) or UNREADABLE_IN_TESTS.search(line):
                found.append(f"{path.relative_to(root.parent)}:{number}: {line.strip()}")
    return found


def test_no_test_cites_a_document_contributors_cannot_open() -> None:
    found = suite_citations(REPO / "tests")
    assert not found, f"{len(found)} citation(s) to restate in words:\n" + "\n".join(found)


def test_the_test_suite_check_names_file_and_line(tmp_path: Path) -> None:
    cases = tmp_path / "tests" / "domain" / "cases"
    cases.mkdir(parents=True)
    (tmp_path / "tests" / "domain" / "test_x.py").write_text(
        '"""Backoff (spec §11.2)."""\n\ndef test_a() -> None:\n    """P4: both limits."""\n',
        encoding="utf-8",
    )
    (cases / "x.toml").write_text(
        '# rows of the seed "Timers" page\n[t]\nid = "p50"\n', encoding="utf-8"
    )
    (tmp_path / "tests" / "notes.toml").write_text("# (P12), not a case table\n", encoding="utf-8")
    assert suite_citations(tmp_path / "tests") == [
        'tests/domain/cases/x.toml:1: # rows of the seed "Timers" page',
        'tests/domain/test_x.py:1: """Backoff (spec §11.2)."""',
        'tests/domain/test_x.py:4: """P4: both limits."""',
    ]


def test_the_test_suite_check_leaves_out_only_this_file() -> None:
    sources = set(suite_sources(REPO / "tests"))
    assert set((REPO / "tests").glob("**/*.py")) - sources == {THIS_FILE}
    assert set((REPO / "tests").glob("**/cases/*.toml")) <= sources
    assert REPO / "tests" / "service" / "cases" / "router.toml" in sources


# -- docstrings of the public surface --------------------------------------------------------


def _package_modules(package: ModuleType) -> list[str]:
    """``package`` and every module under it, by dotted name."""
    found = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        found.append(info.name)
    return found


def public_modules() -> list[str]:
    """The modules whose docstrings a user reads: those defining a name of
    ``scheduler_emulator.__all__``, the target-side helpers (``service``), the wire and domain
    modules whose types users hold, and the pytest plugin."""
    defining = {
        getattr(scheduler_emulator, name).__module__
        for name in scheduler_emulator.__all__
        if name != "__version__"
    }
    listed = {
        "scheduler_emulator",
        "scheduler_emulator.wire",
        "scheduler_emulator.domain.errors",
        "scheduler_emulator.domain.resources",
        "scheduler_emulator.domain.attempts",
        "scheduler_emulator.domain.attempt_assertions",
    }
    return sorted(
        defining
        | listed
        | {*_package_modules(scheduler_emulator.service), *_package_modules(pytest_plugin)}
    )


PUBLIC_MODULES = public_modules()


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _members(owner: type) -> Iterator[tuple[str, object]]:
    """The documented members a class defines itself: methods, properties, nested classes."""
    for name, value in vars(owner).items():
        if not _is_public(name) or name in {"__doc__", "__module__", "__dict__", "__weakref__"}:
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            value = value.fget
        if inspect.isfunction(value) or inspect.isclass(value):
            yield name, value


def docstrings(module: ModuleType) -> Iterator[tuple[str, str]]:
    """``(qualified name, docstring)`` for the module and each public class, function, method
    and property it defines (names it only imports belong to the module that defines them)."""
    yield module.__name__, module.__doc__ or ""
    for name, value in vars(module).items():
        if not _is_public(name) or getattr(value, "__module__", None) != module.__name__:
            continue
        if not (inspect.isclass(value) or callable(value)):
            continue
        qualified = f"{module.__name__}.{name}"
        yield qualified, getattr(value, "__doc__", None) or ""
        if inspect.isclass(value):
            for member, function in _members(value):
                yield f"{qualified}.{member}", function.__doc__ or ""


def attribute_comments(module: ModuleType) -> str:
    """The ``#:`` comments of the module's source file (documentation for attributes), with
    every other line blanked so that line numbers stay those of the file."""
    source = Path(inspect.getfile(module)).read_text(encoding="utf-8")
    return "\n".join(line if line.lstrip().startswith("#:") else "" for line in source.splitlines())


def surface_citations(module_name: str) -> list[str]:
    """Every citation a user cannot open in ``module_name``'s docstrings and ``#:`` comments,
    each as ``"<object>: line N: text"``."""
    module = importlib.import_module(module_name)
    found = [f"{owner}: {hit}" for owner, text in docstrings(module) for hit in citations(text)]
    comments = citations(attribute_comments(module))
    found += [f"{module_name} (#: comments): {hit}" for hit in comments]
    return found


def test_the_public_surface_is_the_one_users_read() -> None:
    assert {
        "scheduler_emulator",
        "scheduler_emulator.runtime._emulator",
        "scheduler_emulator.runtime.delivery.transports",
        "scheduler_emulator.core.faults",
        "scheduler_emulator.domain.attempt_assertions",
        "scheduler_emulator.service.guard",
        "scheduler_emulator.service.router",
        "pytest_plugin.plugin",
        "pytest_plugin.scheduler",
    } <= set(PUBLIC_MODULES)
    assert "scheduler_emulator.runtime._engine" not in PUBLIC_MODULES


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_no_public_docstring_cites_a_document_users_cannot_open(module_name: str) -> None:
    assert surface_citations(module_name) == []


def test_the_docstring_walk_finds_methods_properties_and_attribute_comments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cites_things.py").write_text(
        '"""A module (spec §3)."""\n'
        "#: A constant (P7).\n"
        "LIMIT = 5\n"
        "class Job:\n"
        '    """A job."""\n'
        "    def pause(self):\n"
        '        """:raises FailedPrecondition: if not ENABLED (P11)."""\n'
        "    @property\n"
        "    def state(self):\n"
        '        """The state, per the seed page."""\n'
        "    def _private(self):\n"
        '        """Not read by users (P1)."""\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert surface_citations("cites_things") == [
        "cites_things: line 1: A module (spec §3).",
        "cites_things.Job.pause: line 1: :raises FailedPrecondition: if not ENABLED (P11).",
        "cites_things.Job.state: line 1: The state, per the seed page.",
        "cites_things (#: comments): line 2: #: A constant (P7).",
    ]
