"""``govern daemon`` against a real local index, a command CI provider and real processes.

The whole loop in one run: the daemon syncs a repository that pins ``demo==1.0``, polls
the index (1.1 is out), and verifies 1.1 through a configured command, which reports the
installed version; the exclusion ends ``verified``. Then a daemon in its own process:
polls on its interval (the second a 304), a change to the file picked up by the next
sync, SIGTERM obeyed, and a second daemon on the same store refused.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from gitrepo import Repo
from sqlalchemy import create_engine, text
from wheels import build_wheel

from fakes.index import FaultServer, Hang, IndexFile, StaticIndex

PIN = "demo==1.0  # 1.1 crashed on import; hold 1.0 until a fixed release passes\n"
SAY = f"{sys.executable} -c \"print('govern-verify: installed demo==' + '{{version}}')\""


@pytest.fixture
def index(tmp_path: Path) -> Iterator[StaticIndex]:
    files = [
        IndexFile.of(
            build_wheel(tmp_path / "dists" / version, "demo", version),
            upload_time="2026-05-01T00:00:00Z",
        )
        for version in ("1.0", "1.1")
    ]
    with StaticIndex(tmp_path / "index", {"demo": files}) as served:
        yield served


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(PIN, encoding="utf-8")
    (root / ".govern.toml").write_text(
        f'verify-with = "local"\n[ci.local]\nprovider = "command"\ncommand = {json.dumps(SAY)}\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    return root


def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _jobs(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "job" and e["job"] == name]


def test_once_syncs_polls_and_verifies_the_whole_loop(
    repo: Path, index: StaticIndex, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["daemon", str(repo), "--db", database_url, "--index-url", index.url, "--once"]
    code, out, err = run_cli([*argv, "-f", "json"], capsys)
    assert code == 0, err
    events = _events(out)
    assert [e["event"] for e in events] == ["started", "job", "job", "job", "stopped"]
    assert all(e["schema"] == "govern.daemon/1" for e in events)
    assert events[0]["jobs"] == {
        "sync": "every 30m",
        "poll": "every 30m",
        "verify": "every 10m",
        "propose": "off (no [propose] or [notify] configured: nowhere to propose to)",
    }
    assert [e["job"] for e in events[1:4]] == ["sync", "poll", "verify"]
    assert all(e["ok"] for e in events[1:4])
    assert _jobs(events, "sync")[0]["detail"]["repositories"][0]["added"] == 1
    poll = _jobs(events, "poll")[0]["detail"]
    assert (poll["fetched"], poll["candidates_found"]) == (1, 1)
    assert poll["found"][0]["version"] == "1.1"
    verify = _jobs(events, "verify")[0]["detail"]
    assert verify["concluded"]["passed"] == 1
    assert verify["runs"][0]["installed"] == "1.1"
    code, out, _ = run_cli(["status", "--db", database_url, "-f", "json"], capsys)
    assert json.loads(out)["exclusions"][0]["state"] == "verified"
    # Again: nothing new anywhere (the page is a 304, the file unchanged).
    code, out, _ = run_cli(argv, capsys)
    assert code == 0
    assert "sync ok in" in out
    assert "poll ok in" in out
    assert "0 fetched, 1 unchanged" in out
    assert index.count(index.path("demo")) == 2


def test_once_exits_2_when_the_index_cannot_be_read_and_keeps_the_rest(
    repo: Path, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = "http://someone:s3cr3t-token@127.0.0.1:9/simple"  # discard port: refused
    argv = ["daemon", str(repo), "--db", database_url, "--index-url", dead, "--once"]
    code, out, err = run_cli([*argv, "--verify-every", "off"], capsys)
    assert code == 2
    assert "verify off (--verify-every off)" in out
    assert "sync ok in" in out  # the sync's work is recorded all the same
    assert "poll FAILED in" in out
    assert "the index answered none" in out
    assert "govern: error: a job of the run failed" in err
    assert "s3cr3t" not in out + err
    assert "***@127.0.0.1:9" in out
    code, out, _ = run_cli(["status", "--db", database_url, "-f", "json"], capsys)
    assert json.loads(out)["exclusions"][0]["state"] == "held"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--poll-every", "soon"], "--poll-every 'soon' is not an interval"),
        (["--poll-every", "off", "--verify-every", "off"], "every job is off"),
        (["/nonexistent/repo"], "/nonexistent/repo is not a directory"),
    ],
)
def test_what_cannot_run_exits_2_with_a_tip(
    tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    os.chdir(tmp_path)
    code, _, err = run_cli(
        ["daemon", "--db", db, "--index-url", "http://127.0.0.1:9/", *extra], capsys
    )
    assert code == 2
    assert message in err
    assert "Tip:" in err


def test_an_in_memory_store_is_refused(
    repo: Path, index: StaticIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["daemon", "--db", "sqlite://", "--index-url", index.url], capsys)
    assert code == 2
    assert "in-memory store ends with the daemon" in err


def test_without_an_index_the_poll_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    code, _, err = run_cli(["daemon", "--db", f"sqlite:///{tmp_path / 'g.db'}", "--once"], capsys)
    assert code == 2
    assert "index" in err.lower()


class _Daemon:
    """``python -m govern daemon ... -f json`` in its own process, its events read as they come."""

    def __init__(self, argv: list[str], cwd: Path, fmt: str = "json") -> None:
        env = {**os.environ, "PIP_CONFIG_FILE": "/dev/null", "PYTHONUNBUFFERED": "1"}
        env.pop("PIP_INDEX_URL", None)
        # json: each event a dict; human: each a log line (its timestamp, 20 characters, first)
        self._parse: Any = json.loads if fmt == "json" else (lambda line: line.rstrip("\n"))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "govern", "daemon", *argv, "-f", fmt],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.events: list[Any] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._ended = False  # the end of its output was read
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, test: Any, timeout: float = 30.0) -> Any:
        """The first event (from now on) that ``test`` accepts."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                self._ended = True
                break
            event = self._parse(line)
            self.events.append(event)
            if test(event):
                return event
        self.process.kill()
        _, err = self.process.communicate()
        raise AssertionError(f"no such event; seen {self.events}; stderr {err}")

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.process.send_signal(signum)

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=20)
        finally:
            self.process.kill()
        while not self._ended:
            line = self._lines.get(timeout=20)
            if line is None:
                self._ended = True
            else:
                self.events.append(self._parse(line))
        assert self.process.stderr is not None
        return code, self.process.stderr.read()


def _job(name: str, predicate: Any = None) -> Any:
    return lambda e: (
        e["event"] == "job" and e["job"] == name and (predicate is None or predicate(e))
    )


def test_a_daemon_polls_on_its_interval_picks_up_changes_and_stops_on_sigterm(
    repo: Path, index: StaticIndex, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(repo), "--db", database_url, "--index-url", index.url, "--verify-every", "off"]
    daemon = _Daemon([*argv, "--poll-every", "1s", "--sync-every", "1s"], repo)
    try:
        started = daemon.wait_for(lambda e: e["event"] == "started")
        assert started["jobs"]["poll"] == "every 1s"
        first = daemon.wait_for(_job("poll"))
        assert first["detail"]["fetched"] == 1
        again = daemon.wait_for(_job("poll"))
        assert (again["detail"]["fetched"], again["detail"]["not_modified"]) == (0, 1)
        assert again["next_run_at"] is not None
        # The line is relaxed in the file (to a cap: still watched): the next sync records it.
        (repo / "requirements.txt").write_text("demo<2.0\n", encoding="utf-8")
        changed = daemon.wait_for(
            _job("sync", lambda e: e["detail"]["repositories"][0]["changed"] == 1)
        )
        assert changed["ok"]
        assert changed["then"] == ["poll"]  # a changed line is looked up at once
        # A second daemon on the same store is refused while this one runs.
        code, _, err = run_cli(["daemon", *argv, "--once"], capsys)
        assert code == 2
        assert "another govern daemon holds this store" in err
    finally:
        code, err = daemon.stop()
    assert code == 0, err
    assert daemon.events[-1]["event"] == "stopped"
    stopping = [e for e in daemon.events if e["event"] == "stopping"]
    assert [(e["signal"], e["now"]) for e in stopping] == [("SIGTERM", False)]
    polls = [e for e in daemon.events if e["event"] == "job" and e["job"] == "poll"]
    assert index.count(index.path("demo")) == len(polls)  # one request per poll
    # Once it has stopped, the store is free again.
    code, _, err = run_cli(["daemon", *argv, "--once"], capsys)
    assert code == 0, err


@pytest.fixture
def hanging(repo: Path, database_url: str) -> Iterator[tuple[FaultServer, list[str]]]:
    """An index that never answers demo's page, and a daemon's arguments against it."""
    with FaultServer() as server:
        server.script("demo", Hang(60))
        argv = [str(repo), "--db", database_url, "--index-url", server.url, "--verify-every", "off"]
        yield server, argv


def test_a_second_sigterm_stops_at_once_even_while_a_poll_hangs(
    repo: Path, hanging: tuple[FaultServer, list[str]]
) -> None:
    server, argv = hanging
    daemon = _Daemon([*argv, "--grace", "60"], repo)
    daemon.wait_for(_job("sync"))
    deadline = time.monotonic() + 10
    while not server.count(server.path("demo")) and time.monotonic() < deadline:
        time.sleep(0.05)  # the poll is waiting on the index
    began = time.monotonic()
    daemon.signal()
    daemon.wait_for(lambda e: e["event"] == "stopping")
    daemon.signal()
    code = daemon.process.wait(timeout=20)
    assert time.monotonic() - began < 10  # not the 60 s of grace, nor the hang
    assert code == 0
    daemon.stop()
    kinds = [e["event"] for e in daemon.events]
    assert kinds[-1] == "stopped"
    assert [e["now"] for e in daemon.events if e["event"] == "stopping"] == [False, True]
    assert not [e for e in daemon.events if e["event"] == "job" and e["job"] == "poll"]


def test_once_cut_off_by_sigterm_exits_2(
    repo: Path, hanging: tuple[FaultServer, list[str]]
) -> None:
    server, argv = hanging
    daemon = _Daemon([*argv, "--once", "--grace", "0.5"], repo)
    daemon.wait_for(_job("sync"))
    deadline = time.monotonic() + 10
    while not server.count(server.path("demo")) and time.monotonic() < deadline:
        time.sleep(0.05)
    daemon.signal()
    code = daemon.process.wait(timeout=20)
    _, err = daemon.stop()
    assert code == 2
    assert "stopped before every job of the run had ended" in err
    assert [e["event"] for e in daemon.events][-2:] == ["cancelled", "stopped"]


def test_a_store_migrated_by_another_govern_stops_the_daemon(
    repo: Path, index: StaticIndex, database_url: str
) -> None:
    argv = [str(repo), "--db", database_url, "--index-url", index.url, "--verify-every", "off"]
    daemon = _Daemon([*argv, "--poll-every", "1s", "--sync-every", "off"], repo)
    daemon.wait_for(_job("poll"))
    engine = create_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    finally:
        engine.dispose()
    fatal = daemon.wait_for(lambda e: e["event"] == "fatal")
    assert "9999" in fatal["message"]
    code = daemon.process.wait(timeout=20)
    _, err = daemon.stop()
    assert code == 2
    assert "govern: error:" in err


CAP = "# 14.1.0 imports pytest at import time and breaks the images\ncupy-cuda13x < 14.1.0\n"
SAY_CUPY = SAY.replace("demo==", "cupy-cuda13x==")
LOCAL_CI = (
    f'verify-with = "local"\n[ci.local]\nprovider = "command"\ncommand = {json.dumps(SAY_CUPY)}\n'
)


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(a bare origin, the user's clone of it, the daemon's own directory): the cap on
    main with its reason and a [propose] section (via git) in the repository, a local
    check that passes with evidence in the daemon's configuration: the whole loop
    configured, as a service runs it beside the checkouts it keeps."""
    seed = Repo(tmp_path / "seed")
    (seed.root / "requirements.txt").write_text(CAP, encoding="utf-8")
    (seed.root / ".govern.toml").write_text('[propose]\nvia = "git"\n', encoding="utf-8")
    seed.git("add", "-A")
    seed.git("commit", "-q", "-m", "cap cupy-cuda13x")
    bare = tmp_path / "origin.git"
    seed.git("clone", "-q", "--bare", str(seed.root), str(bare))
    root = tmp_path / "clone"
    seed.git("clone", "-q", str(bare), str(root))
    service = tmp_path / "service"
    service.mkdir()
    (service / ".govern.toml").write_text(LOCAL_CI, encoding="utf-8")
    monkeypatch.chdir(service)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    for key, value in seed.env("2024-01-01T00:00:00+00:00", "Ada Lovelace").items():
        if key.startswith("GIT_"):
            monkeypatch.setenv(key, value)
    return bare, root, service


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def test_a_running_daemon_with_default_intervals_pushes_the_fix_once_it_is_published(
    clone: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CuPy story, as a service lives it: a daemon started with only a quick poll
    (verify and propose at their defaults, proposing on because the repository has a
    [propose] section) sees 14.1.1 published while it runs, verifies it and pushes the
    branch relaxing the cap to != 14.1.0 without waiting for verify's or propose's own
    time; SIGTERM stops it cleanly. Its log names the package and versions, and "sent"
    appears only for the run that pushed."""
    bare, root, service = clone
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    files = [IndexFile(f"cupy_cuda13x-{v}-py3-none-any.whl") for v in ("14.0.1", "14.1.0")]
    with StaticIndex(tmp_path / "index", {"cupy-cuda13x": files}) as index:
        argv = [str(root), "--db", db, "--index-url", index.url]
        daemon = _Daemon([*argv, "--poll-every", "2s"], service, fmt="human")
        try:
            started = daemon.wait_for(lambda e: "govern daemon started" in e)
            assert "sync every 30m, poll every 2s, verify every 10m, propose every 10m" in started
            first = daemon.wait_for(lambda e: e.startswith("propose ", 21))
            assert "propose ok" in first
            assert "nothing to propose" in first
            # The fix ships while the daemon runs.
            files.append(IndexFile("cupy_cuda13x-14.1.1-py3-none-any.whl"))
            index.publish("cupy-cuda13x", files, serial=2)
            polled = daemon.wait_for(lambda e: "new: " in e)
            assert "poll ok" in polled
            assert "new: cupy-cuda13x 14.1.1 for <14.1.0" in polled
            assert polled.endswith("; verify now")
            verified = daemon.wait_for(lambda e: e.startswith("verify ", 21))
            assert "verify ok" in verified
            assert "cupy-cuda13x 14.1.1 passed => passed" in verified
            assert verified.endswith("; propose now")
            proposed = daemon.wait_for(lambda e: e.startswith("propose ", 21))
            assert "propose ok" in proposed
            assert "1 sent: cupy-cuda13x < 14.1.0 -> != 14.1.0 pushed govern/relax/" in proposed
            # The next poll has nothing new: it wakes nobody.
            quiet = daemon.wait_for(lambda e: e.startswith("poll ", 21))
            assert "0 new candidates" in quiet
            assert not quiet.endswith("now")
        finally:
            code, err = daemon.stop()
        assert code == 0, err
        log = daemon.events
        assert "SIGTERM: stopping after the running job (again to stop now)" in log[-2]
        assert log[-1].endswith("govern daemon stopped")
        assert sum(" sent: " in e for e in log) == 1
        branches = _git(bare, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()
        relaxing = [b for b in branches if b != "main"]
        assert len(relaxing) == 1
        assert relaxing[0] in proposed
        shown = _git(bare, "show", f"{relaxing[0]}:requirements.txt")
        assert "cupy-cuda13x != 14.1.0" in shown
        assert "14.1.0 imports pytest" in shown  # the reason stays
        # Another tick with nothing new: the proposal is read again, never "sent" again.
        code, out, err = run_cli(["daemon", *argv, "--once"], capsys)
    assert code == 0, err
    again = next(line for line in out.splitlines() if line[21:].startswith("propose "))
    assert "propose ok in" in again
    assert "1 already proposed" in again
    assert "sent" not in again
    assert _git(bare, "for-each-ref", "--format=%(refname:short)", "refs/heads").split() == (
        branches
    )


def test_proposing_follows_the_channels_configured_and_the_option(
    clone: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bare, root, _service = clone
    files = [IndexFile(f"cupy_cuda13x-{v}-py3-none-any.whl") for v in ("14.0.1", "14.1.0")]
    with StaticIndex(tmp_path / "index", {"cupy-cuda13x": files}) as index:
        argv = [str(root), "--db", f"sqlite:///{tmp_path / 'g.db'}", "--index-url", index.url]
        # A [propose] section, and proposing turned off all the same.
        code, out, err = run_cli(["daemon", *argv, "--once", "--propose-every", "0"], capsys)
        assert code == 0, err
        assert "propose off (--propose-every off)" in out
        assert "propose ok" not in out
        # No channel anywhere: off, and the line says why.
        (root / ".govern.toml").unlink()
        code, out, err = run_cli(["daemon", *argv, "--once"], capsys)
        assert code == 0, err
        assert "propose off (no [propose] or [notify] configured: nowhere to propose to)" in out
        # Asked for, it runs all the same (and has nothing to send).
        code, out, err = run_cli(["daemon", *argv, "--once", "--propose-every", "1h"], capsys)
    assert code == 0, err
    assert "propose every 1h" in out
    assert "nothing to propose" in out
