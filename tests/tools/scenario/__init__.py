"""Tests of ``scheduler_emulator.tools.scenario`` (the folder mirrors the package)."""
