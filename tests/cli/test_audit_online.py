"""``govern audit --online``: the index rules, against a CuPy-like project on a local index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.index import FaultServer, IndexFile, Reply, StaticIndex, json_page
from govern.cli import main


def _wheel(version: str, platform: str, day: str, yanked: str | bool = False) -> IndexFile:
    name = f"cupy_cuda13x-{version}-cp312-cp312-{platform}.whl"
    return IndexFile(name, upload_time=f"{day}T12:00:00Z", yanked=yanked)


FILES = [
    _wheel("14.0.1", "manylinux_2_28_x86_64", "2026-04-01"),
    _wheel("14.1.0", "manylinux_2_28_x86_64", "2026-05-23"),
    _wheel("14.1.1", "manylinux_2_28_x86_64", "2026-06-01"),
    _wheel("14.1.2", "manylinux_2_28_x86_64", "2026-06-10", yanked="broken build"),
    _wheel("14.1.3", "manylinux_2_28_aarch64", "2026-06-20"),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "requirements").mkdir(parents=True)
    lines = {
        "cap.txt": "cupy-cuda13x<14.1.0  # CuPy 14.1.0 imports pytest\n",
        "typo.txt": "cupy-cuda13x!=14.1.9  # the broken one\n",
        "yanked.txt": "cupy-cuda13x!=14.1.2  # broken build\n",
    }
    for name, text in lines.items():
        (root / "requirements" / name).write_text(text, encoding="utf-8")
    (root / ".govern.toml").write_text(
        '[profiles.cuda13]\npython = "3.12"\nplatforms = ["manylinux_2_28_x86_64"]\n',
        encoding="utf-8",
    )
    return root


def _audit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def _findings(out: str) -> dict[tuple[str, str], dict[str, object]]:
    return {(f["rule"], f["source"]): f for f in json.loads(out)["findings"]}


def test_the_index_rules(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with StaticIndex(tmp_path / "index", {"cupy-cuda13x": FILES}) as index:
        code, out, err = _audit(
            [
                "audit",
                str(repo),
                "--online",
                "--index-url",
                index.url,
                "-f",
                "json",
                "--fail-on",
                "never",
            ],
            capsys,
        )
        assert index.count(index.path("cupy-cuda13x")) == 1  # once, for three exclusions
    assert code == 0, err
    found = _findings(out)
    typo = found[("unknown-version", "requirements/typo.txt")]
    assert typo["message"] == "cupy-cuda13x 14.1.9 was never published"
    assert typo["hint"] == "did you mean 14.1.3?"  # the closest in its series
    yanked = found[("yanked-excluded", "requirements/yanked.txt")]
    assert "broken build" in str(yanked["message"])
    fix = found[("fix-available", "requirements/cap.txt")]
    assert fix["message"] == "cupy-cuda13x 14.1.1 is a candidate for <14.1.0 on profile cuda13"
    stale = found[("stale-cap", "requirements/cap.txt")]
    assert "releases above the cap since 2026-06-01" in str(stale["message"])
    assert ("unknown-version", "requirements/cap.txt") not in found  # a cap's bound may be new


def test_an_unreachable_index_is_info_not_a_verdict(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(500, b"down"))
        code, out, err = _audit(
            ["audit", str(repo), "--online", "--index-url", faults.url, "-f", "json"], capsys
        )
    assert code == 0, err
    rules = {f["rule"] for f in json.loads(out)["findings"]}
    assert "index-unreachable" in rules
    assert rules.isdisjoint({"unknown-version", "yanked-excluded", "fix-available", "stale-cap"})


def test_index_url_without_online_is_a_usage_error(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _audit(["audit", str(repo), "--index-url", "https://x.test/simple"], capsys)
    assert code == 2
    assert "--index-url is for --online" in err


def test_offline_audit_still_imports_no_http(repo: Path) -> None:
    probe = (
        "import sys\n"
        "from govern.cli import main\n"
        "try:\n"
        f"    main(['audit', {str(repo)!r}, '--format', 'json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'httpx', 'sqlalchemy'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("[]")


def test_a_version_past_the_integer_string_limit_on_the_index_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 5,000 digits: int() refuses it (sys.get_int_max_str_digits() is 4,300), which
    # packaging raises as a plain ValueError, not InvalidVersion: audit --online crashed.
    huge = "1" * 5000
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text("demo!=1.0.0\n", encoding="utf-8")
    files = [f"demo-{huge}.tar.gz", f"demo-{huge}-py3-none-any.whl", "demo-1.0.0.tar.gz"]
    with FaultServer() as faults:
        faults.script("demo", Reply(200, json_page("demo", files, versions=[huge, "1.0.0"])))
        code, out, err = _audit(
            ["audit", str(root), "--online", "--index-url", faults.url, "-f", "json"], capsys
        )
    assert code == 0, err
    rules = {f["rule"] for f in json.loads(out)["findings"]}
    assert "index-unreachable" not in rules  # the page was read
    assert "unknown-version" not in rules  # 1.0.0 is published: the page's other files count
    assert "internal error" not in err
