"""``govern dashboard`` and ``govern report`` over a seeded store (``govern serve`` runs
for real in ``tests/web/test_browser.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli as _run
from webseed import seed

from govern.store.db import Store
from govern.web.report import md


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'govern.db'}"
    with Store(url) as store:
        seed(store, tmp_path, generated=40)
    return url


def test_dashboard_in_the_terminal(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["dashboard", "--db", db], capsys)
    assert code == 0
    assert "cupy-cuda13x <14.1.0 -> 14.1.1 (passed on cuda13, installed 14.1.1)" in out
    assert "+ cupy-cuda13x != 14.1.0" in out
    code, out, _ = _run(["dashboard", "--db", db, "--format", "json"], capsys)
    document = json.loads(out)
    assert document["schema"] == "govern.dashboard/1"
    assert document["pending_total"] >= 1


def test_report_as_markdown_and_html(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["report", "--db", db, "--format", "markdown"], capsys)
    assert code == 0
    assert out.startswith("## Pending relaxations")
    assert "+ cupy\\-cuda13x \\!= 14.1.0" in out
    target = tmp_path / "report.html"
    code, _, err = _run(["report", "--db", db, "--format", "html", "-o", str(target)], capsys)
    assert code == 0, err
    page = target.read_text(encoding="utf-8")
    assert "cupy-cuda13x" in page
    assert "<script" not in page.lower()
    assert 'a[aria-current="page"]' in page  # the inlined stylesheet is CSS, not escaped text


def test_markdown_cells_cannot_inject_markup() -> None:
    assert md("<script>x</script> | [a](javascript:1) *b*") == (
        "&lt;script&gt;x&lt;/script&gt; \\| \\[a\\]\\(javascript:1\\) \\*b\\*"
    )
    assert md("line\nbreak") == "line break"


def test_serve_starts_without_ci_when_a_provider_token_is_missing(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    from govern.cli.web import _state
    from govern.config import load_config

    monkeypatch.delenv("GOVERN_TEST_GH_TOKEN", raising=False)
    (tmp_path / ".govern.toml").write_text(
        '[ci.gh]\nprovider = "github-actions"\nrepository = "example/app"\n'
        'workflow = "verify.yml"\ntoken-env = "GOVERN_TEST_GH_TOKEN"\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path)
    with Store(db) as store:
        state = _state(store, config, httpx.AsyncClient())
    assert state.providers is None
    err = capsys.readouterr().err
    assert "CI providers are off" in err
    assert "GOVERN_TEST_GH_TOKEN" in err
