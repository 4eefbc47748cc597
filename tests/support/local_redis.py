"""A throw-away ``redis-server`` on a free loopback port, for tests, benchmarks and trials."""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from websim_crawler._imports import require
from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)

_START_TIMEOUT_SECONDS = 10.0


class LocalRedis:
    """Run ``redis-server`` on 127.0.0.1; stop it on exit.

    Without ``append_only_dir`` nothing is kept on disk; with it, every write goes to an
    append-only file there (``--appendonly yes``), so a server killed and started again on the
    same port comes back with its data, as a production Redis does.
    """

    def __init__(
        self, executable: str = "redis-server", append_only_dir: Path | None = None
    ) -> None:
        self.executable = executable
        self.append_only_dir = append_only_dir
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Return the server's ``redis://`` URL (database 0)."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> LocalRedis:
        """Start the server and wait until it answers PING; raise ``WebsimError`` if it cannot."""
        path = shutil.which(self.executable)
        if path is None:
            raise WebsimError(f"{self.executable} not found (Debian: apt-get install redis-server)")
        redis = require("redis")
        restart = self.port != 0  # after kill(): the same port, so clients find it again
        for _attempt in range(1 if restart else 3):  # a free port may be taken before bind
            self.port = self.port if restart else _free_port()
            arguments = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            if self.append_only_dir is None:
                arguments += ["--appendonly", "no"]  # throw-away: nothing on disk
            else:
                arguments += ["--appendonly", "yes", "--dir", str(self.append_only_dir)]
            self.process = subprocess.Popen(
                [path, *arguments],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + _START_TIMEOUT_SECONDS
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    redis.Redis.from_url(self.url).ping()
                except redis.ConnectionError:
                    time.sleep(0.05)
                    continue
                logger.info("redis-server %d serving %s", self.process.pid, self.url)
                return self
            self.stop()
        raise WebsimError(f"{path} did not start on a free loopback port")

    def kill(self) -> None:
        """Kill the server with SIGKILL (a crash: no shutdown, no final save); keep its port."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.process = None

    def stop(self) -> None:
        """Stop the server (by its own PID)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> LocalRedis:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
