"""Read a fault plan (:class:`~scheduler_emulator.core.faults.FaultPlan`) from a file
(``scheduler-emulator start --faults FILE``)."""

from __future__ import annotations

from pathlib import Path

from ..core.faults import FaultPlan
from ..domain.errors import ConfigurationError, InvalidArgument
from .documents import load_document, read_text

__all__ = [
    "load_fault_file",
]


def load_fault_file(path: str | Path) -> FaultPlan:
    """Read a fault plan from a YAML or JSON file (bounded as every file users write:
    :mod:`~scheduler_emulator.tools.documents`).

    :raises InvalidArgument: naming the file and the problem.
    """
    try:
        text = read_text(path, "the fault plan")
    except ConfigurationError as exc:
        raise InvalidArgument(str(exc)) from exc
    try:
        data = load_document(text, str(path))
    except ConfigurationError as exc:
        raise InvalidArgument(f"cannot read the fault plan: {exc}") from exc
    try:
        return FaultPlan.from_json(data or {})
    except InvalidArgument as exc:  # each problem on a line of its own, naming the file
        named = InvalidArgument("\n".join(f"{path}: {line}" for line in exc.message.splitlines()))
        named.field, named.violations = exc.field, exc.violations
        raise named from exc
