"""``python -m scheduler_emulator`` runs the command line."""

import sys

from .tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
