"""Read a fault plan (:class:`~scheduler_emulator.core.faults.FaultPlan`) from a file
(``scheduler-emulator start --faults FILE``)."""

from __future__ import annotations

from pathlib import Path

from ..core.faults import FaultPlan
from ..domain.errors import ConfigurationError, InvalidArgument
from .jobs_file import load_document

__all__ = [
    "load_fault_file",
]


def load_fault_file(path: str | Path) -> FaultPlan:
    """Read a fault plan from a YAML or JSON file.

    :raises InvalidArgument: naming the file and the problem.
    """
    try:
        data = load_document(Path(path).read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the fault plan: {exc}") from exc
    except ConfigurationError as exc:
        raise InvalidArgument(f"cannot read the fault plan: {exc}") from exc
    try:
        return FaultPlan.from_json(data or {})
    except InvalidArgument as exc:
        raise InvalidArgument(f"{path}: {exc.message}", field=exc.field) from exc
