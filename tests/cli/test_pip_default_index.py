"""With nothing configured, ``poll``, ``verify`` and ``audit --online`` ask pip's default index.

The default comes from the installed pip at run time (never written in govern); tests
replace the function that asks pip with a local server's URL (tests/conftest.py makes it
answer None everywhere else, so no test reaches a public host).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import run_cli

from fakes.index import IndexFile, StaticIndex
from govern.index import pipconfig
from govern.index.pipconfig import pip_default_index as real_pip_default_index

FILES = [IndexFile("demo-1.0.tar.gz"), IndexFile("demo-1.1.tar.gz")]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[StaticIndex]:
    with StaticIndex(tmp_path / "index", {"demo": FILES}) as served:
        yield served


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository excluding demo 1.0, with no index configured anywhere."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text("demo<1.0  # broken\n", encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    return root


def _pip_default(monkeypatch: pytest.MonkeyPatch, url: str) -> list[int]:
    """pip's default made ``url``; the list counts the times pip was asked."""
    asked: list[int] = []

    def fake() -> str:
        asked.append(1)
        return url

    monkeypatch.setattr(pipconfig, "pip_default_index", fake)
    return asked


@pytest.fixture
def db(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A store tracking the repository (demo<1.0)."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    code, _, err = run_cli(["track", str(repo), "--db", url], capsys)
    assert code == 0, err
    return url


def test_poll_asks_pips_default_index_and_says_so(
    db: str, index: StaticIndex, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = _pip_default(monkeypatch, index.url)
    code, out, err = run_cli(["poll", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    assert f"index: {index.url} (pip's default)" in err.splitlines()
    assert json.loads(out)["fetched"] == 1
    assert index.count(index.path("demo")) == 1
    assert asked == [1]


def test_audit_online_asks_pips_default_index_and_says_so(
    repo: Path,
    index: StaticIndex,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _pip_default(monkeypatch, index.url)
    code, out, err = run_cli(["audit", str(repo), "--online", "-f", "json"], capsys)
    assert code == 0, err
    assert f"index: {index.url} (pip's default)" in err.splitlines()
    rules = {f["rule"] for f in json.loads(out)["findings"]}
    assert "index-unreachable" not in rules
    assert index.count(index.path("demo")) == 1


def test_verify_takes_pips_default_index_and_says_so(
    db: str, index: StaticIndex, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _pip_default(monkeypatch, index.url)
    say = f"{sys.executable} -c \"print('govern-verify: installed demo==' + '{{version}}')\""
    code, _, err = run_cli(["verify", "--db", db, "--command", say], capsys)
    assert code == 0, err
    assert f"index: {index.url} (pip's default)" in err.splitlines()


def test_pip_index_url_still_wins_and_pip_is_not_asked(
    db: str, index: StaticIndex, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = _pip_default(monkeypatch, "http://127.0.0.1:9/never/")
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    code, out, err = run_cli(["poll", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    assert "pip's default" not in err
    assert (json.loads(out)["fetched"], asked) == (1, [])


def test_pip_conf_still_wins(
    repo: Path,
    index: StaticIndex,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {index.url}\n", encoding="utf-8")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    asked = _pip_default(monkeypatch, "http://127.0.0.1:9/never/")
    code, _, err = run_cli(["audit", str(repo), "--online", "-f", "json"], capsys)
    assert code == 0, err
    assert "pip's default" not in err
    assert asked == []
    assert index.count(index.path("demo")) == 1


def test_without_a_pip_to_ask_it_stops_with_the_tip_as_before(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # tests/conftest.py: pip_default_index answers None (no pip on this machine).
    code, _, err = run_cli(["poll", "--db", db], capsys)
    assert code == 2
    assert "no package index is configured" in err
    assert "Tip:" in err


# -- asking pip ----------------------------------------------------------------------------------


def test_the_default_is_what_the_installed_pip_says() -> None:
    from pip._internal.models.index import PyPI

    assert real_pip_default_index() == PyPI.simple_url


def test_without_pip_here_the_pip_on_path_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This interpreter cannot import pip; the `pip` on PATH is run by another one, which
    # answers with its pip's default (a fake interpreter here, printing a local URL).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python3"
    python.write_text("#!/bin/sh\necho http://127.0.0.1:9/their-default/\n", encoding="utf-8")
    pip = bin_dir / "pip3"
    pip.write_text(f"#!{python}\n", encoding="utf-8")
    for script in (python, pip):
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setitem(sys.modules, "pip._internal.models.index", None)  # import fails
    assert real_pip_default_index() == "http://127.0.0.1:9/their-default/"


def test_without_any_pip_there_is_no_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pip._internal.models.index", None)
    assert real_pip_default_index() is None
