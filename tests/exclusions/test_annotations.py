"""Reasons, links and structured annotations read from comments."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from auditrun import run_audit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from govern.exclusions.annotations import is_licence_tag, read_annotations
from govern.exclusions.links import find_links
from govern.exclusions.model import Annotation
from govern.exclusions.settings import CommentSettings, ConfigAnnotation, LinkContext
from govern.sources.requirements_txt import read_requirements


def annotate(
    tmp_path: Path,
    text: str,
    settings: CommentSettings | None = None,
    config: tuple[ConfigAnnotation, ...] = (),
) -> dict[str, Annotation]:
    path = tmp_path / "requirements.txt"
    path.write_text(text, encoding="utf-8")
    source = read_requirements(path, display_path="requirements.txt", environ={})
    annotations = read_annotations(source, settings, config)
    return {
        e.text.split()[0].split("<")[0].split("!")[0].split("=")[0]: a
        for e, a in zip(source.entries, annotations, strict=True)
    }


def test_block_above_and_inline_comment_are_joined(tmp_path: Path) -> None:
    got = annotate(
        tmp_path,
        "# CuPy 14.1.0 imports pytest.\n# Only 14.1.0 is out.\n"
        "cupy!=14.1.0  # see cupy/cupy#9963\n",
    )
    assert (
        got["cupy"].reason == "CuPy 14.1.0 imports pytest. Only 14.1.0 is out.; see cupy/cupy#9963"
    )
    assert [str(x) for x in got["cupy"].links] == ["https://github.com/cupy/cupy/issues/9963"]


def test_blank_line_detaches_a_block(tmp_path: Path) -> None:
    got = annotate(tmp_path, "# Automatically generated, do not edit\n\nfoo<2\n")
    assert got["foo"].reason is None


def test_section_headers_and_labels_are_not_reasons(tmp_path: Path) -> None:
    got = annotate(tmp_path, "## section:general\nfoo<2\n# testing utils\nbar<3\n")
    assert got["foo"].reason is None
    assert got["bar"].reason is None


def test_paragraph_block_covers_the_run_below(tmp_path: Path) -> None:
    got = annotate(tmp_path, "x>=1\n\n# gRPC must move together.\ngrpcio==1\ngrpcio-status==1\n")
    assert got["grpcio"].reason == got["grpcio-status"].reason == "gRPC must move together."


def test_block_inside_a_list_covers_its_line_and_identical_clauses(tmp_path: Path) -> None:
    got = annotate(
        tmp_path, "a>=1\n# Capped until bug 123 is fixed\nboto3<1.36\nbotocore<1.36\nzeroconf!=1\n"
    )
    assert got["boto3"].reason == got["botocore"].reason
    assert got["zeroconf"].reason is None


def test_block_that_names_packages_covers_up_to_the_last_named(tmp_path: Path) -> None:
    got = annotate(
        tmp_path,
        "a>=1\n# flashinfer-cubin is not on the index\n"
        "flashinfer-python==1\nflashinfer-cubin==1.1\ntilelang==2\n",
    )
    assert got["flashinfer-cubin"].reason is not None
    assert got["tilelang"].reason is None


def test_scope_line_limits_a_block_to_one_line(tmp_path: Path) -> None:
    got = annotate(
        tmp_path,
        "# pinned together for the wheel builder.\ngrpcio==1\ngrpcio-status==1\n",
        CommentSettings(scope="line"),
    )
    assert got["grpcio"].reason is not None
    assert got["grpcio-status"].reason is None


def test_commented_out_requirement_keeps_its_reason(tmp_path: Path) -> None:
    got = annotate(tmp_path, "# old reason for foo\n# foo<2\n# bar must stay below 3.\nbar<3\n")
    assert got["bar"].reason == "bar must stay below 3."


def test_comment_below_counts_only_when_structured_or_configured(tmp_path: Path) -> None:
    text = 'foo<2\n# below the line, free text\n\nbar<3\n# ^govern: reason="why bar" bad=3.0\n'
    got = annotate(tmp_path, text)
    assert got["foo"].reason is None
    assert got["bar"].reason == "why bar"
    assert got["bar"].bad_versions == ("3.0",)
    below = annotate(tmp_path, text, CommentSettings(style="below"))
    assert below["foo"].reason == "below the line, free text"


def test_structured_form(tmp_path: Path) -> None:
    got = annotate(
        tmp_path,
        '# govern: reason="CuPy 14.1.0 breaks" issue=cupy/cupy#9963,#12\n'
        "# govern: bad=14.1.0 review-by=2027-01-31 owner=@runtime "
        'verify="pytest -k cupy" profiles=cuda13 ignore=missing-link\n'
        "cupy<14.1.0\n",
        CommentSettings(links=LinkContext(forge="https://github.com/vllm-project/vllm")),
    )
    ann = got["cupy"]
    assert ann.reason == "CuPy 14.1.0 breaks"
    assert [str(x) for x in ann.links] == [
        "https://github.com/cupy/cupy/issues/9963",
        "https://github.com/vllm-project/vllm/issues/12",
    ]
    assert ann.bad_versions == ("14.1.0",)
    assert ann.review_by == date(2027, 1, 31)
    assert ann.owner == "@runtime"
    assert ann.verify == "pytest -k cupy"
    assert ann.profiles == ("cuda13",)
    assert ann.suppress == frozenset({"missing-link"})
    assert ann.problems == ()


def test_a_field_on_the_line_overrides_the_block_above(tmp_path: Path) -> None:
    got = annotate(
        tmp_path,
        "# Pinned for the cluster image.\n"
        "# govern: owner=@infra review-by=2027-01-31\n"
        "numpy<2\n"
        "torch==2.9.1  # govern: owner=@ml\n",
        CommentSettings(),
    )
    assert got["numpy"].owner == "@infra"
    assert got["torch"].owner == "@ml"  # its own line wins
    assert got["torch"].review_by == date(2027, 1, 31)  # the rest still comes from the block
    assert got["torch"].reason == "Pinned for the cluster image."


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        ("review-by=tomorrow", "is not a date"),
        ("bad=not-a-version", "is not a PEP 440 version"),
        ("colour=blue", "unknown annotation field"),
        ("strategy=raise-the-roof", "choose one of exclude, keep-ceiling"),
        ('reason="unterminated', "cannot read"),
    ],
)
def test_invalid_structured_annotations_are_problems(
    tmp_path: Path, comment: str, message: str
) -> None:
    got = annotate(tmp_path, f"foo<2  # govern: {comment}\n")
    (problem,) = got["foo"].problems
    assert problem.rule == "invalid-annotation"
    assert problem.line == 1
    assert message in problem.message


def test_configured_annotations_for_generated_files(tmp_path: Path) -> None:
    config = (
        ConfigAnnotation(
            package="PyCrypto",
            source="*.txt",
            fields={"reason": "replaced by pycryptodome", "links": ("https://example.org/1",)},
        ),
        ConfigAnnotation(package="other", fields={"reason": "nope"}),
    )
    got = annotate(tmp_path, "pycrypto==1000000000.0.0\n", config=config)
    assert got["pycrypto"].reason == "replaced by pycryptodome"
    assert [str(x) for x in got["pycrypto"].links] == ["https://example.org/1"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see https://github.com/o/r/issues/5.", ["https://github.com/o/r/issues/5"]),
        ("fixed by cupy/cupy#9965", ["https://github.com/cupy/cupy/issues/9965"]),
        ("bug 1593641", ["bug 1593641"]),
        ("Bug#1916771 for details", ["bug 1916771"]),
        ("LP: #2121144", ["https://bugs.launchpad.net/bugs/2121144"]),
        ("GHSA-93xj-8mrv-444m", ["https://github.com/advisories/GHSA-93xj-8mrv-444m"]),
        ("CVE-2026-0994", ["https://www.cve.org/CVERecord?id=CVE-2026-0994"]),
        ("compat (#119223).", ["#119223"]),
        ("https://h/x#12 and #7", ["https://h/x#12", "#7"]),
    ],
)
def test_find_links(text: str, expected: list[str]) -> None:
    assert [str(link) for link in find_links(text)] == expected


def test_hash_refs_resolve_against_the_forge_and_bugs_against_the_tracker() -> None:
    ctx = LinkContext(
        forge="https://github.com/home-assistant/core",
        bug_url="https://bugs.launchpad.net/bugs/{id}",
    )
    assert [str(x) for x in find_links("(#119223) bug 1593641", ctx)] == [
        "https://github.com/home-assistant/core/issues/119223",
        "https://bugs.launchpad.net/bugs/1593641",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Apache-2.0",
        "BSD License (3 clause)",
        "LGPLv2.1+",
        "license: MIT",
        "http://www.dnspython.org/LICENSE",
        "OSI-Approved Open Source, Public Domain",
        "Apache-2.0 (+ dual licensed GPL2)",
        "SIL OPEN FONT LICENSE Version 1.1",
    ],
)
def test_licence_tags(text: str) -> None:
    assert is_licence_tag(text)


@pytest.mark.parametrize(
    "text", ["Required for disaggregated prefill", "MIT broke this in 2.0", "see #12", ""]
)
def test_not_licence_tags(text: str) -> None:
    assert not is_licence_tag(text)


_PIECES = [
    "# govern:",
    "# ^govern:",
    "reason=",
    '"',
    "'",
    "bad=",
    "1.0",
    "review-by=",
    "2027-01-31",
    "issue=",
    "o/r#1",
    "#12",
    "ignore",
    "=",
    ",",
    " ",
    "\n",
    "foo<2",
    "bar!=1.0",
    "## h",
    "# NOTE(x): y",
    "\\",
    "owner=@t",
    "verify=",
    "profiles=a,b",
    "GHSA-",
    "CVE-2026-1",
    "https://h/x",
    "bug 123",
    "Apache-2.0",
    "\t",
    "é",
]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_arbitrary_comments_never_raise(tmp_path: Path, text: str) -> None:
    for settings_ in (
        CommentSettings(),
        CommentSettings(style="below", scope="line", inline="reason"),
    ):
        got = annotate(tmp_path, text, settings_)
        for annotation in got.values():
            assert all(p.rule == "invalid-annotation" for p in annotation.problems)
            assert annotation.reason is None or annotation.reason.strip() == annotation.reason


def test_configured_annotation_scoped_to_a_clause(tmp_path: Path) -> None:
    config = (
        ConfigAnnotation(package="cupy", clause="<14.1.0", fields={"reason": "14.1.0 broke"}),
    )
    got = annotate(tmp_path, "cupy<14.1.0\n", config=config)
    assert got["cupy"].reason == "14.1.0 broke"
    other = annotate(tmp_path, "cupy!=14.1.0\n", config=config)
    assert other["cupy"].reason is None


def test_pip_compile_output_gives_no_reasons(tmp_path: Path) -> None:
    """pip-compile and uv write provenance comments below each pin and a banner above."""
    got = annotate(
        tmp_path,
        "#\n# This file is autogenerated by pip-compile with Python 3.11\n"
        "# by the following command:\n#\n#    pip-compile requirements.in\n#\n"
        "asgiref==3.7.2\n    # via django\ndjango==4.2.7\n    # via\n    #   -r requirements.in\n"
        "    #   djangorestframework\nsqlparse==0.4.4\n    # via django\n",
    )
    assert {name: a.reason for name, a in got.items()} == {
        "asgiref": None,
        "django": None,
        "sqlparse": None,
    }


def test_several_requirements_on_one_pyproject_line_share_its_comment(tmp_path: Path) -> None:
    from govern.sources.pyproject import read_pyproject

    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[project]\nname = "x"\nversion = "1"\n'
        'dependencies = ["numpy<2", "scipy<1.14"]  # scipy 1.14 crashes on import\n',
        encoding="utf-8",
    )
    source = read_pyproject(path, display_path="pyproject.toml")
    annotations = read_annotations(source)
    assert [a.reason for a in annotations] == ["scipy 1.14 crashes on import"] * 2


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("# CuPy 14.1.0 imports pytest\ncupy<14.1.0\n", ["14.1.0"]),
        ("# wait for 2.1, which fixes the regression from 2.0.0\nfoo<2\n", ["2"]),
        ("# numpy 2 needs Python 3.12\nnumpy<2\n", []),  # a bare "2" is not read as a version
        ("# see https://h/x/tag/v9.0.1\nbar==1.0\n", []),
        ("# 2.0.0 broke the build\nfoo<2.1\n", []),
        ("# govern: bad=2.0.0,2.0.1\nfoo<2.1\n", ["2.0.0", "2.0.1"]),
    ],
)
def test_bad_versions_are_never_guessed_from_other_numbers(
    tmp_path: Path, line: str, bad: list[str]
) -> None:
    (tmp_path / "requirements.txt").write_text(line, encoding="utf-8")
    (exclusion,) = run_audit([tmp_path], tmp_path).exclusions
    assert list(exclusion.bad_versions) == bad


def _annotated(tmp_path: Path, text: str) -> tuple[list[Annotation], float]:
    """The annotations of ``text`` read as a requirements file, and the seconds they took
    (the reading of the file itself not counted)."""
    import time

    file = tmp_path / "requirements.txt"
    file.write_text(text, encoding="utf-8")
    source = read_requirements(file, display_path="requirements.txt")
    started = time.perf_counter()
    annotations = read_annotations(source)
    return annotations, time.perf_counter() - started


# The quadratic reads took about 10 s; a linear one takes 0.3 s, and up to about 1 s on a
# loaded two-core machine: 3 s keeps the load out and the quadratic in.
_LINEAR_BOUND = 3.0


def test_a_block_above_a_long_run_of_lines_is_read_in_linear_time(tmp_path: Path) -> None:
    # Each line of the run was looked for in the list of those already found: 30,000
    # lines below one block took about 10 s.
    annotations, elapsed = _annotated(tmp_path, "# see o/r#1, these broke\n" + "foo<2\n" * 30_000)
    assert len(annotations) == 30_000
    assert {a.reason for a in annotations} == {"see o/r#1, these broke"}
    assert elapsed < _LINEAR_BOUND


def test_an_issue_list_of_thousands_of_links_is_read_in_linear_time(tmp_path: Path) -> None:
    # Each link was compared with every link kept before it: 20,000 took 29 s.
    links = ",".join(f"o/r#{i}" for i in range(8_000))
    annotations, elapsed = _annotated(tmp_path, f"# govern: issue={links},o/r#7\nfoo<2\n")
    (annotation,) = annotations
    assert [link.ref for link in annotation.links][:2] == ["o/r#0", "o/r#1"]
    assert len(annotation.links) == 8_000  # the repeated o/r#7 is kept once
    assert elapsed < _LINEAR_BOUND


def test_strategy_and_evidence_are_fields_of_their_own(tmp_path: Path) -> None:
    text = (
        "# cuDNN 1.19.0 broke the attention kernels\n"
        "# govern: strategy=keep-ceiling\n"
        "# govern: verified='1.19.1 on cuda13: https://ci.example/runs/9, installed 1.19.1'\n"
        "nvidia-cudnn-frontend>=1.13.0,!=1.19.0,<1.20\n"
    )
    got = annotate(tmp_path, text)["nvidia-cudnn-frontend>"]
    assert got.strategy == "keep-ceiling"
    assert got.evidence == ("1.19.1 on cuda13: https://ci.example/runs/9, installed 1.19.1",)
    assert got.reason == "cuDNN 1.19.0 broke the attention kernels"
    assert not got.problems
