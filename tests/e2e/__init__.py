"""Tests of ``scheduler_emulator.e2e`` (the folder mirrors the package)."""
