"""Every ```python and ```bash/```sh/```console block of README.md and docs/*.md runs as written.

A block is skipped only when the line before its fence is ``<!-- illustrative: why -->`` (it
installs packages, reads production, …; at most three in all the docs), or
``<!-- run by tests/<file>.py -->``: that test file runs the block as written instead (it needs
something this module does not start, such as the Firebase Functions emulator), and must name
the document (``docs/firebase.md``) and assert that each block so marked is one it ran; the
marker counts as no illustrative block. Fixed ports are rewritten to free ones: ``8095`` (the
daemon), ``8096`` (a second daemon), ``8000`` (the example Orders service) and ``8001`` (a second
service), in the blocks and in a copy of ``examples/`` that the shell blocks run in.

- Python: a document's blocks are one module, in order (later blocks use what earlier ones
  define, as a reader does); a block that starts with ``# app.py`` is written to ``app.py``
  instead, and otherwise ``app.py`` is the example Orders service. The module runs under pytest
  with this package's plugin, so its ``test_*`` functions run with the fixtures; every one must
  pass. A document's shell blocks run first, so the Python client finds their daemon.
- JavaScript: each block runs under node with Google's Node.js client from .ci/node (installed
  there by .ci/run), after the shell blocks, against their daemon (or one it starts).
- Shell: each block runs under ``bash -euo pipefail`` in the document's working directory. A
  block whose daemon runs in the foreground is run until its startup line, then that daemon is
  stopped. Comment lines after the first command are expected output and must appear in it.
  A block that talks to a daemon it did not start (``8095``, ``gcloud scheduler``) gets one,
  loaded with the example's jobs. Everything a document started is stopped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from tests.support import fenced_blocks, free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUNNABLE = {
    "python": "python",
    "bash": "shell",
    "sh": "shell",
    "console": "shell",
    "javascript": "node",
}
#: Where .ci/run installs Google's Node.js client (npm; ignored by git).
NODE_MODULES = REPO / ".ci" / "node" / "node_modules"
ILLUSTRATIVE = re.compile(r"^\s*<!--\s*illustrative\b.*-->\s*$")
#: ``<!-- run by tests/x.py -->``: the block is run as written by that test file instead.
RUN_BY = re.compile(r"^\s*<!--\s*run by (tests/[\w/]+\.py)\s*-->\s*$")
#: Bound on anything a block waits for.
TIMEOUT = 90


@dataclass
class Block:
    doc: Path
    line: int
    kind: str  # "python" or "shell"
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The runnable blocks of ``doc``, without the illustrative ones."""
    return [
        Block(doc, block.line, RUNNABLE[block.language], block.text)
        for block in fenced_blocks(doc)
        if block.language in RUNNABLE
        and not (ILLUSTRATIVE.match(block.previous) or RUN_BY.match(block.previous))
    ]


@dataclass
class Session:
    """One document's working directory, ports, and the processes its blocks started."""

    workdir: Path
    daemon_port: int = field(default_factory=free_port)
    service_port: int = field(default_factory=free_port)
    second_port: int = field(default_factory=free_port)  # a second service (8001)
    second_daemon_port: int = field(default_factory=free_port)  # a second daemon (8096)
    processes: list[subprocess.Popen[str]] = field(default_factory=list)

    def members(self, group: int) -> list[int]:
        """The live processes of process group ``group`` whose working directory is in
        :attr:`workdir` (what a block left running in the background)."""
        found = []
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError):
                pid = int(entry.name)
                if os.getpgid(pid) == group and (entry / "cwd").resolve().is_relative_to(
                    self.workdir.resolve()
                ):
                    found.append(pid)
        return found

    def localize(self, text: str) -> str:
        """The text with the docs' ports replaced in one pass: a free port holding ``8001``
        (28001) must not be replaced again (a CI run read ``127.0.0.1:227364``)."""
        free = {"8095": self.daemon_port, "8000": self.service_port, "8001": self.second_port}
        free["8096"] = self.second_daemon_port
        return re.sub("8095|8096|8000|8001", lambda found: str(free[found.group()]), text)

    @property
    def env(self) -> dict[str, str]:
        return {
            # a fresh machine: no PYTHONPATH, and no Pub/Sub emulator unless a block starts one
            **{k: v for k, v in os.environ.items() if k not in _NOT_INHERITED},
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "CLOUDSDK_CONFIG": str(self.workdir / ".gcloud"),
            "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
            "CLOUD_SCHEDULER_EMULATOR_HOST": f"127.0.0.1:{self.daemon_port}",
            "PYTHONUNBUFFERED": "1",
            # a nested pytest keeps its temporary directories here, away from the outer run's
            # (pytest prunes old ones in its per-user base folder, which the outer run uses)
            "PYTEST_DEBUG_TEMPROOT": str(self.temp_root),
        }

    @property
    def temp_root(self) -> Path:
        root = self.workdir / ".pytest-tmp"
        root.mkdir(exist_ok=True)
        return root

    def answers(self, port: int) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{port}/_emulator/health", timeout=1).ok
        except requests.RequestException:
            return False

    def popen(self, command: list[str]) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            command,
            cwd=self.workdir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def listening(self, port: int) -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    def ensure_daemon(self, *, jobs: bool = True) -> None:
        """A daemon with the example's jobs, and the example service, for blocks that use one."""
        if self.answers(self.daemon_port):
            return
        self.popen([sys.executable, "examples/orders/app.py", str(self.service_port)])
        self.popen(
            [sys.executable, "-m", "scheduler_emulator", "start", "--in-memory"]
            + ["--port", str(self.daemon_port)]
            + (["--jobs", "examples/orders/jobs.yaml"] if jobs else [])
        )
        wait_for(lambda: self.answers(self.daemon_port), TIMEOUT, "the daemon's health endpoint")

    def stop_all(self) -> None:
        for process in self.processes:
            if process.returncode is None:  # its leader not yet reaped: the group is ours
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                continue
            # a reaped leader's number may be another process's group by now (pids wrap at
            # 32,768 here): signal only the members working in this document's folder
            for pid in self.members(process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        for process in self.processes:
            process.wait(timeout=TIMEOUT)
            if process.stdout is not None:
                process.stdout.close()


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    """A working directory with ``examples/`` copied, its ports rewritten; stops what it ran."""
    work = Session(tmp_path / "work")
    shutil.copytree(REPO / "examples", work.workdir / "examples")
    for path in (work.workdir / "examples").rglob("*"):
        if path.suffix in (".py", ".yaml"):
            path.write_text(work.localize(path.read_text(encoding="utf-8")), encoding="utf-8")
    # what the faults doc's `start --jobs jobs.yaml --faults faults.yaml` expects to find
    shutil.copy(work.workdir / "examples/orders/jobs.yaml", work.workdir / "jobs.yaml")
    (work.workdir / "faults.yaml").write_text("rules:\n  - {action: lost_ack, job: nightly}\n")
    try:
        yield work
    finally:
        work.stop_all()


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def foreground_start(text: str) -> bool:
    """Whether the block runs ``scheduler-emulator start`` in the foreground."""
    command = re.sub(r"\\\n\s*", " ", text)
    return any(
        line.startswith("scheduler-emulator start") and not line.rstrip().endswith("&")
        for line in (re.sub(r"\s+#.*$", "", line) for line in command.splitlines())
    )


#: In an expected line, five random ID characters (a Cloud Run execution's ``export-x7k2p``).
RANDOM_ID = "?????"


def expected_output(text: str) -> list[str]:
    """Comment lines after the block's first command: the output the reader is told to expect
    (:data:`RANDOM_ID` standing for an ID's random part)."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    return [line[2:] for line in lines[first:] if line.startswith("# ")]


def run_shell(block: Block, work: Session) -> None:
    if "gcloud " in block.text and shutil.which("gcloud") is None:
        pytest.skip(f"{block.where} needs gcloud")
    text = work.localize(block.text)
    for command in ("scheduler-emulator start", "scheduler-emulator env-init"):  # default port
        text = text.replace(command, f"{command} --port {work.daemon_port}")
    starts_daemon = "scheduler-emulator start" in text
    if not starts_daemon and (str(work.daemon_port) in text or "gcloud scheduler" in text):
        work.ensure_daemon(jobs="jobs create" not in text)
    script = "set -euo pipefail\n" + text
    if foreground_start(block.text):
        process = work.popen(["bash", "-c", script])
        assert process.stdout is not None
        output: list[str] = []
        deadline = time.monotonic() + TIMEOUT
        while not any("listening on" in line for line in output):
            line = process.stdout.readline()
            assert line and time.monotonic() < deadline, (
                f"{block.where}: no startup line:\n{''.join(output)}"
            )
            output.append(line)
        # the foreground daemon (bash itself when it exec'd it): stop it, keep the rest
        for pid in (process.pid, *children(process.pid)):
            if "scheduler-emulator" in Path(f"/proc/{pid}/cmdline").read_text():
                os.kill(pid, signal.SIGTERM)
        process.wait(timeout=TIMEOUT)
        out = "".join(output)
    else:
        log = work.workdir / f"block-{block.line}.out"
        with log.open("w") as sink:  # a file, not a pipe: background processes keep it open
            process = subprocess.Popen(
                ["bash", "-c", script],
                cwd=work.workdir,
                env=work.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            work.processes.append(process)
            process.wait(timeout=TIMEOUT)
        out = log.read_text()
        assert process.returncode == 0, f"{block.where} exited {process.returncode}:\n{out}"
    for line in expected_output(text):
        pattern = re.escape(line).replace(re.escape(RANDOM_ID), "[a-z0-9]{5}")
        assert re.search(pattern, out), f"{block.where}: expected {line!r} in the output:\n{out}"


def run_node(block: Block, work: Session) -> None:
    """A ```javascript block runs under node with Google's Node.js client (installed by
    .ci/run into .ci/node); it must exit 0. Skipped without node or that install."""
    if shutil.which("node") is None or not (NODE_MODULES / "@google-cloud/scheduler").is_dir():
        pytest.skip(f"{block.where} needs node and .ci/node's npm install (.ci/run does it)")
    work.ensure_daemon()
    script = work.workdir / f"block-{block.line}.js"
    script.write_text(work.localize(block.text), encoding="utf-8")
    result = subprocess.run(
        ["node", str(script)],
        cwd=work.workdir,
        env={**work.env, "NODE_PATH": str(NODE_MODULES), "METADATA_SERVER_DETECTION": "none"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, f"{block.where} exited {result.returncode}:\n{result.stderr}"


_NOT_INHERITED = ("PYTEST_ADDOPTS", "PYTHONPATH", "PUBSUB_EMULATOR_HOST")
#: A Python block whose first line names a module (``# asgi_app.py — …``) is that module.
_MODULE_LINE = re.compile(r"# (\w+\.py)\b")


def run_python(doc: Path, python: list[Block], work: Session) -> None:
    module: list[str] = []
    app_written = False
    for block in python:
        text = work.localize(block.text)
        named = _MODULE_LINE.match(text)
        if named:
            (work.workdir / named.group(1)).write_text(text, encoding="utf-8")
            app_written = app_written or named.group(1) == "app.py"
        else:
            module.append(f"# {block.where}\n{text}")
    if not app_written:
        shutil.copy(work.workdir / "examples/orders/app.py", work.workdir / "app.py")
    source = "\n\n".join(module)
    if "cloud_scheduler_server" in source or "8000" in "".join(b.text for b in python):
        # a test calls the service on 8000 (python app.py 8000 &)
        work.popen([sys.executable, "app.py", str(work.service_port)])
        wait_for(lambda: work.listening(work.service_port), TIMEOUT, "the service's port")
    if "gcloud" in source and shutil.which("gcloud") is None:
        pytest.skip(f"{doc.name} has a test that runs gcloud")
    name = f"test_snippets_{doc.stem.replace('-', '_')}.py"
    (work.workdir / name).write_text(source, encoding="utf-8")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-W", "error", name],
            cwd=work.workdir,
            env={**work.env, "PYTHONPATH": str(work.workdir)},
            capture_output=True,
            text=True,
            timeout=TIMEOUT * 2,
        )
    except subprocess.TimeoutExpired as exc:  # say which test of the document hung
        output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        pytest.fail(f"the Python blocks of {doc.name} did not finish:\n{output[-6000:]}")
    assert result.returncode in (0, 5), (  # 5: the module defines no test, only ran its code
        f"the Python blocks of {doc.name} failed:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOCS, ids=[doc.name for doc in DOCS])
def test_every_snippet_runs_as_written(doc: Path, session: Session) -> None:
    found = blocks(doc)
    for block in found:
        if block.kind == "shell":
            run_shell(block, session)
    for block in found:
        if block.kind == "node":
            run_node(block, session)
    python = [block for block in found if block.kind == "python"]
    if python:
        run_python(doc, python, session)


def test_illustrative_blocks_are_few_and_say_why() -> None:
    marked = [
        (doc.name, line)
        for doc in DOCS
        for line in doc.read_text(encoding="utf-8").splitlines()
        if "<!-- illustrative" in line
    ]
    assert len(marked) <= 3, marked
    assert all(re.search(r"illustrative: \S", line) for _, line in marked), marked


def test_blocks_run_elsewhere_name_a_test_that_reads_the_doc() -> None:
    """A ``<!-- run by tests/x.py -->`` block names an existing test file that reads this
    document (names it, e.g. ``docs/firebase.md``) and says which blocks it runs (``run by``)."""
    marked = [
        (doc, match.group(1))
        for doc in DOCS
        for line in doc.read_text(encoding="utf-8").splitlines()
        if (match := RUN_BY.match(line))
    ]
    for doc, test in marked:
        path = REPO / test
        assert path.is_file(), (doc.name, test)
        source = path.read_text(encoding="utf-8")
        assert str(doc.relative_to(REPO)) in source, (doc.name, test)
        assert f"<!-- run by {test} -->" in source, (doc.name, test)
    malformed = [
        (doc.name, line)
        for doc in DOCS
        for line in doc.read_text(encoding="utf-8").splitlines()
        if "<!-- run by" in line and not RUN_BY.match(line)
    ]
    assert not malformed, malformed
