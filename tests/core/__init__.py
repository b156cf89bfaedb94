"""Tests of ``scheduler_emulator.core`` (the folder mirrors the package)."""
