"""Tests of ``scheduler_emulator.server`` (the folder mirrors the package)."""
