"""Google's Node.js client (@google-cloud/scheduler) against the daemon's one port: its
default gRPC transport (insecure credentials) and its REST fallback run every job method,
page to the end and get the same errors as REST (tests/e2e/node/scheduler_client.js).

The client is installed with npm into .ci/node/node_modules (ignored by git) by .ci/run, or
here on first use; the tests skip only when node or npm is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from scheduler_emulator import Emulator
from scheduler_emulator.server.server import serve
from tests.daemon import serving_in_thread

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / ".ci" / "node"
SCRIPT = Path(__file__).resolve().parent / "node" / "scheduler_client.js"
PARENT = "projects/my-project/locations/us-central1"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node and npm are not installed: the Node.js client cannot run",
)


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """.ci/node/node_modules with @google-cloud/scheduler (npm install on first use)."""
    modules = NODE_DIR / "node_modules"
    if not (modules / "@google-cloud" / "scheduler").is_dir():
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NODE_DIR,
            check=True,
            timeout=280,
            stdin=subprocess.DEVNULL,
        )
    return modules


@pytest.fixture
def address(emulator: Emulator) -> Iterator[str]:
    with serving_in_thread(serve(emulator, "127.0.0.1", 0)) as url:
        yield url.removeprefix("http://")


def rest_message(address: str, method: str, path: str, **kwargs: Any) -> str:
    response = requests.request(method, f"http://{address}/v1/{path}", timeout=10, **kwargs)
    return str(response.json()["error"]["message"])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_the_node_client(node_modules: Path, address: str, transport: str) -> None:
    env = {**os.environ, "NODE_PATH": str(node_modules), "METADATA_SERVER_DETECTION": "none"}
    result = subprocess.run(
        ["node", str(SCRIPT), address, transport],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    name = f"{PARENT}/jobs/node-{transport}"
    assert seen["created"] == name
    assert seen["state"] == "ENABLED"
    assert seen["got"] == "0 2 * * *"
    assert seen["listed"] == [name] + [f"{name}-{i}" for i in range(4)]
    assert seen["updated"] == ["0 4 * * *", ""]
    assert (seen["paused"], seen["resumed"], seen["ran"]) == ("PAUSED", "ENABLED", name)

    assert seen["notFound"]["code"] == 5
    assert seen["notFound"]["message"] == rest_message(address, "GET", name)
    assert seen["alreadyExists"]["code"] == 6
    assert seen["alreadyExists"]["message"] == f"Job {name}-0 already exists."
    assert seen["pausedAgain"]["code"] == 9
    assert seen["pausedAgain"]["message"] == (
        f"Job {name} is PAUSED; only an ENABLED job can be paused."
    )
    bad = {"name": f"{name}-bad", "schedule": "every banana", "httpTarget": {"uri": "http://x/"}}
    assert seen["invalid"]["code"] == 3
    assert seen["invalid"]["message"] == rest_message(address, "POST", PARENT + "/jobs", json=bad)
    (violation,) = seen["invalid"]["violations"]
    assert violation[0] == "schedule"
