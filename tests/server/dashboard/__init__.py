"""Tests of ``scheduler_emulator.server.dashboard`` (the folder mirrors the package)."""
