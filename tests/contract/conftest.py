"""A throwaway PostgreSQL cluster (Debian's server) for the contract suites' second SQL engine.

One cluster per session: ``initdb`` into a temporary folder (as the ``postgres`` user when the
tests run as root: the server refuses to run as root), ``pg_ctl start`` on a free loopback port
with its unix socket in that folder, one database; stopped and removed at the end. Each test gets
an empty ``public`` schema. The cluster collates by ICU ``en-US``, as a real server set up in an
English locale does, not by byte order as SQLite does.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

PG_ROOT = Path("/usr/lib/postgresql")
PG_HINT = "to run the suites on PostgreSQL: apt-get install postgresql; pip install -e '.[postgres]'"
PG_CI = ".ci/run installs postgresql, and the dev extra brings psycopg"
DATABASE = "tianma_test"


def _unavailable(reason: str) -> NoReturn:
    """Skip on a developer machine; in CI (``CI=true``) the PostgreSQL runs must happen, so fail."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} — CI must run the contract suites on PostgreSQL ({PG_CI})")
    pytest.skip(f"{reason}; {PG_HINT}")


def _bin_dir() -> Path | None:
    """The newest installed server's binaries (``/usr/lib/postgresql/15/bin`` on Debian 12)."""
    found = [p.parent for p in PG_ROOT.glob("*/bin/pg_ctl") if p.parent.parent.name.isdigit()]
    return max(found, key=lambda p: int(p.parent.name), default=None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, slots=True)
class PostgresCluster:
    """A running throwaway cluster."""

    bin_dir: Path
    root: Path
    """Data directory, socket and log live below it."""
    port: int
    user: str | None
    """Who runs the server's programs (``postgres`` when the tests run as root, else ``None``: us)."""

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the test database."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def data(self) -> str:
        """The data directory."""
        return str(self.root / "data")

    @property
    def log(self) -> Path:
        """The server's log (shown when a program fails)."""
        return self.root / "server.log"

    def run(self, program: str, *args: str) -> None:
        """Run one of the server's programs; raises with its output and the log's tail on failure."""
        cmd = [str(self.bin_dir / program), *args]
        done = subprocess.run(cmd, cwd=self.root, user=self.user, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr or done.stdout}\n{tail}")

    def start(self) -> None:
        """``initdb``, start the server, create the test database."""
        self.run(
            "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8",
            "--locale-provider=icu", "--icu-locale=en-US", "--no-sync", "--no-instructions",
        )  # fmt: skip
        # durability is not what these tests are about: no fsync keeps a run fast
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self.run("pg_ctl", "start", "-w", "-t", "60", "-D", self.data, "-l", str(self.log), "-o", options)
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def stop(self) -> None:
        """Stop the server at once (its data is thrown away next)."""
        self.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", self.data)

    def admin(self, database: str = "postgres") -> Any:
        """An autocommit psycopg connection as the superuser."""
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=database, autocommit=True
        )

    def reset(self) -> None:
        """Empty the test database: a new ``public`` schema (connections left open are ended)."""
        with self.admin(DATABASE) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            conn.execute("DROP SCHEMA public CASCADE")
            conn.execute("CREATE SCHEMA public")


def _server_user() -> pwd.struct_passwd | None:
    """Whom to run the server as: ``postgres`` when we are root (it refuses root), else us."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        _unavailable("running as root, and there is no postgres user to run the server as")


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One PostgreSQL server for the session, or skip (fail under ``CI=true``) without one."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        _unavailable(f"no PostgreSQL server under {PG_ROOT}")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed")
    owner = _server_user()
    root = Path(tempfile.mkdtemp(prefix="tianma-pg-"))  # short: a socket path has at most 107 bytes
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    cluster = PostgresCluster(bin_dir, root, _free_port(), None if owner is None else owner.pw_name)
    try:
        cluster.start()
        yield cluster
    finally:
        if Path(cluster.data, "postmaster.pid").exists():
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of an empty PostgreSQL database for this test."""
    postgres_cluster.reset()
    return postgres_cluster.url
