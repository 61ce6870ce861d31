"""Start and stop a local llama-cpp-python server (``python -m llama_cpp.server``) for a GGUF file: for the
benchmarks and the tests (which import it from here), not part of the package.

The embedded model's GGUF served this way gives an OpenAI-compatible endpoint on this machine:
``OpenAIBackend(server.model, base_url=server.base_url)``. Needs ``llama-cpp-python[server]``.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

log = logging.getLogger(__name__)


def die_with_parent() -> None:
    """In a child process before it starts: ask Linux to SIGTERM it when its parent dies (no orphaned server)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """``with LlamaServer() as server: ...`` serves ``model_path`` (default: the embedded GGUF); ``alias`` is
    the model name clients send (``server.model``)."""

    def __init__(self, model_path: str | os.PathLike | None = None, *, alias: str = "smollm2-135m-instruct-q4_1",
                 n_ctx: int = 2048, threads: int = 2, startup_timeout: float = 120.0) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ImportError("llama-cpp-python is not installed: pip install 'llama-cpp-python[server]'")
        if model_path is None:
            from finelogic.models.embedded import gguf_path
            model_path = gguf_path()
        self.model_path = Path(model_path)
        self.model = alias
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.command = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
                        "--model_alias", alias, "--host", "127.0.0.1", "--port", str(self.port),
                        "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads)]
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()

    def start(self) -> "LlamaServer":
        self._process = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                         preexec_fn=die_with_parent)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self._process.returncode}:\n{self.output()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                    json.load(response)
                log.info("llama_cpp.server ready on %s", self.base_url)
                return self
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                time.sleep(0.25)
        self.stop()
        raise TimeoutError(f"llama_cpp.server did not answer within {self.startup_timeout} s")

    def output(self) -> str:
        """What the server printed so far (stdout and stderr)."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
