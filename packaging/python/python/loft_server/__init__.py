"""Loft, Amazon SQS and SNS in one binary, for Python tests and tools.

``LoftServer`` starts the ``loft`` binary this package installs on a free port of
127.0.0.1 with its own temporary SQLite database, and stops it; ``reset()`` empties it
between tests (``POST /_loft/reset``). The pytest plugin (``loft_server.pytest_plugin``,
registered through the ``pytest11`` entry point) builds its fixtures on it.

    with LoftServer() as loft:
        sqs = boto3.client("sqs", endpoint_url=loft.endpoint, region_name="us-east-1",
                           aws_access_key_id="test", aws_secret_access_key="test")
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import time
import urllib.request
from typing import List, Optional

__all__ = ["LoftServer", "binary"]

_LISTENING = "loft listening on "


def binary() -> str:
    """The path of the ``loft`` binary: ``$LOFT_BINARY`` when set, else the one this
    package installed into the environment's scripts folder, else ``loft`` on PATH.

    Raises ``FileNotFoundError`` when none exists."""
    explicit = os.environ.get("LOFT_BINARY")
    if explicit:
        return explicit
    scripts = sysconfig.get_path("scripts")
    for name in ("loft", "loft.exe"):
        candidate = os.path.join(scripts, name)
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which("loft")
    if found:
        return found
    raise FileNotFoundError("no loft binary: install loft-server or set LOFT_BINARY")


class LoftServer:
    """One ``loft serve`` process on 127.0.0.1 with a temporary database.

    ``config`` is the text of a Loft config file (TOML: ``[[queues]]``, ``[[topics]]``, ...);
    its resources are created at start and again after each ``reset()``. ``args`` are
    extra ``loft serve`` flags. ``endpoint`` is the base URL (``http://127.0.0.1:PORT``)
    once started."""

    def __init__(self, config: Optional[str] = None, args: Optional[List[str]] = None,
                 start_timeout: float = 15.0) -> None:
        self.config = config
        self.args = list(args or [])
        self.start_timeout = start_timeout
        self.endpoint: Optional[str] = None
        self._proc: Optional[subprocess.Popen] = None
        self._dir: Optional[tempfile.TemporaryDirectory] = None
        self._log: List[str] = []

    def start(self) -> "LoftServer":
        """Starts the process and waits (at most ``start_timeout`` seconds) until it
        listens. Raises ``RuntimeError`` with its output when it does not."""
        self._dir = tempfile.TemporaryDirectory(prefix="loft-")
        cmd = [binary(), "serve", "--listen", "127.0.0.1:0",
               "--db", os.path.join(self._dir.name, "loft.db")]
        if self.config is not None:
            path = os.path.join(self._dir.name, "loft.toml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.config)
            cmd += ["--config", path]
        cmd += self.args
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, bufsize=1)
        found = threading.Event()

        def read() -> None:
            assert self._proc is not None and self._proc.stdout is not None
            for line in self._proc.stdout:
                self._log.append(line)
                if not found.is_set() and line.startswith(_LISTENING):
                    self.endpoint = line[len(_LISTENING):].strip()
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(self.start_timeout):
            self.stop()
            raise RuntimeError("loft did not start:\n" + "".join(self._log[-40:]))
        return self

    def reset(self) -> dict:
        """Empties the server (``POST /_loft/reset``): every queue, topic, subscription,
        message and recording goes; the config file's resources come back. Returns Loft's
        JSON counts of what it removed."""
        if self.endpoint is None:
            raise RuntimeError("the server is not running")
        req = urllib.request.Request(self.endpoint + "/_loft/reset", data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"{}")

    def stop(self) -> None:
        """Stops the process (SIGTERM, then SIGKILL after 5 s) and removes its database."""
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        self.endpoint = None

    def __enter__(self) -> "LoftServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
