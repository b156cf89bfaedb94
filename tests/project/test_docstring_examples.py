"""The ``>>>`` examples in the packages' docstrings run and print what they show.

Run here, one test per module, rather than with ``--doctest-modules``, which also imported every
test module a second time as a doctest module (and reported a collection error twice).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
from types import ModuleType

import pytest

import pytest_plugin
import scheduler_emulator

#: Modules not imported here: the deprecated alias of ``service/`` (importing it warns, by
#: design) and, without the ``curl`` extra, libcurl's event loop (the emulator does not import
#: it then either).
SKIPPED = {"scheduler_emulator.target"} | (
    set()
    if importlib.util.find_spec("pycurl")
    else {"scheduler_emulator.runtime.delivery.curl_loop"}
)


def _modules(package: ModuleType) -> list[str]:
    found = pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    return [package.__name__, *(name for _, name, _ in found if name not in SKIPPED)]


def _examples(name: str) -> list[doctest.DocTest]:
    """The docstring examples of module ``name`` (not those of what it imports)."""
    module = importlib.import_module(name)
    return [test for test in doctest.DocTestFinder().find(module) if test.examples]


MODULES = [name for package in (scheduler_emulator, pytest_plugin) for name in _modules(package)]
WITH_EXAMPLES = [name for name in MODULES if _examples(name)]


def test_the_examples_are_found() -> None:
    assert "scheduler_emulator.wire" in WITH_EXAMPLES and len(WITH_EXAMPLES) >= 30


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_run(name: str) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in _examples(name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
