"""Tests of ``scheduler_emulator.api`` (the folder mirrors the package)."""
