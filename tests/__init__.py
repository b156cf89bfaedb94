"""The test suite. Its folders mirror the package: the tests of ``scheduler_emulator/X/y.py``
are in ``tests/X/`` (``test_y.py``, or a folder ``y/`` when there are several files, as for the
engine: ``tests/runtime/engine/``); ``tests/pytest_plugin/`` tests the plugin. Two folders hold
what crosses every layer: ``tests/e2e/`` (the daemon as a subprocess, Google's clients, the
Pub/Sub and Firebase emulators, the examples) and ``tests/project/`` (docs, architecture,
packaging, the public names).

Every folder is a package, so two test files may share a name; helpers stay at this level and
are imported absolutely: ``from tests.support import wait_for``, ``from tests.daemon import
running_daemon`` (``support.py``, ``daemon.py``, ``drip.py``; ``shifted_daemon.py`` is a script).
"""
