"""Tests of ``scheduler_emulator.project`` (the folder mirrors the package)."""
