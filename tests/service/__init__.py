"""Tests of ``scheduler_emulator.service`` (the folder mirrors the package)."""
