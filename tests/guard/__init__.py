"""Tests of the run-once guard (spec §3).

A package, so that ``tests/guard/conftest.py`` does not replace the root ``conftest`` module that
other tests import helpers from.
"""
