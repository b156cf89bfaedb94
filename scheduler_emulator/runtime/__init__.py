"""The runtime layer: everything with a thread, a socket, a file or a clock.

Its modules are private (``_engine``, ``_store``…): what users need of them — the
:class:`~scheduler_emulator.Emulator`, :class:`~scheduler_emulator.EmulatorOptions`, the clocks
and the transports — is exported from :mod:`scheduler_emulator`, and the rest may change
between releases. docs/architecture.md says what each module owns.
"""
