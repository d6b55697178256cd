"""Start a local Jupyter server (JupyterLab) for a check, and always stop it again."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .browser import free_port


@dataclass
class Server:
    url: str            # http://127.0.0.1:PORT
    token: str
    proc: subprocess.Popen
    log: Path

    def api(self, method: str, path: str, body: dict | None = None, timeout: float = 60) -> dict:
        """Call the REST API (``/api/...``) with the token; return the decoded JSON answer."""
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            data = r.read()
        return json.loads(data) if data else {}

    def tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


@contextlib.contextmanager
def jupyter(root: Path, app: str = "lab", env: dict | None = None, extra: list[str] | None = None,
            timeout: float = 90):
    """Run ``jupyter lab`` (or ``jupyter server``) from this Python's environment on 127.0.0.1, a free port
    and a random token, serving ``root``; yield a :class:`Server`.  On exit the server is asked to shut down
    (which stops its kernels), then its whole process group gets SIGTERM and, if need be, SIGKILL."""
    exe = Path(sys.executable).parent / f"jupyter-{app}"
    if not exe.exists():
        raise RuntimeError(f"{exe} is missing: run `make setup`")
    tmp = Path(tempfile.mkdtemp(prefix="eaglebook-jupyter-"))
    token, port = secrets.token_hex(16), free_port()
    app_cls = "LabApp" if app == "lab" else "ServerApp"
    cmd = [str(exe), "--allow-root", "--no-browser", f"--ServerApp.token={token}", f"--port={port}",
           "--ip=127.0.0.1", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
           "--ServerApp.open_browser=False", *(extra or [])]
    if app == "lab":
        cmd += [f"--{app_cls}.workspaces_dir={tmp / 'workspaces'}", "--LabApp.news_url=None"]
    e = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), **(env or {}))
    log = tmp / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=e, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", token, proc, log)
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter {app} exited with {proc.returncode}:\n{server.tail()}")
            try:
                server.api("GET", "/api/status", timeout=5)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.time() > deadline:
                    raise RuntimeError(f"jupyter {app} did not answer within {timeout:.0f} s:\n{server.tail()}")
                time.sleep(0.5)
        yield server
    finally:
        stop(server)
        shutil.rmtree(tmp, ignore_errors=True)


def stop(server: Server) -> None:
    proc = server.proc
    if proc.poll() is None:
        with contextlib.suppress(Exception):
            for k in server.api("GET", "/api/kernels", timeout=5):
                server.api("DELETE", f"/api/kernels/{k['id']}", timeout=15)
        with contextlib.suppress(Exception):
            server.api("POST", "/api/shutdown", timeout=5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)          # the server's group (its own session): nothing else
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
            break
