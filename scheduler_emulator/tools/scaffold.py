"""``scheduler-emulator init``: write a small timer service to start a project from.

The project is a Flask app (or, with ``--framework fastapi``, a FastAPI one) whose timers
Cloud Scheduler runs (``app.py``), its tests with the plugin's fixtures in both styles plus one
test on the emulator's virtual clock (``test_app.py``), the jobs that run it (``jobs.yaml``),
``requirements.txt`` and a ``README.md``. Each file is the template
``scheduler_emulator/tools/templates/[<framework>/]<name>.tmpl`` (the ``.tmpl`` suffix keeps
pytest, mypy and ruff from treating the templates as this package's own code)::

    >>> list(PROJECT_FILES)
    ['app.py', 'test_app.py', 'jobs.yaml', 'requirements.txt', 'pytest.ini', 'README.md']
    >>> template("requirements.txt").count("{emulator_requirement}")
    1

:func:`render` fills in the ``{…}`` names of :data:`FRAMEWORKS` and ``{emulator_requirement}``:
:func:`emulator_requirement` — a git URL when this emulator was installed from one, otherwise
the distribution's name and version, never a path of the machine that ran ``init``.

Nothing is overwritten unless asked: :func:`write_project` checks every file first, so a
refusal leaves the directory as it was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import metadata
from importlib.resources import files
from pathlib import Path
from typing import IO

from ..domain.errors import ConfigurationError

#: The files ``init`` writes, in writing order, with what each holds.
PROJECT_FILES: Mapping[str, str] = {
    "app.py": "the service and its timers 'nightly' and 'notify'",
    "test_app.py": "its tests: both façade styles, and jobs.yaml on a virtual clock",
    "jobs.yaml": "the Cloud Scheduler jobs that run the timers",
    "requirements.txt": "cloud-scheduler-emulator (PyYAML and pytest come with it), the framework",
    "pytest.ini": "pytest's settings: this folder is the tests' root",
    "README.md": "how to set up, test, run and deploy it",
}


#: What each ``--framework`` puts in the templates' ``{…}`` names.
FRAMEWORKS: Mapping[str, Mapping[str, str]] = {
    "flask": {
        "Framework": "Flask",
        "App": "Flask",
        "app_import": "from flask import Flask",
        "framework_requirements": "flask>=3.0",
        "deploy": "serve `app:app` on every interface at `$PORT` with a production WSGI server, "
        "such as `gunicorn -b 0.0.0.0:$PORT app:app` (add gunicorn to the requirements)",
    },
    "fastapi": {
        "Framework": "FastAPI",
        "App": "FastAPI",
        "app_import": "from fastapi import FastAPI",
        "framework_requirements": "fastapi>=0.110\nuvicorn>=0.29\n"
        "httpx>=0.27  # the plugin runs the ASGI app in-process with it",
        "deploy": "serve `app:app` on every interface at `$PORT`: `uvicorn app:app --host "
        "0.0.0.0 --port $PORT`",
    },
}


def template(name: str, framework: str = "flask") -> str:
    """Return the text of one project file's template.

    :param name: a key of :data:`PROJECT_FILES`, e.g. ``"app.py"``.
    :param framework: a key of :data:`FRAMEWORKS`: its own template of the file, if it has one.
    :raises KeyError: for a name that is not a project file.
    :return: the template's text, its ``{…}`` names not filled in.
    """
    if name not in PROJECT_FILES:
        raise KeyError(f"no template for {name!r}; the project files are {list(PROJECT_FILES)}")
    folder = files("scheduler_emulator.tools") / "templates"
    own = folder / framework / f"{name}.tmpl"
    return (own if own.is_file() else folder / f"{name}.tmpl").read_text(encoding="utf-8")


#: The distribution name, as pip knows it.
DISTRIBUTION = "cloud-scheduler-emulator"


def emulator_requirement() -> str:
    """The requirement line for this emulator, shareable with anyone who clones the project.

    pip records the origin of a package installed from a VCS URL (``direct_url.json``, PEP 610):
    that URL and commit install anywhere. A package installed from a local directory (a clone,
    ``pip install -e .``) or from an index is named with its version instead: a ``file://``
    path would only install on the machine that ran ``init`` (the template's comment says how
    to install the emulator first when no index has it).

    :return: ``cloud-scheduler-emulator @ git+https://…@<commit>`` for a git URL, otherwise
        ``cloud-scheduler-emulator>=<version>``.
    """
    try:
        distribution = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return DISTRIBUTION
    try:
        origin = json.loads(distribution.read_text("direct_url.json") or "null")
    except ValueError:
        origin = None
    if isinstance(origin, dict) and isinstance(origin.get("url"), str):
        vcs = origin.get("vcs_info")
        if isinstance(vcs, dict) and vcs.get("vcs"):
            commit = vcs.get("commit_id")
            url = f"{DISTRIBUTION} @ {vcs['vcs']}+{origin['url']}"
            return url + (f"@{commit}" if commit else "")
    return f"{DISTRIBUTION}>={distribution.version}"


def render(name: str, framework: str = "flask") -> str:
    """Return one project file as ``init`` writes it: its :func:`template`, with the
    framework's ``{…}`` names (:data:`FRAMEWORKS`) and ``{emulator_requirement}`` filled in.

    :param name: a key of :data:`PROJECT_FILES`.
    :param framework: a key of :data:`FRAMEWORKS`.
    :raises KeyError: for a name that is not a project file.
    :return: the file's text.
    """
    text = template(name, framework)
    for key, value in FRAMEWORKS[framework].items():
        text = text.replace(f"{{{key}}}", value)
    if "{emulator_requirement}" in text:
        text = text.replace("{emulator_requirement}", emulator_requirement())
    return text


def write_project(
    directory: str | os.PathLike[str], *, force: bool = False, framework: str = "flask"
) -> list[Path]:
    """Write the project files into ``directory``, creating it (and its parents) if needed.

    :param directory: where the project goes; may exist and hold other files.
    :param force: overwrite project files that already exist instead of refusing.
    :param framework: a key of :data:`FRAMEWORKS`.
    :raises ConfigurationError: when ``directory`` exists and is not a directory, or (without
        ``force``) when one of the project files exists already; the message names it, and
        nothing has been written.
    :raises OSError: when a file cannot be written (permissions, a full disk…).
    :return: the paths written, in :data:`PROJECT_FILES` order.
    """
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise ConfigurationError(f"{root} exists and is not a directory; pick another place.")
    targets = [root / name for name in PROJECT_FILES]
    if not force:
        for target in targets:
            if target.exists() or target.is_symlink():
                raise ConfigurationError(
                    f"{target} exists already; nothing was written. Move it away, pick another "
                    "directory, or pass --force to overwrite the project files."
                )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # (trial 176: /proc/x read "[Errno 2] No such file …")
        raise ConfigurationError(f"DIRECTORY {root}: cannot make it ({exc.strerror}).") from None
    for target in targets:
        target.write_text(render(target.name, framework), encoding="utf-8")
    return targets


def next_commands(directory: str | os.PathLike[str]) -> list[str]:
    """The shell commands that set up, test and run a project written to ``directory``.

    :param directory: where the project was written.
    :return: one command per line, without a ``cd`` when ``directory`` is the current one.
    """
    commands = [] if Path(directory).resolve() == Path.cwd().resolve() else [f"cd {directory}"]
    return [
        *commands,
        "pip install -r requirements.txt",
        "python -m pytest",
        "python app.py 8000 &",
        "scheduler-emulator start --jobs jobs.yaml --in-memory --clock manual "
        "--start 2026-09-24T01:59:00Z &",
        "until curl -sf http://127.0.0.1:8095/_emulator/health >/dev/null && curl -sf "
        "http://127.0.0.1:8000/runs >/dev/null; do sleep 0.2; done",
        "curl -X POST http://127.0.0.1:8095/_emulator/clock:advance "
        "-H 'Content-Type: application/json' -d '{\"seconds\": 120}'",
    ]


#: What ``init`` says after its commands: where the ports they use are written.
PORTS_TAKEN = (
    "(Port 8000 or 8095 taken? Give app.py another port and change it in jobs.yaml's URIs "
    "(the tests follow them); give start --port and use it in the curls. No "
    "cloud-scheduler-emulator on your package index? README.md says how to install it "
    "first.)\n"
)


def run_init(
    directory: str | os.PathLike[str], *, force: bool, out: IO[str], framework: str = "flask"
) -> int:
    """Write the project (``scheduler-emulator init``) and print what was written and what next.

    :param directory: where the project goes.
    :param force: overwrite existing project files.
    :param out: where the report is printed.
    :param framework: a key of :data:`FRAMEWORKS`.
    :raises ConfigurationError: see :func:`write_project` (the command line prints it and exits
        with 2).
    :raises OSError: when a file cannot be written.
    :return: 0.
    """
    written = write_project(directory, force=force, framework=framework)
    width = max(len(str(path)) for path in written)
    name = FRAMEWORKS[framework]["Framework"]
    out.write(f"Wrote a Cloud Scheduler timer service ({name}) to {directory}:\n")
    for path in written:
        out.write(f"  {str(path):<{width}}  {PROJECT_FILES[path.name]}\n")
    out.write("\nNext:\n")
    for command in next_commands(directory):
        out.write(f"  {command}\n")
    out.write(PORTS_TAKEN)
    return 0
