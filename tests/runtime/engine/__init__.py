"""Tests of ``scheduler_emulator.runtime.engine`` (the folder mirrors the package)."""
