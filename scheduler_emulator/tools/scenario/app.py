"""The scenario's target: loading the service's app object (``module:attribute``), and how
its jobs' URLs reach it."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import re
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...domain.errors import ConfigurationError
from ...domain.resources import Job
from ...runtime import HttpTransport, MountTransport, Transport, WsgiApp, WsgiTransport
from ...wire import cloud_run_job_of
from .model import Scenario, problem, show

__all__ = [
    "Delivery",
    "app_spec_problem",
    "common_origin",
    "load_app",
    "prepare_delivery",
    "rebase_url",
]

#: ``module:attr``, optionally ``()`` (a factory called with no arguments); anything after the
#: attribute but ``()`` is refused, so a scenario file can never call a function with arguments.
_APP_RE = re.compile(r"(?P<module>[^:()]+):(?P<attr>[A-Za-z_][\w.]*)(?P<call>\(\s*\))?")
_CALL_SYNTAX_RE = re.compile(r"[^:]+:[A-Za-z_][\w.]*\s*\(.*", re.DOTALL)
_FRESH = itertools.count(1)

# ------------------------------------------------------------------------------- the target


def app_spec_problem(spec: Any) -> str | None:
    """Why ``spec`` cannot name the scenario's app, without importing anything.

    :param spec: the ``target.app`` value as read from the file.
    :return: ``None`` for ``"module:attr"`` or ``"module:factory()"``; else a sentence naming
        the value: a call with arguments is refused (a scenario file is data), anything else
        is not of the form.
    """
    text = spec.strip() if isinstance(spec, str) else None
    if text is not None and _APP_RE.fullmatch(text):
        return None
    if text is not None and _CALL_SYNTAX_RE.fullmatch(text):
        return (
            f"{show(spec)} calls a function with arguments, which a scenario file may not do; "
            'name a WSGI app object ("module:app") or a factory defined in that module that '
            'takes no arguments ("module:create_app()"), and put any arguments inside that '
            "factory."
        )
    return f'expected "module:attr" or "module:factory()" of a WSGI app; got {show(spec)}.'


def load_app(spec: str, directory: Path, *, source: str = "target.app") -> WsgiApp:
    """Import the WSGI app named by ``spec``, never calling anything with arguments.

    ``spec`` is ``module:attr`` (a dotted module importable with ``directory`` on
    ``sys.path``, where it is added) or ``path/to/file.py:attr`` (relative to ``directory``; the
    file is executed afresh on every call), naming a WSGI application object. ``attr()`` (empty
    parentheses) names a *factory*: a plain Python function defined in that module itself (not
    imported into it, not a builtin) that takes no arguments and returns a fresh app. Anything
    else in parentheses (``create_app(guard=True)``, ``system("id")``) is refused: a scenario
    file is data and must not run arbitrary calls.

    :param spec: the ``target.app`` value.
    :param directory: the scenario file's folder.
    :param source: how to name the value in errors.
    :raises ConfigurationError: naming ``source`` and the value, when ``spec`` has call syntax
        with arguments, the module or attribute cannot be loaded, a factory is not a function
        of that module or fails, or the result is not callable.
    :return: the WSGI application.
    """
    refusal = app_spec_problem(spec)
    match = _APP_RE.fullmatch(spec.strip())
    if refusal is not None or match is None:
        raise ConfigurationError(f"{source}: {refusal}")
    module_name, attr, call = match.group("module"), match.group("attr"), match.group("call")
    folder = str(directory.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        if module_name.endswith(".py") or "/" in module_name:
            file = (directory / module_name).resolve()
            unique = f"_scenario_app_{next(_FRESH)}_{file.stem}"
            module_spec = importlib.util.spec_from_file_location(unique, file)
            if module_spec is None or module_spec.loader is None or not file.is_file():
                raise ConfigurationError(f"{source}: no Python file {file}.")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[unique] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ConfigurationError:
        raise
    except Exception as exc:
        raise ConfigurationError(
            f"{source}: cannot import {module_name!r} (from {folder}): {type(exc).__name__}: {exc}"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigurationError(f"{source}: {module_name!r} has no attribute {attr!r}.")
        target = getattr(target, part)
    if call is not None:
        if not isinstance(target, types.FunctionType) or target.__module__ != module.__name__:
            raise ConfigurationError(
                f"{source}: {show(spec)}: {attr} is not a function defined in {module_name!r} "
                f"(got {type(target).__name__} from {getattr(target, '__module__', '?')!r}); "
                "only a factory of the module itself may be called."
            )
        try:
            target = target()
        except Exception as exc:
            raise ConfigurationError(
                f"{source}: {attr}() failed: {type(exc).__name__}: {exc}"
            ) from exc
    if not callable(target):
        raise ConfigurationError(
            f"{source}: {spec!r} is not a WSGI application (got {type(target).__name__})."
        )
    app: WsgiApp = target
    return app


def rebase_url(url: str, base_url: str, new_base: str) -> str:
    """Move ``url`` from under ``base_url`` to under ``new_base`` (path and query kept).

    :param url: an absolute URL.
    :param base_url: the origin (and path prefix) to replace.
    :param new_base: what replaces it.

    >>> rebase_url("http://orders.test/_triggers/timer/nightly?x=1", "http://orders.test",
    ...            "http://127.0.0.1:8000")
    'http://127.0.0.1:8000/_triggers/timer/nightly?x=1'

    :return: the new URL; ``url`` itself when it is not under ``base_url``.
    """
    base = base_url.rstrip("/")
    if url == base or url.startswith((base + "/", base + "?")):
        return new_base.rstrip("/") + url[len(base) :]
    return url


@dataclass
class Delivery:
    """How a run of the scenario reaches the target.

    :param transport: what the emulator sends attempts with.
    :param jobs: the scenario's jobs, their URIs moved to ``http_base`` for an HTTP target.
    :param description: one line for the run's header (``"http://orders.test -> app:app
        (in-process)"``).
    :param app: the in-process WSGI app, or ``None``.
    :param http_base: where ``base_url`` maps to over HTTP, or ``None``.
    """

    transport: Transport
    jobs: list[Job]
    description: str
    app: WsgiApp | None = None
    http_base: str | None = None  # where base_url maps to over HTTP


def prepare_delivery(scenario: Scenario, target_url: str | None) -> Delivery:
    """Decide how a run of ``scenario`` reaches its target, loading its app if it has one.

    :param scenario: the scenario.
    :param target_url: a real URL that replaces the scenario's target (``replay --target``),
        or ``None``.
    :raises ConfigurationError: when the app cannot be loaded, or the jobs' URIs share no
        origin where one is needed.
    :return: the transport, the jobs as sent and a description.
    """
    spec = scenario.target
    jobs = list(scenario.jobs)
    base = spec.base_url
    url = target_url.rstrip("/") if target_url else spec.url
    if url is not None:
        if base is None:
            base = common_origin(jobs, scenario.path)
        rebased = []
        for job in jobs:
            assert job.http_target is not None
            uri = rebase_url(job.http_target.uri, base, url)
            rebased.append(replace(job, http_target=replace(job.http_target, uri=uri)))
        return Delivery(HttpTransport(), rebased, f"{base} -> {url} over HTTP", http_base=url)
    if spec.app is not None:
        app = load_app(spec.app, spec.directory, source=f"{scenario.path}: target.app")
        if base is None:
            return Delivery(WsgiTransport(app), jobs, f"every URI -> {spec.app} (in-process)", app)
        transport = MountTransport({base: app})
        return Delivery(transport, jobs, f"{base} -> {spec.app} (in-process)", app)
    return Delivery(HttpTransport(), jobs, "each job's URI over HTTP", http_base=base)


def common_origin(jobs: Sequence[Job], source: Path) -> str:
    """The one ``scheme://host[:port]`` every job's URI uses, which stands for the target; a
    Cloud Run job's ``jobs/J:run`` URI is not one (the emulator answers it in-process).

    :param jobs: HTTP jobs.
    :param source: the scenario file, for the error.
    :raises ConfigurationError: naming ``target.base_url`` when the URIs use several origins,
        or none.
    :return: the origin.
    """
    origins = set()
    for job in jobs:
        assert job.http_target is not None
        parts = urlsplit(job.http_target.uri)
        if cloud_run_job_of(job.http_target.uri) is None:
            origins.add(f"{parts.scheme}://{parts.netloc}")
    if not origins:
        raise problem(
            source,
            "target",
            "the jobs' URIs are all Cloud Run jobs' jobs/J:run, which the emulator answers "
            "in-process: there is no target to send them to (leave out target and --target).",
        )
    if len(origins) != 1:
        raise problem(
            source,
            "target.base_url",
            "required when the jobs' URIs do not share one origin "
            f"(they use {', '.join(sorted(origins))}).",
        )
    return origins.pop()
