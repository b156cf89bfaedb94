"""What a user imports: the curated top-level names, and ``__all__`` on the modules.

Issue: the top-level package exported neither Job, Attempt, FaultPlan nor the errors, and
users (and tests) reached into the layers for them.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import scheduler_emulator
from scheduler_emulator.core.faults import FaultPlan
from scheduler_emulator.domain.attempts import Attempt
from scheduler_emulator.domain.errors import EmulatorError, InvalidArgument
from scheduler_emulator.domain.resources import Job
from scheduler_emulator.runtime.delivery.pubsub_client import EmulatorPublisher
from scheduler_emulator.wire import NaiveDatetimeError

#: Layers whose every module declares ``__all__``.
DECLARED = ("core", "domain.errors", "domain.names", "domain.resources", "service", "wire")


def test_the_types_users_touch_are_exported_from_the_top() -> None:
    for name, expected in [
        ("Job", Job),
        ("Attempt", Attempt),
        ("FaultPlan", FaultPlan),
        ("EmulatorError", EmulatorError),
        ("InvalidArgument", InvalidArgument),
        ("NaiveDatetimeError", NaiveDatetimeError),
        ("EmulatorPublisher", EmulatorPublisher),  # (trial 125: testing.md named it, no import)
    ]:
        assert getattr(scheduler_emulator, name) is expected
    for name in scheduler_emulator.__all__:
        assert getattr(scheduler_emulator, name) is not None, name
    assert set(scheduler_emulator.__all__) <= set(dir(scheduler_emulator))


def test_an_unknown_top_level_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Engine'"):
        scheduler_emulator.Engine  # noqa: B018


def test_importing_the_top_level_package_loads_no_engine() -> None:
    code = (
        "import sys, scheduler_emulator, scheduler_emulator.service; "
        "print('scheduler_emulator.runtime._emulator' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False"


def modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(scheduler_emulator.__path__, "scheduler_emulator."):
        if info.name.endswith(("target", "curl_loop", "__main__")):
            continue  # the deprecated alias (warns), the optional pycurl module, the entry point
        names.append(info.name)
    return names


@pytest.mark.parametrize("name", modules())
def test_every_name_in_a_modules_all_exists(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert missing == []
    declared = name.removeprefix("scheduler_emulator.").startswith(DECLARED)
    if declared and not name.endswith("__init__") and not hasattr(module, "__path__"):
        assert hasattr(module, "__all__"), f"{name} declares no __all__"
