"""Tests of ``scheduler_emulator.runtime`` (the folder mirrors the package)."""
