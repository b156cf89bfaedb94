"""Tests of ``scheduler_emulator.tools.firebase`` (the folder mirrors the package)."""
