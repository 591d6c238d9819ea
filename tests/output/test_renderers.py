"""Tests for the audit renderers: JSON contract, SARIF, GitHub commands, Markdown, human."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from govern.exclusions.model import Annotation, Exclusion, Kind, Link, SubKind, exclusion_key
from govern.output import (
    OutputFormat,
    github,
    human,
    json_report,
    markdown,
    render,
    sarif,
    summary_line,
    use_color,
)
from govern.policy.model import Finding, Policy, RuleSettings, Severity
from govern.policy.rules import RULES
from govern.report import AuditReport
from govern.sources.model import Entry, Source, SourceFormat

BASE = "requirements/base.txt"
PYPROJECT = "pyproject.toml"
LONG_REASON = (
    "NumPy 2 changed the C ABI and every compiled extension in the runtime image has to be "
    "rebuilt before we can move; tracked upstream and in our platform board"
)
ESCAPE_MESSAGE = "review-by 2024-01-01 passed: 100% overdue, ask\nthe owner"


def _entry(line: int, text: str) -> Entry:
    requirement = Requirement(text)
    return Entry(line=line, column=1, text=text, requirement=requirement, name=requirement.name)


def _exclusion(
    source: str,
    line: int,
    column: int,
    package: str,
    requirement: str,
    clause: str,
    kind: Kind,
    sub_kind: SubKind,
    annotation: Annotation,
    bad_versions: tuple[str, ...] = (),
    marker: str | None = None,
    group: str | None = None,
) -> Exclusion:
    operator = clause.rstrip("0123456789.*")
    return Exclusion(
        id=exclusion_key("govern-dev/app", source, package, marker, clause),
        repository="govern-dev/app",
        source=source,
        line=line,
        column=column,
        package=package,
        requirement=requirement,
        marker=marker,
        clause=clause,
        operator=operator,
        version=clause[len(operator) :],
        kind=kind,
        sub_kind=sub_kind,
        group=group,
        annotation=annotation,
        bad_versions=bad_versions,
    )


CUPY = _exclusion(
    BASE,
    4,
    1,
    "cupy-cuda13x",
    "cupy-cuda13x != 14.1.0",
    "!=14.1.0",
    Kind.NOT_EQUAL,
    SubKind.EXACT,
    Annotation(
        reason="CuPy 14.1.0 imports pytest at import time",
        links=(
            Link("github", "cupy/cupy#9001", "https://github.com/cupy/cupy/issues/9001"),
            Link("issue", "#42"),
        ),
        bad_versions=("14.1.0",),
    ),
    bad_versions=("14.1.0",),
)
NUMPY = _exclusion(
    BASE,
    6,
    1,
    "numpy",
    "numpy<2",
    "<2",
    Kind.CAP,
    SubKind.EXACT,
    Annotation(
        reason=LONG_REASON,
        owner="@alice",
        review_by=date(2024, 1, 1),
        verify="python -c 'import numpy'",
        profiles=("cuda-13",),
    ),
    bad_versions=("2.0.0",),
)
TORCH = _exclusion(
    BASE, 7, 1, "torch", "torch==2.4.0", "==2.4.0", Kind.PIN, SubKind.EXACT, Annotation()
)
HTTPX = _exclusion(
    PYPROJECT,
    12,
    6,
    "httpx",
    "httpx<9999",
    "<9999",
    Kind.CAP,
    SubKind.SENTINEL,
    Annotation(reason="no real ceiling \x1b[31mred\x1b[0m"),
    group="project.dependencies",
)
LEFTPAD = _exclusion(
    PYPROJECT,
    13,
    1,
    "leftpad",
    "leftpad==1000000000.0.0; python_version < '3.12'",
    "==1000000000.0.0",
    Kind.BAN,
    SubKind.IMPOSSIBLE,
    Annotation(reason="forbidden | do not use"),
    marker='python_version < "3.12"',
    group="project.dependencies",
)

MISSING_REASON = Finding(
    rule="missing-reason",
    severity=Severity.ERROR,
    source=BASE,
    line=7,
    message="torch==2.4.0 excludes versions without a reason",
    package="torch",
    exclusion=TORCH.id,
    column=6,
    excerpt="torch==2.4.0",
    hint="add a comment above the line saying why",
)
OVERDUE = Finding(
    rule="review-overdue",
    severity=Severity.WARNING,
    source=BASE,
    line=6,
    message=ESCAPE_MESSAGE,
    package="numpy",
    exclusion=NUMPY.id,
)
SENTINEL = Finding(
    rule="sentinel-cap",
    severity=Severity.INFO,
    source=PYPROJECT,
    line=12,
    message="httpx<9999 is a sentinel cap, not a ceiling; ping @bob | maybe",
    package="httpx",
    exclusion=HTTPX.id,
    column=6,
)
CROSS_FILE = Finding(
    rule="conflicting-constraint",
    severity=Severity.WARNING,
    source="constraints/ci.txt",
    line=3,
    message="numpy<1.26 here conflicts with numpy<2 in requirements/base.txt",
    package="numpy",
    hint="keep one constraint",
)

POLICY = Policy(
    name="default",
    description="the default policy",
    rules={
        "missing-reason": RuleSettings(Severity.ERROR),
        "review-overdue": RuleSettings(Severity.WARNING),
        "sentinel-cap": RuleSettings(Severity.INFO),
    },
)


def make_report(
    findings: tuple[Finding, ...] = (MISSING_REASON, OVERDUE, SENTINEL, CROSS_FILE),
    root: Path = Path("/repo"),
) -> AuditReport:
    """A report over two sources with exclusions of every kind."""
    base = Source(
        path=BASE,
        file=root / BASE,
        format=SourceFormat.REQUIREMENTS,
        entries=(
            _entry(4, "cupy-cuda13x != 14.1.0"),
            _entry(6, "numpy<2"),
            _entry(7, "torch==2.4.0"),
        ),
    )
    pyproject = Source(
        path=PYPROJECT,
        file=root / PYPROJECT,
        format=SourceFormat.PYPROJECT,
        entries=(_entry(12, "httpx<9999"), _entry(13, "leftpad==1000000000.0.0")),
    )
    return AuditReport(
        root=root,
        sources=(base, pyproject),
        exclusions=(CUPY, NUMPY, TORCH, HTTPX, LEFTPAD),
        findings=findings,
        policy=POLICY,
    )


@pytest.fixture
def report() -> AuditReport:
    """The standard report."""
    return make_report()


# --- JSON -----------------------------------------------------------------------------

EXCLUSION_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "package": (str,),
    "source": (str,),
    "line": (int,),
    "requirement": (str,),
    "marker": (str, type(None)),
    "clause": (str,),
    "kind": (str,),
    "reason": (str, type(None)),
    "links": (list,),
    "bad_versions": (list,),
    "owner": (str, type(None)),
    "review_by": (str, type(None)),
}
FINDING_FIELDS: dict[str, tuple[type, ...]] = {
    "rule": (str,),
    "severity": (str,),
    "source": (str,),
    "line": (int,),
    "package": (str, type(None)),
    "exclusion": (str, type(None)),
    "message": (str,),
}


def _json(report: AuditReport) -> Any:
    return json.loads(json_report.render(report))


def test_json_contract_fields_and_types(report: AuditReport) -> None:
    doc = _json(report)
    assert doc["schema"] == "govern.audit/1"
    assert doc["policy"] == "default"
    assert isinstance(doc["govern_version"], str)
    assert doc["sources"] == [
        {"path": BASE, "format": "requirements", "requirements": 3},
        {"path": PYPROJECT, "format": "pyproject", "requirements": 2},
    ]
    assert len(doc["exclusions"]) == 5
    for item in doc["exclusions"]:
        for name, types_ in EXCLUSION_FIELDS.items():
            assert isinstance(item[name], types_), (name, item[name])
        assert item["kind"] in {"not-equal", "cap", "pin", "ban"}
        assert all(isinstance(link, str) for link in item["links"])
        assert all(isinstance(version, str) for version in item["bad_versions"])
    assert len(doc["findings"]) == 4
    for item in doc["findings"]:
        for name, types_ in FINDING_FIELDS.items():
            assert isinstance(item[name], types_), (name, item[name])
        assert item["severity"] in {"error", "warning", "info"}
    assert doc["summary"] == {
        "sources": 2,
        "requirements": 5,
        "exclusions": 5,
        "findings": {"error": 1, "warning": 2, "info": 1},
    }


def test_json_exclusion_values(report: AuditReport) -> None:
    cupy, numpy, torch, httpx, leftpad = _json(report)["exclusions"]
    assert cupy == {
        "id": CUPY.id,
        "package": "cupy-cuda13x",
        "source": BASE,
        "line": 4,
        "requirement": "cupy-cuda13x != 14.1.0",
        "marker": None,
        "clause": "!=14.1.0",
        "kind": "not-equal",
        "reason": "CuPy 14.1.0 imports pytest at import time",
        "links": ["https://github.com/cupy/cupy/issues/9001", "#42"],
        "bad_versions": ["14.1.0"],
        "owner": None,
        "review_by": None,
        "sub_kind": "exact",
        "column": 1,
        "group": None,
        "verify": None,
        "profiles": [],
    }
    assert numpy["review_by"] == "2024-01-01"
    assert numpy["owner"] == "@alice"
    assert numpy["verify"] == "python -c 'import numpy'"
    assert numpy["profiles"] == ["cuda-13"]
    assert torch["reason"] is None
    assert httpx["sub_kind"] == "sentinel"
    assert httpx["group"] == "project.dependencies"
    assert leftpad["kind"] == "ban"
    assert leftpad["marker"] == 'python_version < "3.12"'


def test_json_finding_values(report: AuditReport) -> None:
    first, second, _, cross = _json(report)["findings"]
    assert first == {
        "rule": "missing-reason",
        "severity": "error",
        "source": BASE,
        "line": 7,
        "package": "torch",
        "exclusion": TORCH.id,
        "message": "torch==2.4.0 excludes versions without a reason",
        "column": 6,
        "hint": "add a comment above the line saying why",
    }
    assert second["message"] == ESCAPE_MESSAGE
    assert second["column"] is None
    assert cross["exclusion"] is None


def test_json_summary_has_every_severity_when_empty() -> None:
    doc = _json(make_report(findings=()))
    assert doc["summary"]["findings"] == {"error": 0, "warning": 0, "info": 0}
    assert doc["findings"] == []


def test_json_is_deterministic_and_one_record_per_line(report: AuditReport) -> None:
    text = json_report.render(report)
    assert text == json_report.render(report)
    assert text.endswith("}\n")
    assert text.startswith('{\n"schema": "govern.audit/1",\n')
    assert json.loads(text) == json_report.to_document(report)
    lines = text.splitlines()
    for exclusion in report.exclusions:
        (line,) = [x for x in lines if f'"id": "{exclusion.id}"' in x]
        assert json.loads(line.rstrip(","))["id"] == exclusion.id


# --- SARIF ----------------------------------------------------------------------------


def test_sarif_structure(report: AuditReport) -> None:
    log = json.loads(sarif.render(report))
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "govern"
    assert isinstance(driver["version"], str)
    assert "informationUri" not in driver  # optional in SARIF; govern has no home page yet
    rule_ids = [rule["id"] for rule in driver["rules"]]
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in {"error", "warning", "note", "none"}
    results = run["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note", "warning"]
    for result in results:
        assert result["ruleId"] in rule_ids
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert isinstance(location["region"]["startLine"], int)
    assert set(rule_ids) == {f.rule for f in report.findings}


def test_sarif_result_details(report: AuditReport) -> None:
    run = json.loads(sarif.render(report))["runs"][0]
    missing, overdue, _, cross = run["results"]
    assert missing["message"]["text"] == (
        "torch==2.4.0 excludes versions without a reason Hint: add a comment above the line "
        "saying why"
    )
    assert missing["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": BASE, "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 7, "startColumn": 6},
    }
    assert missing["partialFingerprints"] == {"governExclusion/v1": TORCH.id}
    assert overdue["locations"][0]["physicalLocation"]["region"] == {"startLine": 6}
    assert "partialFingerprints" not in cross
    assert cross["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "constraints/ci.txt"
    )
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///repo/"}}


def test_sarif_relative_root_and_quoted_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "govern.policy.rules", None)
    finding = Finding("parse-error", Severity.ERROR, "req dir/a b.txt", 1, "cannot parse")
    run = json.loads(sarif.render(make_report((finding,), root=Path("."))))["runs"][0]
    assert "originalUriBaseIds" not in run
    uri = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "req%20dir/a%20b.txt"
    # parse-error is not in the policy: the finding's own severity gives the default level.
    assert run["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] == "error"


def test_sarif_describes_rules_from_the_catalogue(report: AuditReport) -> None:
    rules = json.loads(sarif.render(report))["runs"][0]["tool"]["driver"]["rules"]
    described = {rule["id"]: rule for rule in rules}
    catalogued = RULES["missing-reason"]
    assert described["missing-reason"] == {
        "id": "missing-reason",
        "shortDescription": {"text": catalogued.summary},
        "defaultConfiguration": {"level": "warning"},
        "help": {"text": catalogued.fix},
    }
    # Ids the catalogue does not know describe themselves, at this run's level.
    assert described["sentinel-cap"]["shortDescription"]["text"] == "sentinel-cap"
    assert described["sentinel-cap"]["defaultConfiguration"]["level"] == "note"


# --- GitHub ---------------------------------------------------------------------------


def test_github_commands_exact(report: AuditReport) -> None:
    lines = github.render(report).splitlines()
    assert lines == [
        "::error file=requirements/base.txt,line=7,col=6,title=govern missing-reason::"
        "torch==2.4.0 excludes versions without a reason%0AHint: add a comment above the line "
        "saying why",
        "::warning file=requirements/base.txt,line=6,title=govern review-overdue::"
        "review-by 2024-01-01 passed: 100%25 overdue, ask%0Athe owner",
        "::notice file=pyproject.toml,line=12,col=6,title=govern sentinel-cap::"
        "httpx<9999 is a sentinel cap, not a ceiling; ping @bob | maybe",
        "::warning file=constraints/ci.txt,line=3,title=govern conflicting-constraint::"
        "numpy<1.26 here conflicts with numpy<2 in requirements/base.txt%0AHint: keep one "
        "constraint",
        "govern: 2 sources, 5 requirements, 5 exclusions; 1 error, 2 warnings, 1 info",
    ]


def test_github_escaping() -> None:
    assert github.escape_data("a%b\r\nc: d, e") == "a%25b%0D%0Ac: d, e"
    assert github.escape_property("a,b:c%.txt\n") == "a%2Cb%3Ac%25.txt%0A"
    finding = Finding("odd-path", Severity.INFO, "dir:x,y/r%.txt", 2, "m")
    assert github.command(finding) == (
        "::notice file=dir%3Ax%2Cy/r%25.txt,line=2,title=govern odd-path::m"
    )


# --- Markdown -------------------------------------------------------------------------


def test_markdown_tables_and_escaping(report: AuditReport) -> None:
    text = markdown.render(report)
    assert text.startswith(markdown.MARKER + "\n## govern audit\n")
    assert "**2 sources, 5 requirements, 5 exclusions; 1 error, 2 warnings, 1 info**" in text
    assert "| Severity | Rule | Location | Package | Message |" in text
    assert (
        "| info | `sentinel-cap` | `pyproject.toml:12` | `httpx` | httpx&lt;9999 is a sentinel "
        "cap, not a ceiling; ping @&#8203;bob \\| maybe |"
    ) in text
    assert "100% overdue, ask<br>the owner" in text
    assert "<details>" in text
    assert "</details>" in text
    assert "| `leftpad` | `==1000000000.0.0` | ban/impossible | `pyproject.toml:13` | " in text
    assert "forbidden \\| do not use" in text
    assert "[cupy/cupy#9001](https://github.com/cupy/cupy/issues/9001), #42" in text
    assert "| `torch` | `==2.4.0` | pin/exact | `requirements/base.txt:7` | *none* |  |" in text
    # Every table row has the same number of unescaped pipes as its header.
    for line in text.splitlines():
        if line.startswith("| "):
            cells = line.replace("\\|", "").count("|")
            assert cells in (6, 7), line


def test_markdown_without_findings() -> None:
    text = markdown.render(make_report(findings=()))
    assert "No findings." in text
    assert "| Severity |" not in text


def test_markdown_cells() -> None:
    assert markdown.cell("a|b\nc") == "a\\|b<br>c"
    assert markdown.cell("<b>&") == "&lt;b&gt;&amp;"
    assert markdown.code("x`y") == "``x`y``"
    # A run of two backticks inside cannot close the span: its fence is longer.
    assert markdown.code("a``b|c") == "```a``b\\|c```"
    assert markdown.code("`x") == "`` `x ``"
    assert markdown.code(None) == ""
    assert markdown.cell("a\x1b[31mb") == "a&lt;U+001B&gt;[31mb"  # shown as <U+001B>


# --- human ----------------------------------------------------------------------------


def test_human_layout(report: AuditReport) -> None:
    text = human.render(report)
    lines = text.splitlines()
    assert lines[0] == "requirements/base.txt (requirements, 3 requirements)"
    assert lines[1] == (
        "     4  cupy-cuda13x != 14.1.0  [not-equal/exact]  CuPy 14.1.0 imports pytest at "
        "import time  https://github.com/cupy/cupy/issues/9001 #42  bad=14.1.0"
    )
    assert "     7  torch==2.4.0  [pin/exact]  (no reason)" in lines
    assert "pyproject.toml (pyproject, 2 requirements)" in lines
    assert (
        "requirements/base.txt:7:6: error missing-reason: "
        "torch==2.4.0 excludes versions without a reason"
    ) in lines
    assert lines[-1] == summary_line(report)
    assert lines[-1] == "2 sources, 5 requirements, 5 exclusions; 1 error, 2 warnings, 1 info"
    assert text.endswith("info\n")


def test_human_caret_and_hint(report: AuditReport) -> None:
    lines = human.render(report).splitlines()
    at = lines.index(
        "requirements/base.txt:7:6: error missing-reason: "
        "torch==2.4.0 excludes versions without a reason"
    )
    assert lines[at + 1] == "    torch==2.4.0"
    assert lines[at + 2] == "         ^"
    assert lines[at + 3] == "  hint: add a comment above the line saying why"


def test_human_caret_line_handles_tabs_and_wide_characters() -> None:
    assert human.caret_line("\tfoo==1", 3) == "\t ^"
    assert human.caret_line("名前==1", 3) == "    ^"
    assert human.caret_line("ab", 5) == "    ^"


def test_human_truncates_reasons_and_escapes_controls(report: AuditReport) -> None:
    text = human.render(report)
    numpy_line = next(line for line in text.splitlines() if "numpy<2" in line)
    assert "…" in numpy_line
    assert LONG_REASON not in text
    assert "\x1b" not in text
    assert "no real ceiling <U+001B>[31mred<U+001B>[0m" in text


def test_human_cross_file_findings_come_last(report: AuditReport) -> None:
    lines = human.render(report).splitlines()
    header = lines.index("other locations")
    assert lines[header + 1] == (
        "constraints/ci.txt:3: warning conflicting-constraint: "
        "numpy<1.26 here conflicts with numpy<2 in requirements/base.txt"
    )
    assert lines[header + 2] == "  hint: keep one constraint"
    assert header > lines.index("pyproject.toml (pyproject, 2 requirements)")


def test_human_multiline_message_is_indented(report: AuditReport) -> None:
    lines = human.render(report).splitlines()
    at = lines.index(
        "requirements/base.txt:6: warning review-overdue: "
        "review-by 2024-01-01 passed: 100% overdue, ask"
    )
    assert lines[at + 1] == "    the owner"


def test_human_color(report: AuditReport) -> None:
    plain = human.render(report, color=False)
    colored = human.render(report, color=True)
    assert "\x1b[" not in plain
    assert "\x1b[31merror\x1b[0m" in colored
    assert "\x1b[33mwarning\x1b[0m" in colored
    assert "\x1b[34minfo\x1b[0m" in colored
    assert "\x1b[1mrequirements/base.txt\x1b[0m" in colored
    # The file's own escape codes stay escaped even with colour on.
    assert "<U+001B>[31mred" in colored


# --- dispatch and colour detection ----------------------------------------------------


def test_render_dispatches(report: AuditReport) -> None:
    assert render(report, OutputFormat.JSON) == json_report.render(report)
    assert render(report, "sarif") == sarif.render(report)
    assert render(report, OutputFormat.GITHUB) == github.render(report)
    assert render(report, OutputFormat.MARKDOWN) == markdown.render(report)
    assert render(report, OutputFormat.HUMAN, color=True) == human.render(report, color=True)
    with pytest.raises(ValueError, match="yaml"):
        render(report, "yaml")


def test_output_package_imports_renderers_lazily() -> None:
    code = (
        "import sys, govern.output\n"
        "loaded = [m for m in sys.modules if m.startswith('govern.output.')]\n"
        "assert not loaded, loaded\n"
        "assert 'govern.report' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class _Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "environ", "expected"),
    [
        (_Terminal(), {}, True),
        (_Terminal(), {"NO_COLOR": "1"}, False),
        (_Terminal(), {"NO_COLOR": ""}, True),
        (_Terminal(), {"TERM": "dumb"}, False),
        (io.StringIO(), {}, False),
        (io.StringIO(), {"FORCE_COLOR": "1"}, True),
        (io.StringIO(), {"FORCE_COLOR": ""}, False),
        (_Terminal(), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, True),
    ],
)
def test_use_color(stream: io.StringIO, environ: dict[str, str], expected: bool) -> None:
    assert use_color(stream, environ) is expected


def test_use_color_closed_stream() -> None:
    stream = io.StringIO()
    stream.close()
    assert use_color(stream, {}) is False
