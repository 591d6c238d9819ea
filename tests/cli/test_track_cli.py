"""``govern db``, ``govern status`` filters and formats, and their errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import bidi
import pytest
from clirun import run_cli as _run

from govern.store.location import SCHEMA_REVISION

REQUIREMENTS = (
    "# Pinned until the cluster image moves to 2.x.\n"
    "# govern: owner=@infra review-by=2026-01-31\n"
    "numpy<2\n\n"
    "attrs!=25.2.0  # https://github.com/python-attrs/attrs/issues/1400\n"
    "torch==2.9.1  # govern: owner=@ml\n"
    "evil==1000000000.0.0  # banned: typosquat\n"
)


@pytest.fixture
def tracked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    code, _, err = _run(["track", str(root), "--db", db], capsys)
    assert code == 0, err
    return db


def _packages(out: str) -> list[str]:
    return [e["package"] for e in json.loads(out)["exclusions"]]


def test_status_filters(tracked: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["status", "--db", tracked, "-f", "json"], capsys)
    assert code == 0
    assert _packages(out) == ["numpy", "attrs", "torch", "evil"]
    document = json.loads(out)
    assert document["schema"] == "govern.status/1"
    numpy = document["exclusions"][0]
    assert numpy["state"] == "overdue"  # review-by 2026-01-31 has passed
    assert numpy["owner"] == "@infra"
    assert numpy["reason"] == "Pinned until the cluster image moves to 2.x."
    assert _packages(
        _run(["status", "--db", tracked, "-f", "json", "--kind", "pin,ban"], capsys)[1]
    ) == ["torch", "evil"]
    assert _packages(
        _run(["status", "--db", tracked, "-f", "json", "--package", "NumPy"], capsys)[1]
    ) == ["numpy"]
    assert _packages(
        _run(["status", "--db", tracked, "-f", "json", "--state", "overdue"], capsys)[1]
    ) == ["numpy"]
    assert _packages(
        _run(["status", "--db", tracked, "-f", "json", "--owner", "ml"], capsys)[1]
    ) == ["torch"]
    assert (
        _packages(
            _run(["status", "--db", tracked, "-f", "json", "--repository", "nowhere"], capsys)[1]
        )
        == []
    )


# What the commands that read the store must not load (issue 24: they answer at once):
# the ORM and pydantic (the read side queries Core tables and answers dataclasses), the
# HTTP, web and migration stacks, and the proposing, polling, verifying and CI code.
_NOT_FOR_READING = (
    "sqlmodel",
    "pydantic",
    "sqlalchemy.orm",
    "govern.store.models",
    "httpx",
    "httpcore",
    "fastapi",
    "starlette",
    "uvicorn",
    "jinja2",
    "rich",
    "alembic",
    "govern.audit",
    "govern.ci",
    "govern.forge",
    "govern.git",
    "govern.index",
    "govern.notify",
    "govern.service",
    "govern.web",
)


# A no-op track reads the tree (discovery, git's HEAD, the service's check) and a dry run
# with nothing verified reads the proposable ids: each of those, and nothing more.
_TRACK = ("govern.audit", "govern.git", "govern.service")
_PROPOSE = ("govern.service",)


@pytest.mark.parametrize(
    ("argv", "shown", "also_not", "allowed"),
    [
        (["status"], "4 exclusions", ("govern.store.outbox", "govern.store.history"), ()),
        (["status", "--format", "json"], '"schema": "govern.status/1"', (), ()),
        (["history", "numpy"], "thread 1: numpy", (), ()),
        (["history", "numpy", "--format", "json"], '"schema": "govern.history/1"', (), ()),
        (["dashboard"], "Pending relaxations: 0", ("govern.store.outbox",), ()),
        (["dashboard", "--format", "json"], '"schema": "govern.dashboard/1"', (), ()),
        (["track", "repo"], "0 added, 0 restored", ("govern.service.sync",), _TRACK),
        (["propose", "--dry-run"], "nothing to propose", ("govern.service.propose",), _PROPOSE),
        (
            ["propose", "--dry-run", "--format", "json"],
            '"proposals": []',
            ("govern.service.propose",),
            _PROPOSE,
        ),
    ],
)
def test_reading_commands_load_only_what_they_use(
    tracked: str,
    tmp_path: Path,
    argv: list[str],
    shown: str,
    also_not: tuple[str, ...],
    allowed: tuple[str, ...],
) -> None:
    probe = (
        "import sys\n"
        "from govern.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('LOADED', *sorted(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv, "--db", tracked],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout  # the command did its work
    loaded = done.stderr.split("LOADED", 1)[1].split()
    assert "govern.store.schema" in loaded  # the probe sees what the command imported
    unwanted = {*_NOT_FOR_READING, *also_not} - set(allowed)
    assert [m for m in loaded if any(m == u or m.startswith(f"{u}.") for u in unwanted)] == []


def test_status_human(tracked: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["status", "--db", tracked], capsys)
    assert code == 0
    assert "requirements.txt:3  numpy <2  [cap]  overdue" in out
    assert "owner @infra  review-by 2026-01-31" in out
    assert "4 exclusions" in out


def test_status_rejects_an_unknown_state(tracked: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["status", "--db", tracked, "--state", "stuck"], capsys)
    assert code == 2
    assert "--state stuck is not one of held" in err


def test_database_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tracked: str
) -> None:
    os.environ["GOVERN_DATABASE_URL"] = tracked  # restored by the autouse fixture
    code, out, _ = _run(["status", "-f", "json"], capsys)
    assert code == 0
    assert len(_packages(out)) == 4


def test_the_default_database_lives_in_the_data_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text("numpy<2\n", encoding="utf-8")
    assert _run(["track", str(tmp_path)], capsys)[0] == 0
    default = Path(os.environ["XDG_DATA_HOME"]) / "govern" / "govern.db"
    assert default.is_file()


def test_db_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'fresh.db'}"
    code, out, _ = _run(["db", "current", "--db", db], capsys)
    assert code == 0
    assert "revision none" in out
    assert "needs `govern db upgrade`" in out
    code, out, _ = _run(["db", "upgrade", "--db", db], capsys)
    assert code == 0
    assert f"empty -> {SCHEMA_REVISION}" in out
    code, out, _ = _run(["db", "current", "--db", db], capsys)
    assert "(up to date)" in out
    code, out, _ = _run(["db", "downgrade", "base", "--db", db], capsys)
    assert code == 0
    assert "now at base" in out


def test_an_unreachable_server_is_one_line_and_a_tip(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(
        ["status", "--db", "postgresql://govern:hunter2@127.0.0.1:1/govern"], capsys
    )
    assert code == 2
    assert err.startswith(
        "govern: error: cannot use the database at postgresql+psycopg://govern:***@"
    )
    assert "hunter2" not in err
    assert "Traceback" not in err


def test_history_of_nothing_is_a_clear_error(
    tracked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["history", "left-pad", "--db", tracked], capsys)
    assert code == 2
    assert "nothing tracked for 'left-pad'" in err


def test_history_by_id_and_shared_links_join_a_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(
        "# Both break on the same bug: https://github.com/org/proj/issues/7\n"
        "torch<2.9\n"
        "torchvision<0.24\n\n"
        "other<1  # unrelated\n",
        encoding="utf-8",
    )
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(root), "--db", db], capsys)[0] == 0
    code, out, _ = _run(["history", "torch", "--db", db, "-f", "json"], capsys)
    assert code == 0
    (thread,) = json.loads(out)["threads"]
    assert sorted(e["package"] for e in thread["exclusions"]) == ["torch", "torchvision"]
    assert thread["links"] == ["https://github.com/org/proj/issues/7"]
    torch_id = thread["exclusions"][0]["id"]
    code, out, _ = _run(["history", torch_id, "--db", db, "-f", "json"], capsys)
    assert code == 0
    assert len(json.loads(out)["threads"]) == 1


def test_the_history_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    from govern.cli.track import _progress_bar

    assert _progress_bar(False) == (None, None)  # not a terminal: no bar
    update, close = _progress_bar(True)
    assert update is not None
    assert close is not None
    for done in range(1, 4):
        update(done, 3, "requirements/kv_connectors.txt")
    close()
    err = capsys.readouterr().err
    assert "replaying history" in err


def test_a_malformed_url_is_a_usage_error_without_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(["status", "--db", "postgresql://u:s3cret@127.0.0.1:abc/test"], capsys)
    assert code == 2
    assert "is not a database URL" in err
    assert "s3cret" not in err


def test_threads_follow_links_transitively_and_symmetrically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(
        "alpha<1  # https://github.com/org/proj/issues/1\n\n"
        "beta<1  # https://github.com/org/proj/issues/1 and https://github.com/org/proj/issues/2\n\n"
        "gamma<1  # https://github.com/org/proj/issues/2\n\n"
        "delta<1  # https://github.com/org/proj/issues/3\n",
        encoding="utf-8",
    )
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(root), "--db", db], capsys)[0] == 0
    for package in ("alpha", "gamma"):
        code, out, _ = _run(["history", package, "--db", db, "-f", "json"], capsys)
        assert code == 0
        (thread,) = json.loads(out)["threads"]
        assert sorted(e["package"] for e in thread["exclusions"]) == ["alpha", "beta", "gamma"]


def test_status_and_history_show_bidi_controls_and_escapes_visibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = bidi.repository(tmp_path / "repo")
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(root), "--db", db], capsys)[0] == 0
    code, status, _ = _run(["status", "--db", db], capsys)
    assert code == 0
    assert bidi.REASON_SHOWN in status
    assert "owner @team<U+200F>" in status
    code, history, _ = _run(["history", "numpy", "--db", db], capsys)
    assert code == 0
    assert "reason: Breaks the <U+202E>gnp.exe<U+202E> loader, see <U+001B>[2Jthe" in history
    for shown in (status, history):
        assert not set(shown) & bidi.HIDDEN
    code, _, err = _run(["history", f"numpy{bidi.RLO}", "--db", db], capsys)
    assert code == 2
    assert "nothing tracked for 'numpy<U+202E>'" in err
    assert bidi.RLO not in err


@pytest.mark.parametrize(
    "command",
    [
        ["track", "."],
        ["status"],
        ["history", "numpy"],
        ["db", "upgrade"],
        ["db", "downgrade", "base"],
        ["db", "current"],
        ["dashboard"],
        ["report"],
        ["serve"],
        ["poll"],
        ["verify"],
        ["daemon", "--once"],
    ],
)
@pytest.mark.parametrize("given", ["option", "environment"])
def test_a_sqlite_path_in_a_missing_folder_is_a_clear_error(
    command: list[str],
    given: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # never asked
    missing = tmp_path / "no-such-folder" / "sub" / "govern.db"
    if given == "option":
        argv = [*command, "--db", str(missing)]
    else:
        monkeypatch.setenv("GOVERN_DATABASE_URL", f"sqlite:///{missing}")
        argv = command
    code, _, err = _run(argv, capsys)
    assert code == 2, err
    lines = [line for line in err.splitlines() if not line.startswith("index: ")]
    assert lines == [
        f"govern: error: the folder of the SQLite database {missing} does not exist",
        "Tip: Create the folder first, or pass --db (or set GOVERN_DATABASE_URL) with a path "
        "in an existing folder.",
    ]
    assert not (tmp_path / "no-such-folder").exists()


def test_track_creates_a_missing_database_file_in_an_existing_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    (tmp_path / "store").mkdir()
    file = tmp_path / "store" / "govern.db"
    code, out, err = _run(["track", str(root), "--db", str(file)], capsys)
    assert code == 0, err
    assert "4 added" in out
    assert file.is_file()
    blocked = tmp_path / "plain-file"
    blocked.write_text("", encoding="utf-8")
    code, _, err = _run(["status", "--db", str(blocked / "govern.db")], capsys)
    assert code == 2
    assert f"{blocked}, the folder of the SQLite database" in err
