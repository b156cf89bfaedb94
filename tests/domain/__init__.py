"""Tests of ``scheduler_emulator.domain`` (the folder mirrors the package)."""
