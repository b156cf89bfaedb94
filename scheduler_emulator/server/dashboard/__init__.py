"""The dashboard: one static page (HTML, JavaScript, CSS) shipped inside the package.

No build step and nothing from the network: the files in this folder are served as they are
under ``/_emulator/ui/`` (and the page also at ``/``). The page reads the ``/_emulator/``
read model (jobs, timeline, attempts, clock, faults) and acts through the v1 API with JSON
requests, which a browser never sends across sites without asking the daemon first (and the
daemon refuses a foreign ``Origin``). ``timeline.js`` draws the timeline; the replay report
(:mod:`~scheduler_emulator.tools.report`) inlines the same file.
"""

from __future__ import annotations

from importlib import resources

from werkzeug.wrappers import Response

__all__ = [
    "ASSETS",
    "asset_response",
    "read_asset",
]

#: The files served, with their media types.
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "timeline.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}


def read_asset(name: str) -> str:
    """The text of the dashboard file ``name`` (one of :data:`ASSETS`).

    :raises KeyError: for any other name.
    """
    if name not in ASSETS:
        raise KeyError(name)
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def asset_response(name: str) -> Response:
    """The file ``name`` as a response (404 JSON error for a name not in :data:`ASSETS`).

    The page forbids being framed by another site and loads nothing but its own files.
    """
    if name not in ASSETS:
        from werkzeug.exceptions import NotFound

        raise NotFound(f"The dashboard has no file {name!r}.")
    response = Response(read_asset(name), content_type=ASSETS[name])
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Content-Type-Options"] = "nosniff"
    if name == "index.html":
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
            "frame-ancestors 'none'"
        )
        response.headers["X-Frame-Options"] = "DENY"
    return response
