"""govern audit on real files from vLLM, OpenStack, Home Assistant and Airflow.

The files are byte-for-byte copies from shared/corpus; see tests/data/*/PROVENANCE.md.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement

from govern.audit import AuditOptions, audit
from govern.cli import main
from govern.config import Config
from govern.exclusions.annotations import is_licence_tag
from govern.exclusions.model import Exclusion, Kind, SubKind
from govern.policy.loader import load_policy
from govern.policy.model import Severity
from govern.report import AuditReport
from govern.sources.model import SourceFormat

TODAY = date(2026, 12, 2)


def run(path: Path, policy: str = "default") -> AuditReport:
    """Audit one file (named directly) with a shipped policy."""
    return audit(
        [path],
        config=Config(),
        policy=load_policy(policy),
        options=AuditOptions(today=TODAY),
        cwd=path.parent,
    )


def by_package(report: AuditReport, package: str) -> list[Exclusion]:
    return [e for e in report.exclusions if e.package == package]


def test_vllm_kv_connectors_cupy_is_one_not_equal_with_its_reason(data: Path) -> None:
    report = run(data / "vllm" / "requirements" / "kv_connectors.txt")
    cupy = by_package(report, "cupy-cuda13x")
    assert len(cupy) == 1
    (exc,) = cupy
    assert exc.kind is Kind.NOT_EQUAL
    assert exc.clause == "!=14.1.0"
    assert exc.bad_versions == ("14.1.0",)
    assert exc.line == 4
    assert exc.annotation.reason is not None
    assert "14.1.1 fixes the root cause" in exc.annotation.reason


def test_vllm_after_pr43530_is_one_cap_verified_for_runtime_images(data: Path) -> None:
    report = run(data / "vllm" / "history" / "kv_connectors.txt@pr43530-reconstructed")
    (exc,) = by_package(report, "cupy-cuda13x")
    assert exc.kind is Kind.CAP
    assert exc.clause == "<14.1.0"
    assert exc.annotation.reason is not None
    assert "verified for runtime images" in exc.annotation.reason
    # The reason names the bad release; the cap keeps it out, so it is known-bad.
    assert exc.bad_versions == ("14.1.0",)


def test_vllm_before_cupy_has_no_cupy(data: Path) -> None:
    report = run(data / "vllm" / "history" / "kv_connectors.txt@4742f9e6")
    assert by_package(report, "cupy-cuda13x") == []


def _count_not_equal_clauses(path: Path) -> int:
    """Count != clauses with packaging alone, independently of govern's reader."""
    count = 0
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        count += sum(1 for spec in requirement.specifier if spec.operator == "!=")
    return count


def test_openstack_every_not_equal_clause_is_a_record(data: Path) -> None:
    path = data / "openstack" / "global-requirements.txt"
    report = run(path)
    not_equal = [e for e in report.exclusions if e.kind is Kind.NOT_EQUAL]
    expected = _count_not_equal_clauses(path)
    assert expected > 150  # the file really is full of them
    assert len(not_equal) == expected
    assert not [f for f in report.findings if f.rule == "parse-error"]


def test_openstack_note_blocks_are_attached(data: Path) -> None:
    report = run(data / "openstack" / "global-requirements.txt")
    (serialization,) = by_package(report, "oslo-serialization")
    assert serialization.annotation.reason is not None
    assert serialization.annotation.reason.startswith("NOTE(mriedem):")
    assert [str(link) for link in serialization.annotation.links] == ["bug 1593641"]
    utils = by_package(report, "oslo-utils")
    assert len(utils) == 3
    assert all("bug 1812922" in (e.annotation.reason or "") for e in utils)
    gabbi = by_package(report, "gabbi")
    assert "https://github.com/cdent/gabbi/issues/309" in [
        str(x) for x in gabbi[0].annotation.links
    ]
    # The NOTE(anilvenkata) block explains Yappi only, not the lines after it.
    (zeroconf,) = [s for s in report.sources[0].entries if s.name == "zeroconf"]
    assert zeroconf.requirement is not None
    assert by_package(report, "yappi")[0].annotation.reason is not None


def test_openstack_licence_tags_are_never_reasons(data: Path) -> None:
    report = run(data / "openstack" / "global-requirements.txt")
    for exc in report.exclusions:
        reason = exc.annotation.reason or ""
        for tag in ("Apache-2.0", "MIT", "BSD", "LGPL", "PSF"):
            assert not reason.endswith(tag), (exc.package, reason)
    # Packages whose only comment is a licence tag have no reason at all.
    (alembic, _) = by_package(report, "alembic")
    assert alembic.annotation.reason is None
    # The one comment group above boto3 covers the two identical caps below it.
    for name in ("boto3", "botocore"):
        (cap,) = by_package(report, name)
        assert cap.kind is Kind.CAP
        assert "glance/+bug/2121144" in (cap.annotation.reason or "")
    (s3transfer,) = by_package(report, "s3transfer")
    assert s3transfer.annotation.reason == "indirect from boto3/botocore"


def test_licence_tag_detection_on_every_openstack_inline_comment(data: Path) -> None:
    text = (data / "openstack" / "global-requirements.txt").read_text(encoding="utf-8")
    inline = [
        line.split("  #", 1)[1].strip()
        for line in text.splitlines()
        if "  #" in line and not line.startswith("#")
    ]
    assert len(inline) > 300
    not_tags = [c for c in inline if not is_licence_tag(c)]
    assert not_tags == []
    assert not is_licence_tag("Required for disaggregated prefill")
    assert not is_licence_tag("do-not-merge: NIXL RC validation")


def test_home_assistant_bans_and_group_reasons(data: Path) -> None:
    report = run(data / "home-assistant" / "homeassistant__package_constraints.txt")
    bans = [e for e in report.exclusions if e.kind is Kind.BAN]
    assert sorted(e.package for e in bans) == sorted(
        [
            "pycrypto",
            "cchardet",
            "enum34",
            "typing",
            "uuid",
            "pysnmplib",
            "get-mac",
            "poetry",
        ]
    )
    assert all(e.clause == "==1000000000.0.0" for e in bans)
    assert {f.package for f in report.findings if f.rule == "ban"} == {e.package for e in bans}
    # One comment covers a group of lines below it.
    for name in ("grpcio", "grpcio-status", "grpcio-reflection"):
        (pin,) = by_package(report, name)
        assert (pin.annotation.reason or "").startswith("gRPC is an implicit dependency")
    for name in ("enum34", "typing", "uuid"):
        (ban,) = by_package(report, name)
        assert ban.annotation.reason == "This overrides a built-in Python package"
    (httplib2_floor,) = [e for e in report.sources[0].entries if e.name == "httplib2"]
    assert httplib2_floor.requirement is not None
    # The generated header separated by a blank line is nobody's reason.
    (first,) = by_package(report, "aiodhcpwatcher")
    assert first.annotation.reason is None


def test_airflow_requires_python_and_sentinel(tmp_path: Path, data: Path) -> None:
    project = tmp_path / "airflow-core"
    project.mkdir()
    shutil.copy(data / "airflow" / "airflow-core__pyproject.toml", project / "pyproject.toml")
    report = audit(
        [project], config=Config(), policy=load_policy("default"), options=AuditOptions(today=TODAY)
    )
    (python,) = by_package(report, "python")
    assert python.clause == "!=3.14"
    assert python.group == "project.requires-python"
    partial = [f for f in report.findings if f.rule == "partial-version-exclusion"]
    assert [(f.package, f.line) for f in partial] == [("python", python.line)]
    assert "3.14.1 still passes" in partial[0].message
    (sentinel,) = [e for e in by_package(report, "opentelemetry-proto") if e.kind is Kind.CAP]
    assert sentinel.sub_kind is SubKind.SENTINEL
    assert sentinel.clause == "<9999"
    assert [f.rule for f in report.findings if f.exclusion == sentinel.id] == ["sentinel"]
    (aiosqlite,) = by_package(report, "aiosqlite")
    assert "https://github.com/omnilib/aiosqlite/issues/369" in [
        str(x) for x in aiosqlite.annotation.links
    ]


def test_vllm_checkout_follows_include_and_reports_inconsistent_torch(data: Path) -> None:
    report = audit(
        [data / "vllm"],
        config=Config(),
        policy=load_policy("default"),
        options=AuditOptions(today=TODAY),
    )
    assert [s.path for s in report.sources] == [
        "requirements/common.txt",
        "requirements/cuda.txt",
        "requirements/kv_connectors.txt",
        "requirements/test/cuda.in",
    ]
    cuda = next(s for s in report.sources if s.path == "requirements/cuda.txt")
    assert [i.target for i in cuda.includes] == ["common.txt"]
    assert [o.name for o in cuda.options] == ["--extra-index-url"]
    torch = [
        f for f in report.findings if f.rule == "inconsistent-exclusions" and f.package == "torch"
    ]
    assert {f.source for f in torch} == {"requirements/cuda.txt", "requirements/test/cuda.in"}
    assert "==2.13.0" in torch[0].message
    assert "==2.11.0" in torch[0].message
    assert not [f for f in report.findings if f.severity == "error"]


def test_strict_policy_on_openstack_requires_links_and_review_dates(data: Path) -> None:
    report = run(data / "openstack" / "global-requirements.txt", policy="strict")
    rules = {f.rule for f in report.findings if f.package == "boto3"}
    assert "missing-review-by" in rules
    assert "missing-link" not in rules  # the launchpad URL is a link
    assert report.failed(load_policy("strict").fail_on)


# An openstack/requirements checkout: the requirement files are named for what they
# are (global-requirements.txt, upper-constraints.txt, test-requirements.txt) and
# beside them sit templates and a MANIFEST.in that are not requirements at all.
OPENSTACK_MANIFEST = "include AUTHORS\ninclude ChangeLog\nexclude .gitignore\n"
OPENSTACK_MANIFEST += "exclude .gitreview\nglobal-exclude *.pyc\n"
OPENSTACK_TEMPLATES = {
    "MANIFEST.in": OPENSTACK_MANIFEST,
    "src/config.h.in": "/* Define to 1 if you have <foo.h>. */\n#undef HAVE_FOO_H\n",
    "src/foo.pyx.in": "{{py: types = ['int', 'float']}}\n{{for t in types}}\ncdef class X:\n",
    "setup.cfg.in": "[metadata]\nname = @NAME@\nversion = @VERSION@\n",
    "tools/release-notes.in": "Release @VERSION@\n\nThanks to everyone who helped.\nfoo>=1\n",
}


def _openstack_checkout(root: Path, data: Path) -> None:
    for name in ("global-requirements.txt", "denylist.txt"):
        shutil.copy(data / "openstack" / name, root / name)
    (root / "upper-constraints.txt").write_text(
        "alembic===1.14.1\noslo.utils===8.2.0\nboto3===1.35.99\n", encoding="utf-8"
    )
    (root / "test-requirements.txt").write_text(
        "# The order of packages is significant.\nstestr>=2.0.0  # Apache-2.0\n",
        encoding="utf-8",
    )
    for relpath, text in OPENSTACK_TEMPLATES.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text, encoding="utf-8")


def test_openstack_checkout_reads_its_requirement_files_and_not_its_templates(
    tmp_path: Path, data: Path
) -> None:
    _openstack_checkout(tmp_path, data)
    report = audit(
        [tmp_path],
        config=Config(),
        policy=load_policy("default"),
        options=AuditOptions(today=TODAY),
    )
    assert [(s.path, s.format) for s in report.sources] == [
        ("global-requirements.txt", SourceFormat.REQUIREMENTS),
        ("test-requirements.txt", SourceFormat.REQUIREMENTS),
        ("upper-constraints.txt", SourceFormat.CONSTRAINTS),
    ]
    assert [p.name for p in report.sources[2].entries if p.name] == [
        "alembic",
        "oslo-utils",
        "boto3",
    ]
    assert not [f for f in report.findings if f.rule == "parse-error"]
    # The one discovered file that is neither named for requirements nor a known
    # template, and does not read as requirements: one info finding, no storm.
    (not_read,) = [f for f in report.findings if f.source in OPENSTACK_TEMPLATES]
    assert (not_read.rule, not_read.source, not_read.severity, not_read.line) == (
        "not-a-requirements-file",
        "tools/release-notes.in",
        Severity.INFO,
        1,
    )
    assert "2 of its 3 lines are neither requirements nor pip options" in not_read.message
    assert not report.failed(load_policy("default").fail_on)


def test_openstack_checkout_exit_code_and_output(
    tmp_path: Path,
    data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _openstack_checkout(tmp_path, data)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["audit", str(tmp_path), "--as-of", TODAY.isoformat(), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert exited.value.code == 0
    assert [s["path"] for s in out["sources"]] == [
        "global-requirements.txt",
        "test-requirements.txt",
        "upper-constraints.txt",
    ]
    assert not [f for f in out["findings"] if f["severity"] == "error"]
    assert [(f["source"], f["rule"]) for f in out["findings"] if f["source"].endswith(".in")] == [
        ("tools/release-notes.in", "not-a-requirements-file")
    ]
    # Named on the command line, a template is read whatever its name: pip would too.
    with pytest.raises(SystemExit) as exited:
        main(["audit", "MANIFEST.in", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert exited.value.code == 1
    assert [f["rule"] for f in out["findings"]] == ["parse-error"] * 5
