"""``python -m scheduler_emulator`` runs the command line."""

import sys

from .cli import main

sys.exit(main())
