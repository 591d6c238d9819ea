"""Shared fixtures: process-wide state is restored after every test."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError

from govern.cli import STATE
from govern.index import pipconfig

DATA = Path(__file__).parent / "data"

# Variables that change govern's behaviour; tests set what they need explicitly.
_ENV = (
    "NO_COLOR",
    "FORCE_COLOR",
    "GOVERN_DATABASE_URL",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "XDG_DATA_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    *(f"{scheme}_proxy" for scheme in ("http", "https", "all", "no")),
    *(f"{scheme}_PROXY" for scheme in ("HTTP", "HTTPS", "ALL", "NO")),
)


@pytest.fixture(autouse=True)
def _restore_process_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Reset the CLI flags, the collector, the environment and the cwd after each test;
    and the signal handlers and APScheduler's logger, which ``govern daemon`` sets.

    The user's data directory points into a temporary folder, so a command run without
    --db never touches the real default database.
    """
    saved_env = {name: os.environ.get(name) for name in _ENV}
    saved_cwd = os.getcwd()
    saved_debug = STATE.debug
    saved_fast_exit = STATE.fast_exit
    saved_gc = gc.isenabled()
    saved_signals = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    scheduler_log = logging.getLogger("apscheduler")
    saved_log = (scheduler_log.level, scheduler_log.propagate, list(scheduler_log.handlers))
    try:
        for name in _ENV:
            os.environ.pop(name, None)
        os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data-home"))
        yield
    finally:
        STATE.debug = saved_debug
        STATE.fast_exit = saved_fast_exit
        for signum, handler in saved_signals.items():
            signal.signal(signum, handler)
        scheduler_log.setLevel(saved_log[0])
        scheduler_log.propagate = saved_log[1]
        scheduler_log.handlers[:] = saved_log[2]
        if saved_gc:
            gc.enable()
        else:
            gc.disable()
        os.chdir(saved_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(autouse=True)
def _no_pip_default_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test asks the installed pip for its default index (a public host): with nothing
    configured, an index command stops as when there is no pip. Tests of the default
    replace it with a local server's URL (tests/cli/test_pip_default_index.py)."""
    monkeypatch.setattr(pipconfig, "pip_default_index", lambda: None)


@pytest.fixture
def data() -> Path:
    """The directory of committed test data (each folder has a PROVENANCE.md)."""
    return DATA


# A fresh database per store test, on SQLite and on PostgreSQL (127.0.0.1:5432, trust auth,
# database ``test``; override with GOVERN_TEST_POSTGRESQL). PostgreSQL gets a schema of its
# own per test, dropped afterwards, so tests on several xdist workers never meet.
POSTGRESQL = os.environ.get(
    "GOVERN_TEST_POSTGRESQL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
# Set (to 1) in CI (.ci/run): there an unreachable PostgreSQL fails the tests that need it,
# so they are never skipped silently; elsewhere they are skipped with the reason.
REQUIRE_POSTGRESQL = "GOVERN_REQUIRE_POSTGRESQL"

_unreachable: list[str] = []  # the first connection failure, so later tests do not wait again


def postgresql_unreachable(reason: str) -> NoReturn:
    """Skip the test that needs PostgreSQL, or fail it when CI requires PostgreSQL."""
    if os.environ.get(REQUIRE_POSTGRESQL, "") not in ("", "0"):
        pytest.fail(f"{reason} ({REQUIRE_POSTGRESQL} is set)", pytrace=False)
    pytest.skip(f"{reason}; start it, or deselect with -m 'not postgresql'")


@contextlib.contextmanager
def postgresql_schema() -> Iterator[tuple[str, str]]:
    """A schema of its own in the test PostgreSQL database, dropped afterwards: (URL, name)."""
    if _unreachable:
        postgresql_unreachable(_unreachable[0])
    schema = f"govern_test_{uuid.uuid4().hex[:12]}"
    engine = create_engine(
        POSTGRESQL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5}
    )
    try:
        with engine.connect() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as exc:
        engine.dispose()
        where = make_url(POSTGRESQL).render_as_string(hide_password=True)
        _unreachable.append(
            f"PostgreSQL at {where} is not reachable: {' '.join(str(exc.orig).split())}"
        )
        postgresql_unreachable(_unreachable[0])
    try:
        yield f"{POSTGRESQL}?options=-csearch_path%3D{schema}", schema
    finally:
        with engine.connect() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database; the PostgreSQL schema is dropped after the test.

    The PostgreSQL case carries the ``postgresql`` marker: ``-m 'not postgresql'`` runs
    without a server; an unreachable one skips it (fails it under GOVERN_REQUIRE_POSTGRESQL).
    """
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'govern.db'}"
        return
    with postgresql_schema() as (url, _schema):
        yield url


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate and key for 127.0.0.1, by Debian's openssl (cert, key)."""
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    command = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
    ]
    subprocess.run(
        [*command, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True
    )
    return cert, key
