"""Collection for the whole checkout: the doctests of ``scheduler_emulator`` (``testpaths``).

``runtime/_curl_exchange.py`` imports ``pycurl`` (the ``curl`` extra); without it the module is
not imported for its doctests, as the emulator itself does not import it then.
``target.py`` is the deprecated alias of ``service/``: importing it warns, by design.
"""

from __future__ import annotations

import importlib.util

collect_ignore = ["scheduler_emulator/target.py"] + (
    [] if importlib.util.find_spec("pycurl") else ["scheduler_emulator/runtime/_curl_exchange.py"]
)
