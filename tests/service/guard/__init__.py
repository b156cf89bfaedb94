"""Tests of the run-once guard (spec §3).

Its ``conftest.py`` holds the stores' fixtures (a SQLite file and the Firestore emulator).
"""
