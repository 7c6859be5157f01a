"""Child processes of the soak scripts: a private PostgreSQL cluster that can be stopped and started under a
running server, `switchboard serve …` children restartable on their port, and the bridge."""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def switchboard_binary() -> str:
    """`SOAK_SWITCHBOARD`, else the debug build of this checkout."""
    path = os.environ.get("SOAK_SWITCHBOARD") or os.path.join(ROOT, ".build", "debug", "switchboard")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"soak: no switchboard executable at {path} (run `swift build` or set SOAK_SWITCHBOARD)")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: SIGKILL when the soak process dies (PR_SET_PDEATHSIG), so nothing outlives a killed soak."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


class Postgres:
    """A private PostgreSQL cluster (trust, loopback, fsync off) run with pg_ctl, as the `postgres` user when
    root; `stop`/`start` restart it on the same port under a running server."""

    def __init__(self, directory: str):
        self.directory = directory
        self.data = os.path.join(directory, "data")
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        self.bin = self._binaries()

    @staticmethod
    def _binaries() -> str:
        if os.environ.get("PG_BIN"):
            return os.environ["PG_BIN"]
        try:
            found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
            if os.path.exists(os.path.join(found, "pg_ctl")):
                return found
        except (OSError, subprocess.CalledProcessError):
            pass
        candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not candidates:
            raise SystemExit("soak: PostgreSQL's pg_ctl not found (install postgresql or set PG_BIN)")
        return os.path.dirname(candidates[-1])

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [os.path.join(self.bin, tool), *arguments]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise RuntimeError(f"{tool} failed ({result.returncode}): {(result.stdout + result.stderr)[-800:]}")
        return result

    def init(self) -> None:
        os.chmod(self.directory, 0o755)
        os.makedirs(self.data, mode=0o700)
        if self.as_postgres:
            shutil.chown(self.data, "postgres", "postgres")
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C")
        self.start()
        # Stops the cluster when this process ends, however it ends (the children die with it by PDEATHSIG).
        watchdog = (f"while [ -e /proc/{os.getpid()} ]; do sleep 1; done; "
                    f"{os.path.join(self.bin, 'pg_ctl')} -D {self.data} -m immediate stop")
        command = ["sh", "-c", watchdog]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", self.data, "-o", options, "-w", "-t", "60", "-l",
                  os.path.join(self.data, "server.log"), "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop", check=False)


class Child:
    """A `switchboard` child whose output goes to a log file; `ready` is set when it prints `ready_text`."""

    def __init__(self, name: str, arguments: list[str], log_path: str, env: dict | None = None,
                 ready_text: str | None = "listening on"):
        self.name = name
        self.arguments = arguments
        self.log_path = log_path
        self.env = env
        self.ready_text = ready_text
        self.process: subprocess.Popen | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        self.ready = threading.Event()
        log = open(self.log_path, "ab")
        log.write(f"--- {time.strftime('%H:%M:%S')} starting {self.name}\n".encode())
        log.flush()
        self.process = subprocess.Popen(self.arguments, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=log, env=self.env, preexec_fn=_die_with_parent)
        ready, process = self.ready, self.process

        def pump() -> None:
            for line in process.stdout:
                log.write(line)
                log.flush()
                if self.ready_text is None or self.ready_text.encode() in line:
                    ready.set()
            log.close()

        threading.Thread(target=pump, daemon=True).start()

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.1):
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode} before it was ready; "
                                   f"see {self.log_path}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not ready after {timeout:.0f} s; see {self.log_path}")

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 60) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, "rb") as file:
                return b"".join(file.readlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return ""


class Server(Child):
    """A `switchboard serve …` child on a fixed port, restartable there (the bind is retried while the old
    socket lingers)."""

    def __init__(self, name: str, arguments: list[str], log_path: str, env: dict | None = None):
        super().__init__(name, arguments, log_path, env)

    def start_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.start()
            try:
                self.wait_ready(max(1, deadline - time.monotonic()))
                return
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
