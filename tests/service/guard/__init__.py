"""Tests of the run-once guard, Google's deduplication pattern
(https://cloud.google.com/scheduler/docs/configuring/deduplicate-job-requests).

Its ``conftest.py`` holds the stores' fixtures (a SQLite file and the Firestore emulator).
"""
