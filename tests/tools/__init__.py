"""Tests of ``scheduler_emulator.tools`` (the folder mirrors the package)."""
