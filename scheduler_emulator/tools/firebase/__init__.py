"""Firebase scheduled functions fired by the emulator (docs/firebase.md).

:class:`~scheduler_emulator.tools.firebase.bridge.FirebaseBridge` makes one job per scheduled
function of a Firebase Functions emulator, as ``firebase deploy`` would, keeps them in sync and
delivers their runs to the emulator's trigger route.
"""

from .bridge import FirebaseBridge, SyncResult
from .functions import ScheduledFunction

__all__ = ["FirebaseBridge", "ScheduledFunction", "SyncResult"]
