"""Tests of ``scheduler_emulator.pytest_plugin`` (the folder mirrors the package)."""
