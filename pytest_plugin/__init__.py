"""pytest plugin for cloud-scheduler-emulator (registered through the ``pytest11`` entry point)."""
