"""Tests of ``scheduler_emulator.runtime._engine`` (the folder mirrors the package)."""
