"""Policies load, validate and change what the rules report."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from govern.audit import AuditOptions, audit
from govern.config import Config
from govern.errors import PolicyError
from govern.policy.loader import load_policy, policies_dir
from govern.policy.model import Finding, Severity
from govern.policy.rules import RULES

TODAY = date(2026, 12, 2)


def findings(
    tmp_path: Path,
    text: str,
    policy: str = "default",
    name: str = "requirements.txt",
    allow_outside_root: bool = False,
) -> list[Finding]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    report = audit(
        [tmp_path],
        config=Config(),
        policy=load_policy(policy, base=tmp_path),
        options=AuditOptions(today=TODAY, allow_outside_root=allow_outside_root),
    )
    return list(report.findings)


def rules_of(found: list[Finding]) -> list[str]:
    return [f.rule for f in found]


def test_shipped_policies_cover_every_rule() -> None:
    for name in ("default", "strict", "library"):
        policy = load_policy(name)
        assert set(policy.rules) == set(RULES)
        assert policy.name == name
    assert {p.stem for p in policies_dir().glob("*.toml")} == {"default", "strict", "library"}


def test_missing_reason_by_kind(tmp_path: Path) -> None:
    found = findings(tmp_path, "a!=1.0.0\nb<2\nc==1.0\n")
    assert [(f.rule, f.package) for f in found] == [
        ("missing-reason", "a"),
        ("missing-reason", "b"),
    ]
    assert all(f.severity is Severity.WARNING for f in found)


def test_strict_requires_link_and_review_date_on_caps(tmp_path: Path) -> None:
    found = findings(tmp_path, "# broken by 2.0\nb<2\n", policy="strict")
    assert sorted(rules_of(found)) == ["missing-link", "missing-review-by"]
    assert all(f.severity is Severity.ERROR for f in found)
    ok = findings(
        tmp_path,
        "# broken by 2.0, see o/r#1\nb<2  # govern: review-by=2027-06-01\n",
        policy="strict",
    )
    assert ok == []


def test_review_overdue(tmp_path: Path) -> None:
    found = findings(tmp_path, "# 2.0 broke us.\nb<2  # govern: review-by=2026-11-30\n")
    (overdue,) = found
    assert overdue.rule == "review-overdue"
    assert "2026-11-30 (2 days ago)" in overdue.message


def test_partial_version_exclusion(tmp_path: Path) -> None:
    found = findings(
        tmp_path, "# 3.14 broke us.\nfoo!=3.14\n# 3.14.0 broke us.\nbar!=3.14.0,!=2.*\n"
    )
    (partial,) = found
    assert partial.rule == "partial-version-exclusion"
    assert partial.package == "foo"
    assert partial.hint is not None
    assert "!=3.14.*" in partial.hint


@pytest.mark.parametrize(
    ("requirement", "redundant"),
    [
        ("foo<2,!=3.0", "!=3.0"),
        ("foo>=1.5,!=1.0", "!=1.0"),
        ("foo<2,<3", "<3"),
        ("foo==1.0,<2", "<2"),
        ("foo<2,!=1.5", None),
        ("foo~=1.4,<1.5", None),  # ~=1.4 admits 1.9; <1.5 is the real cap
        ("foo~=1.4.2,<1.6", "<1.6"),
    ],
)
def test_redundant_exclusion(tmp_path: Path, requirement: str, redundant: str | None) -> None:
    found = [
        f
        for f in findings(tmp_path, f"# reason\n{requirement}\n")
        if f.rule == "redundant-exclusion"
    ]
    if redundant is None:
        assert found == []
    else:
        (finding,) = found
        assert finding.message.startswith(f"foo {redundant} is already excluded")


def test_cap_in_library(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "lib"\nversion = "1"\nrequires-python = ">=3.10,<4"\n'
        'dependencies = [\n  # capped: 2.0 broke us\n  "httpx<2",\n  "attrs!=25.2.0",\n]\n'
        '[project.optional-dependencies]\nfast = ["orjson<4"]\n'
        '[dependency-groups]\ndev = ["pytest<9"]\n'
    )
    found = [
        f
        for f in findings(tmp_path, pyproject, policy="library", name="pyproject.toml")
        if f.rule == "cap-in-library"
    ]
    assert sorted(f.package or "" for f in found) == ["httpx", "orjson", "python"]
    assert all(f.severity is Severity.ERROR for f in found)
    assert not [
        f
        for f in findings(tmp_path, pyproject, name="pyproject.toml")
        if f.rule == "cap-in-library"
    ]


def test_inline_suppression(tmp_path: Path) -> None:
    assert findings(tmp_path, "foo<2  # govern: ignore=missing-reason\n") == []
    assert findings(tmp_path, "pkg=1.0  # govern: ignore=parse-error\n") == []
    assert findings(tmp_path, "# govern: ignore\nfoo!=3.1\n") == []
    assert rules_of(findings(tmp_path, "foo!=3.1  # govern: ignore=missing-reason\n")) == [
        "partial-version-exclusion"
    ]


def test_includes_cycles_missing_and_outside_root(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text(
        "-r requirements-dev.txt\n-r gone.txt\n-r ../outside.txt\n", encoding="utf-8"
    )
    (project / "requirements-dev.txt").write_text("-r requirements.txt\n", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("x<1\n", encoding="utf-8")
    report = audit(
        [project], config=Config(), policy=load_policy("default"), options=AuditOptions(today=TODAY)
    )
    got = {(f.rule, f.source, f.line) for f in report.findings}
    assert ("include-not-found", "requirements.txt", 2) in got
    assert ("include-outside-root", "requirements.txt", 3) in got
    cycles = [f for f in report.findings if f.rule == "include-cycle"]
    assert len(cycles) == 1
    assert "requirements-dev.txt -> requirements.txt" in cycles[0].message
    allowed = audit(
        [project],
        config=Config(),
        policy=load_policy("default"),
        options=AuditOptions(today=TODAY, allow_outside_root=True),
    )
    assert "x" in {e.package for e in allowed.exclusions}


def test_custom_policy_extends_and_overrides(tmp_path: Path) -> None:
    (tmp_path / "team.toml").write_text(
        'name = "team"\nextends = "strict"\nfail-on = "warning"\n'
        '[rules]\nmissing-link = "off"\nsentinel = { severity = "warning" }\n',
        encoding="utf-8",
    )
    policy = load_policy("team.toml", base=tmp_path)
    assert policy.severity("missing-link") is Severity.OFF
    assert policy.severity("missing-review-by") is Severity.ERROR  # from strict
    assert policy.severity("sentinel") is Severity.WARNING
    assert policy.fail_on is Severity.WARNING


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[rules]\nmissing-reasons = "error"\n', "Did you mean 'missing-reason'?"),
        ('[rules]\nmissing-reason = "loud"\n', "not one of error, warning, info, off"),
        ("[rules]\nmissing-reason = 3\n", "must be a severity or a table"),
        ('colour = "red"\n', "Policy keys are"),
        ("[rules\n", "Fix the TOML syntax."),
        ('extends = "p.toml"\n', "extends itself"),
        (
            '[rules]\nmissing-reason = { severity = "error", kinds = ["caps"] }\n',
            "unknown value(s) caps",
        ),
        ('[rules]\nban = { severity = "info", kinds = ["cap"] }\n', "has no option 'kinds'"),
        (
            '[rules]\nmissing-link = { severity = "info", kinds = "cap" }\n',
            "must be a list of strings",
        ),
    ],
)
def test_invalid_policies(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "p.toml").write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy("p.toml", base=tmp_path)
    assert message in f"{caught.value.message} {caught.value.tip}"


def test_unknown_policy_name() -> None:
    with pytest.raises(PolicyError, match="neither a shipped policy nor a file"):
        load_policy("lenient")


def test_include_of_a_directory_or_a_symlink_loop_is_a_finding(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "loop.txt").symlink_to(tmp_path / "loop.txt")
    found = findings(tmp_path, "-r sub\n-c loop.txt\n")
    messages = {(f.rule, f.line): f.message for f in found}
    assert messages[("include-not-found", 1)].startswith("sub is a directory")
    assert messages[("include-not-found", 2)].startswith("loop.txt is a broken or looping symlink")


def test_a_block_above_can_suppress_an_entry_rule(tmp_path: Path) -> None:
    assert rules_of(findings(tmp_path, "-e .\n")) == ["unconstrainable"]
    assert findings(tmp_path, "# govern: ignore=unconstrainable\n-e .\n") == []


def _inconsistent(root: Path) -> list[str]:
    report = audit(
        [root], config=Config(), policy=load_policy("default"), options=AuditOptions(TODAY)
    )
    return [f.source for f in report.findings if f.rule == "inconsistent-exclusions"]


def test_a_lock_inside_the_ranges_is_not_inconsistent(tmp_path: Path) -> None:
    # OpenStack's shape: ranges in global-requirements.txt, one pin each in upper-constraints.txt.
    (tmp_path / "global-requirements.txt").write_text(
        "# 0.36.0 broke monkey-patching\neventlet!=0.36.0,>=0.30\n", encoding="utf-8"
    )
    (tmp_path / "upper-constraints.txt").write_text("eventlet===0.36.1\n", encoding="utf-8")
    assert _inconsistent(tmp_path) == []


def test_a_lock_a_range_keeps_out_or_two_locks_that_differ_are_inconsistent(
    tmp_path: Path,
) -> None:
    (tmp_path / "global-requirements.txt").write_text(
        "# 0.36.0 broke monkey-patching\neventlet!=0.36.0\n", encoding="utf-8"
    )
    (tmp_path / "upper-constraints.txt").write_text("eventlet===0.36.0\n", encoding="utf-8")
    assert sorted(_inconsistent(tmp_path)) == ["global-requirements.txt", "upper-constraints.txt"]
    (tmp_path / "upper-constraints.txt").write_text("eventlet===0.36.1\n", encoding="utf-8")
    (tmp_path / "test-constraints.txt").write_text("eventlet==0.35.2\n", encoding="utf-8")
    assert len(_inconsistent(tmp_path)) == 3
