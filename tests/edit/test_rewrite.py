"""The file edit of a proposal (:mod:`govern.edit`), with exact expected files.

The CuPy lines are copied from the corpus (vllm-project/vllm requirements/kv_connectors.txt
after PR #43530, reconstructed from the diff context quoted in PR #45843). The cuDNN line is
requirements/cuda.txt before PR #42599 (``nvidia-cudnn-frontend>=1.13.0,<1.19.0``, the cap
added in #36719 for a CI break); the wording of its reason comment is ours: #42599 deleted
the original with the cap.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from govern.edit import Edit, EditRefused, Superseded, relax_source
from govern.edit.blocks import evidence_comment
from govern.edit.relax import relax
from govern.exclusions.ref import ExclusionRef

EVIDENCE = "14.1.1 verified on cuda13: https://ci.example/runs/14.1.1, installed 14.1.1"
NOTE = evidence_comment(EVIDENCE)  # the comment govern writes
SHA_A = "sha256:" + "a" * 64
SHA_B = "sha256:" + "b" * 64
SHA_C = "sha256:" + "c" * 64
SHA_D = "sha256:" + "d" * 64
SHA_E = "sha256:" + "e" * 64


def edit(
    text: str,
    requirement: str,
    specifier: str,
    *,
    line: int = 1,
    candidate: str = "14.1.1",
    package: str | None = None,
    format: str = "requirements",
    group: str | None = None,
    evidence: Sequence[str] = (EVIDENCE,),
    bad_versions: Sequence[str] = (),
    hashes: Sequence[str] | None = None,
) -> Edit:
    """Relax ``requirement`` of ``text`` to ``specifier`` (package: the requirement's name)."""
    name = package or requirement.replace("'", " ").split()[0].split("<")[0].split("=")[0]
    ref = ExclusionRef(
        key="0123456789abcdef",
        repository="octo-org/app",
        source="requirements/kv_connectors.txt" if format != "pyproject" else "pyproject.toml",
        line=line,
        package=name,
        requirement=requirement,
        clause=specifier,
        group=group,
    )
    return relax_source(
        text,
        ref=ref,
        format=format,
        specifier=specifier,
        candidate=candidate,
        evidence=evidence,
        bad_versions=bad_versions,
        hashes=hashes,
    )


# -- requirements files: the two stories --------------------------------------------------

KV = (
    "lmcache >= 0.3.9\r\n"
    "# CuPy 14.1.0 imports pytest from cupy.testing._random. Use <14.1.0\r\n"
    "# until a fixed newer release is verified for runtime images.\r\n"
    "cupy-cuda13x < 14.1.0\r\n"
    "nixl >= 0.7.1 # Required for disaggregated prefill\r\n"
)


def test_the_cupy_cap_becomes_not_equal_with_the_evidence_below_its_reason() -> None:
    done = edit(KV, "cupy-cuda13x < 14.1.0", "!=14.1.0", line=4)
    assert done.text == (
        "lmcache >= 0.3.9\r\n"
        "# CuPy 14.1.0 imports pytest from cupy.testing._random. Use <14.1.0\r\n"
        "# until a fixed newer release is verified for runtime images.\r\n"
        f"# {NOTE}\r\n"
        "cupy-cuda13x != 14.1.0\r\n"
        "nixl >= 0.7.1 # Required for disaggregated prefill\r\n"
    )
    assert (done.old, done.new, done.line, done.changed) == (
        "cupy-cuda13x < 14.1.0",
        "cupy-cuda13x != 14.1.0",
        5,
        True,
    )
    assert done.diff.startswith("--- a/requirements/kv_connectors.txt\n")
    assert "-cupy-cuda13x < 14.1.0\r\n" in done.diff
    assert "+cupy-cuda13x != 14.1.0\r\n" in done.diff


def test_a_second_run_on_the_edited_file_changes_nothing() -> None:
    done = edit(KV, "cupy-cuda13x < 14.1.0", "!=14.1.0", line=4)
    again = edit(done.text, "cupy-cuda13x < 14.1.0", "!=14.1.0", line=4)
    assert not again.changed
    assert again.text == done.text
    assert (again.old, again.new, again.line, again.diff) == (
        "cupy-cuda13x != 14.1.0",
        "cupy-cuda13x != 14.1.0",
        5,
        "",
    )


CUDA = """\
tilelang==0.1.12
# cuDNN frontend 1.19.0 breaks the CUDA build in CI (#36719): keep it out
# until a fixed release is verified.
nvidia-cudnn-frontend>=1.13.0,<1.19.0
# Required for LLM_NVTX_SCOPES_FOR_PROFILING=1
nvtx==0.2.15
"""


def test_the_cudnn_cap_keeps_its_floor_and_its_reason_unlike_vllm_42599() -> None:
    relaxed = relax(">=1.13.0,<1.19.0", "<1.19.0", "1.19.1", ["1.19.0"])
    evidence = "1.19.1 verified on cuda12: https://ci.example/runs/9, installed 1.19.1"
    done = edit(
        CUDA,
        "nvidia-cudnn-frontend>=1.13.0,<1.19.0",
        ",".join(relaxed.after_clauses),
        line=4,
        candidate="1.19.1",
        evidence=[evidence],
        bad_versions=["1.19.0"],
    )
    assert done.text == CUDA.replace(
        "nvidia-cudnn-frontend>=1.13.0,<1.19.0\n",
        f"# {evidence_comment(evidence)}\nnvidia-cudnn-frontend>=1.13.0,!=1.19.0\n",
    )


# -- requirements files: the line's form ----------------------------------------------------


def test_extras_marker_spacing_and_inline_comment_are_kept() -> None:
    text = (
        'numpy\ncupy-cuda13x[all] < 14.1.0 ; platform_machine == "x86_64"  # see cupy/cupy#9963\n'
    )
    done = edit(
        text,
        'cupy-cuda13x[all] < 14.1.0 ; platform_machine == "x86_64"',
        "!=14.1.0",
        line=2,
        package="cupy-cuda13x",
    )
    assert done.text == (
        "numpy\n"
        f"# {NOTE}\n"
        'cupy-cuda13x[all] != 14.1.0 ; platform_machine == "x86_64"  # see cupy/cupy#9963\n'
    )


def test_a_package_split_by_markers_edits_the_tracked_marker_only() -> None:
    text = 'foo<2; python_version < "3.12"\nfoo<3; python_version >= "3.12"\n'
    done = edit(
        text, 'foo<3; python_version >= "3.12"', "!=3", line=2, candidate="3.1", evidence=()
    )
    assert done.text == 'foo<2; python_version < "3.12"\nfoo!=3; python_version >= "3.12"\n'


def test_a_continued_requirement_is_edited_on_the_line_its_clause_sits_on() -> None:
    text = "# why: 2.0 broke us\nfoo >= 1.0, \\\n    < 2.0  # see #12\nbar\n"
    done = edit(text, "foo >= 1.0,     < 2.0", ">=1.0,!=2.0", candidate="2.1", evidence=())
    assert done.text == "# why: 2.0 broke us\nfoo >= 1.0, \\\n    != 2.0  # see #12\nbar\n"
    assert done.new == "foo >= 1.0,     != 2.0"


def test_a_continued_line_left_empty_is_removed() -> None:
    text = "foo>=1.0, \\\n    <2.0\nbar\n"
    done = edit(text, "foo>=1.0,     <2.0", ">=1.0", candidate="2.1", evidence=())
    assert done.text == "foo>=1.0\nbar\n"


def test_a_continued_line_keeps_its_indentation_when_the_clause_before_it_goes() -> None:
    text = "foo <2.0, \\\n    >=1.0\nbar\n"
    done = edit(text, "foo <2.0,     >=1.0", ">=1.0", candidate="2.1", evidence=())
    assert done.text == "foo \\\n    >=1.0\nbar\n"
    assert done.new == "foo     >=1.0"


def test_a_moved_line_is_found_by_its_text() -> None:
    done = edit(KV, "cupy-cuda13x < 14.1.0", "!=14.1.0", line=1, evidence=())
    assert done.text == KV.replace("cupy-cuda13x < 14.1.0", "cupy-cuda13x != 14.1.0")


# -- --hash pins --------------------------------------------------------------------------

HASHED = f"""\
# 1.2.0 leaks file handles (example/foo#7)
foo==1.2.0 \\
    --hash={SHA_A} \\
    --hash={SHA_B}
    # via -r requirements.in
bar==2.0 \\
    --hash={SHA_C}
"""


def test_a_hash_pin_without_the_new_hashes_is_refused() -> None:
    with pytest.raises(EditRefused, match=r"--hash options: the edit needs 1\.3\.1's hashes"):
        edit(HASHED, "foo==1.2.0", "==1.3.1", line=2, candidate="1.3.1", evidence=())


def test_a_hash_pin_is_refused_when_the_relaxation_is_a_range() -> None:
    relaxed = relax("==1.2.0", "==1.2.0", "1.3.1", ["1.3.0"], strategy="raise-cap")
    with pytest.raises(EditRefused, match="must stay pinned"):
        edit(
            HASHED,
            "foo==1.2.0",
            ",".join(relaxed.after_clauses),
            line=2,
            candidate="1.3.1",
            hashes=[SHA_D],
        )


def test_a_hash_pin_moves_with_the_given_hashes_one_option_a_line() -> None:
    done = edit(
        HASHED, "foo==1.2.0", "==1.3.1", line=2, candidate="1.3.1", hashes=[SHA_D, SHA_E, SHA_C]
    )
    assert done.text == HASHED.replace(
        f"foo==1.2.0 \\\n    --hash={SHA_A} \\\n    --hash={SHA_B}\n",
        f"# {NOTE}\nfoo==1.3.1 \\\n    --hash={SHA_D} \\\n    --hash={SHA_E} \\\n"
        f"    --hash={SHA_C}\n",
    )


def test_surplus_hash_options_are_removed_with_their_line() -> None:
    done = edit(HASHED, "foo==1.2.0", "==1.3.1", line=2, candidate="1.3.1", hashes=[SHA_D])
    assert done.text == HASHED.replace(
        f"foo==1.2.0 \\\n    --hash={SHA_A} \\\n    --hash={SHA_B}\n",
        f"# {NOTE}\nfoo==1.3.1 \\\n    --hash={SHA_D}\n",
    )


def test_hash_options_on_the_requirement_line_stay_there() -> None:
    text = f"foo == 1.2.0 --hash={SHA_A}  --hash {SHA_B}\n"
    done = edit(text, "foo == 1.2.0", "==1.3.1", candidate="1.3.1", hashes=[SHA_C, SHA_D, SHA_E])
    assert done.text == (f"# {NOTE}\nfoo == 1.3.1 --hash={SHA_C}  --hash {SHA_D}  --hash {SHA_E}\n")


def test_a_hash_that_pip_would_not_take_is_refused() -> None:
    with pytest.raises(EditRefused, match="not a sha256/384/512 hash"):
        edit(HASHED, "foo==1.2.0", "==1.3.1", line=2, candidate="1.3.1", hashes=["md5:abc"])


# -- # govern: fields ---------------------------------------------------------------------


def test_the_govern_bad_field_is_kept_and_names_the_versions_now_kept_out() -> None:
    text = (
        "# CuPy 14.1.0 imports pytest (cupy/cupy#9963)\n"
        "# govern: bad=14.1.0 link=https://github.com/cupy/cupy/issues/9963 owner=@runtime "
        "review-by=2026-09-01\n"
        "cupy-cuda13x < 14.1.0\n"
    )
    relaxed = relax("<14.1.0", "<14.1.0", "14.1.3", ["14.1.0", "14.1.2"])
    assert relaxed.after_clauses == ("!=14.1.0", "!=14.1.2")
    done = edit(
        text,
        "cupy-cuda13x < 14.1.0",
        "!=14.1.0,!=14.1.2",
        line=3,
        candidate="14.1.3",
        bad_versions=["14.1.0", "14.1.2"],
    )
    assert done.text == (
        "# CuPy 14.1.0 imports pytest (cupy/cupy#9963)\n"
        "# govern: bad=14.1.0,14.1.2 link=https://github.com/cupy/cupy/issues/9963 "
        "owner=@runtime review-by=2026-09-01\n"
        f"# {NOTE}\n"
        "cupy-cuda13x != 14.1.0, != 14.1.2\n"
    )


def test_an_inline_govern_comment_gets_the_bad_field_it_lacks() -> None:
    text = "cupy-cuda13x<14.1.0  # govern: owner=@runtime review-by=2026-09-01\n"
    done = edit(text, "cupy-cuda13x<14.1.0", "!=14.1.0", evidence=())
    assert done.text == (
        "cupy-cuda13x!=14.1.0  # govern: owner=@runtime review-by=2026-09-01 bad=14.1.0\n"
    )


def test_a_govern_comment_below_the_line_in_a_constraints_file_is_extended() -> None:
    text = 'cupy-cuda13x<14.1.0\n# ^govern: bad="13.0.1" owner=@runtime\nnumpy<3\n'
    done = edit(text, "cupy-cuda13x<14.1.0", "!=14.1.0", format="constraints", evidence=())
    assert done.text == (
        'cupy-cuda13x!=14.1.0\n# ^govern: bad="13.0.1,14.1.0" owner=@runtime\nnumpy<3\n'
    )


def test_a_relaxation_letting_in_a_version_the_line_lists_as_bad_is_refused() -> None:
    text = "foo<1.0  # govern: bad=1.0,1.1\n"
    with pytest.raises(EditRefused) as refused:
        edit(text, "foo<1.0", "!=1.0", candidate="1.1", evidence=())
    assert str(refused.value) == (
        "requirements/kv_connectors.txt:1: the new clause would let in 1.1, "
        "which the line's bad= lists"
    )


def test_a_bad_version_in_the_block_above_or_below_is_refused_too() -> None:
    above = "# govern: bad=1.2\nfoo<1.0\nbar\n"
    with pytest.raises(EditRefused) as refused:
        edit(above, "foo<1.0", "!=1.0", line=2, candidate="1.1", evidence=())
    assert str(refused.value) == (
        "requirements/kv_connectors.txt:2: the new clause would let in 1.2, "
        "which the line's bad= lists"
    )
    below = "foo<1.0\n# ^govern: bad=1.1.*\n"
    with pytest.raises(EditRefused, match=r"would let in 1\.1\.3, which the line's bad= lists"):
        edit(below, "foo<1.0", "!=1.0", candidate="1.1.3", evidence=())


def test_a_known_bad_version_the_relaxation_would_let_in_is_refused() -> None:
    with pytest.raises(EditRefused) as refused:
        edit("foo<1.0\n", "foo<1.0", "", candidate="1.1", evidence=(), bad_versions=["1.0"])
    assert str(refused.value) == (
        "requirements/kv_connectors.txt:1: the new clause would let in 1.0, which is known bad"
    )


def test_a_bad_version_the_line_already_admits_does_not_refuse_the_edit() -> None:
    text = "foo>=0.5,<1.0  # govern: bad=0.7\n"
    done = edit(text, "foo>=0.5,<1.0", ">=0.5,!=1.0", candidate="1.1", evidence=())
    assert done.text == "foo>=0.5,!=1.0  # govern: bad=0.7,1.0\n"


def test_a_line_without_a_govern_comment_gets_none() -> None:
    done = edit("cupy-cuda13x<14.1.0  # see cupy/cupy#9963\n", "cupy-cuda13x<14.1.0", "!=14.1.0")
    assert done.text == f"# {NOTE}\ncupy-cuda13x!=14.1.0  # see cupy/cupy#9963\n"


def test_evidence_already_in_the_block_is_not_added_again() -> None:
    text = f"# CuPy 14.1.0 is broken\n# {NOTE}\ncupy-cuda13x < 14.1.0\n"
    done = edit(text, "cupy-cuda13x < 14.1.0", "!=14.1.0", line=3)
    assert done.text == text.replace("< 14.1.0", "!= 14.1.0")


# -- superseded and unchanged ----------------------------------------------------------------


def test_a_block_that_also_explains_the_lines_below_is_left_to_them() -> None:
    # The block explains both CuPy lines (the audit reads one reason for the run): 14.1.1
    # verified on cuda13 says nothing of cuda12, and its bad= is theirs too.
    text = (
        "# CuPy 14.1.0 broke both runtime images (cupy/cupy#9963)\n"
        "# govern: owner=@runtime bad=14.0.0\n"
        "cupy-cuda13x<14.1.0\n"
        "cupy-cuda12x<14.1.0\n"
        "\n"
        "numpy<2\n"
    )
    done = edit(text, "cupy-cuda13x<14.1.0", "!=14.1.0", line=3, bad_versions=["14.1.0"])
    assert done.text == text.replace("cupy-cuda13x<14.1.0", "cupy-cuda13x!=14.1.0")
    assert (done.changed, done.line) == (True, 3)
    assert done.elsewhere == ()  # cupy-cuda12x reads what it read
    # Alone under its block, the line gets the evidence and the bad= as before.
    alone = text.replace("cupy-cuda12x<14.1.0\n", "\ncupy-cuda12x<14.1.0\n")
    done = edit(alone, "cupy-cuda13x<14.1.0", "!=14.1.0", line=3, bad_versions=["14.1.0"])
    assert done.text == alone.replace(
        "bad=14.0.0\ncupy-cuda13x<14.1.0",
        f"bad=14.0.0,14.1.0\n# {NOTE}\ncupy-cuda13x!=14.1.0",
    )


def test_evidence_never_reaches_a_line_the_changed_clause_brings_under_the_block() -> None:
    # In a list, a block covers the lines below with the same clauses as the first: once
    # `a<2.0` reads `a!=2.0`, `b!=2.0` is under the block too, and the evidence would be
    # b's reason.
    text = "z>=1\n# a 2.0 is broken\n# govern: bad=1.9\na<2.0\nb!=2.0\n"
    done = edit(text, "a<2.0", "!=2.0", line=4, candidate="2.1", bad_versions=["2.0"])
    assert done.text == text.replace("a<2.0", "a!=2.0")
    assert done.elsewhere == ("`b!=2.0` (line 5): its reason and bad= change",)


def test_the_inline_comment_of_a_line_under_a_shared_block_is_still_extended() -> None:
    text = (
        "# CuPy 14.1.0 broke both runtime images\n"
        "cupy-cuda13x<14.1.0  # govern: owner=@runtime\n"
        "cupy-cuda12x<14.1.0\n"
    )
    done = edit(text, "cupy-cuda13x<14.1.0", "!=14.1.0", line=2, bad_versions=["14.1.0"])
    assert done.text == text.replace(
        "cupy-cuda13x<14.1.0  # govern: owner=@runtime",
        "cupy-cuda13x!=14.1.0  # govern: owner=@runtime bad=14.1.0",
    )


def test_a_line_changed_by_hand_is_superseded() -> None:
    with pytest.raises(Superseded, match=r"now reads `cupy-cuda13x < 14\.0\.9`"):
        edit(KV.replace("< 14.1.0", "< 14.0.9"), "cupy-cuda13x < 14.1.0", "!=14.1.0", line=4)


def test_a_line_removed_by_hand_is_superseded() -> None:
    text = KV.replace("cupy-cuda13x < 14.1.0\r\n", "")
    with pytest.raises(Superseded, match="no longer in the file"):
        edit(text, "cupy-cuda13x < 14.1.0", "!=14.1.0", line=4)


def test_a_line_relaxed_by_hand_is_left_unchanged() -> None:
    text = KV.replace("< 14.1.0", ">= 14.1.1")
    done = edit(text, "cupy-cuda13x < 14.1.0", "!=14.1.0", line=4)
    assert (done.changed, done.text, done.diff) == (False, text, "")


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(EditRefused, match=r"a setup\.cfg source is not edited"):
        edit("", "foo<2", "!=2", format="setup.cfg")


# -- pyproject.toml -----------------------------------------------------------------------

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61,<70", 'wheel']  # build backends

[project]
name = "demo"
requires-python = ">=3.10"
# the runtime's dependencies
dependencies = [
    "lmcache >= 0.3.9",
    # CuPy 14.1.0 imports pytest (cupy/cupy#9963)
    # govern: bad=14.1.0 owner=@runtime review-by=2026-09-01
    "cupy-cuda13x < 14.1.0",  # runtime images
    "foo<2; python_version < \\"3.12\\"",
]

[project.optional-dependencies]
cudnn = [
    # 1.19.0 breaks the CUDA build (#36719)
    'nvidia-cudnn-frontend>=1.13.0,<1.19.0; sys_platform == "linux"',
    'nixl >= 0.7.1'
]
kv = ["lmcache >= 0.3.9", "nixl<0.8"]

[dependency-groups]
test = ["pytest>=8"]
dev = [
  {include-group = "test"},
  "ruff<0.9",
]
"""


def test_a_project_dependency_is_edited_in_its_string_with_the_evidence_above() -> None:
    done = edit(
        PYPROJECT,
        "cupy-cuda13x < 14.1.0",
        "!=14.1.0",
        line=12,
        format="pyproject",
        group="project.dependencies",
    )
    assert done.text == PYPROJECT.replace(
        '    "cupy-cuda13x < 14.1.0",  # runtime images\n',
        f'    # {NOTE}\n    "cupy-cuda13x != 14.1.0",  # runtime images\n',
    )
    assert (done.old, done.new, done.line) == (
        "cupy-cuda13x < 14.1.0",
        "cupy-cuda13x != 14.1.0",
        13,
    )
    again = edit(
        done.text,
        "cupy-cuda13x < 14.1.0",
        "!=14.1.0",
        line=12,
        format="pyproject",
        group="project.dependencies",
    )
    assert (again.changed, again.text) == (False, done.text)


def test_the_govern_bad_field_of_a_pyproject_element_is_extended() -> None:
    done = edit(
        PYPROJECT,
        "cupy-cuda13x < 14.1.0",
        "!=14.1.0,!=14.1.2",
        line=12,
        candidate="14.1.3",
        format="pyproject",
        group="project.dependencies",
        evidence=(),
        bad_versions=["14.1.2"],
    )
    assert done.text == PYPROJECT.replace(
        "    # govern: bad=14.1.0 owner=@runtime review-by=2026-09-01\n"
        '    "cupy-cuda13x < 14.1.0",  # runtime images\n',
        "    # govern: bad=14.1.0,14.1.2 owner=@runtime review-by=2026-09-01\n"
        '    "cupy-cuda13x != 14.1.0, != 14.1.2",  # runtime images\n',
    )


def test_a_basic_string_keeps_its_escaped_marker() -> None:
    done = edit(
        PYPROJECT,
        'foo<2; python_version < "3.12"',
        "!=2",
        line=13,
        candidate="2.1",
        format="pyproject",
        group="project.dependencies",
        evidence=(),
    )
    assert done.text == PYPROJECT.replace(
        '"foo<2; python_version < \\"3.12\\""', '"foo!=2; python_version < \\"3.12\\""'
    )


def test_an_optional_dependency_in_a_literal_string_keeps_its_quotes_and_its_reason() -> None:
    evidence = "1.19.1 verified on cuda12: https://ci.example/runs/9, installed 1.19.1"
    done = edit(
        PYPROJECT,
        'nvidia-cudnn-frontend>=1.13.0,<1.19.0; sys_platform == "linux"',
        ">=1.13.0,!=1.19.0",
        line=19,
        candidate="1.19.1",
        package="nvidia-cudnn-frontend",
        format="pyproject",
        group="project.optional-dependencies.cudnn",
        evidence=[evidence],
        bad_versions=["1.19.0"],
    )
    assert done.text == PYPROJECT.replace(
        "    # 1.19.0 breaks the CUDA build (#36719)\n"
        "    'nvidia-cudnn-frontend>=1.13.0,<1.19.0; sys_platform == \"linux\"',\n",
        "    # 1.19.0 breaks the CUDA build (#36719)\n"
        f"    # {evidence_comment(evidence)}\n"
        "    'nvidia-cudnn-frontend>=1.13.0,!=1.19.0; sys_platform == \"linux\"',\n",
    )


def test_a_block_that_names_the_elements_below_is_left_to_them() -> None:
    text = (
        "[project]\n"
        'name = "demo"\n'
        "dependencies = [\n"
        '    "lmcache >= 0.3.9",\n'
        "    # CuPy 14.1.0 broke cupy-cuda13x and cupy-cuda12x\n"
        "    # govern: bad=14.0.0\n"
        '    "cupy-cuda13x<14.1.0",\n'
        '    "cupy-cuda12x<14.1.0",\n'
        '    "numpy<2",\n'
        "]\n"
    )

    def relax(on: str) -> Edit:
        return edit(
            on,
            "cupy-cuda13x<14.1.0",
            "!=14.1.0",
            line=7,
            format="pyproject",
            group="project.dependencies",
            bad_versions=["14.1.0"],
        )

    done = relax(text)
    assert done.text == text.replace('"cupy-cuda13x<14.1.0"', '"cupy-cuda13x!=14.1.0"')
    # A block that reaches the next element only through their shared clauses stops
    # reaching it once the clause changes, whatever is written in it: it is the edited
    # element's, and takes the evidence and the bad= as a block of its own does.
    unnamed = text.replace("cupy-cuda13x and cupy-cuda12x", "the runtime images")
    done = relax(unnamed)
    assert done.text == unnamed.replace(
        '    # govern: bad=14.0.0\n    "cupy-cuda13x<14.1.0",\n',
        f'    # govern: bad=14.0.0,14.1.0\n    # {NOTE}\n    "cupy-cuda13x!=14.1.0",\n',
    )
    # ... which reviewers are told: the next element loses the block's reason and bad=.
    assert done.elsewhere == ("`cupy-cuda12x<14.1.0` (line 9): its reason and bad= change",)


def test_an_element_on_the_edited_line_is_named_when_it_reads_differently() -> None:
    text = (
        '[project]\nname = "x"\nversion = "1"\ndependencies = [\n  "z>=1",\n'
        '  # 2.0 is broken\n  # govern: bad=2.0\n  "a<2.0", "b<2.0",\n  "c<2.0",\n]\n'
    )
    done = edit(
        text,
        "a<2.0",
        "!=2.0",
        line=8,
        candidate="2.1",
        format="pyproject",
        group="project.dependencies",
        bad_versions=["2.0"],
    )
    assert done.text == text.replace('"a<2.0"', '"a!=2.0"')
    assert done.elsewhere == (
        "`b<2.0` (line 8): its reason and bad= change",
        "`c<2.0` (line 9): its reason and bad= change",
    )


def test_a_line_losing_its_ignore_field_is_named() -> None:
    text = "-r base.txt\n# govern: ignore=missing-link\na<2.0\nb<2.0\n"
    done = edit(text, "a<2.0", "!=2.0", line=3, candidate="2.1", evidence=())
    assert done.elsewhere == ("`b<2.0` (line 4): its ignore= changes",)


def test_an_element_of_an_inline_array_gets_no_comment() -> None:
    done = edit(
        PYPROJECT,
        "nixl<0.8",
        "",
        line=22,
        candidate="0.9",
        format="pyproject",
        group="project.optional-dependencies.kv",
    )
    assert done.text == PYPROJECT.replace(
        'kv = ["lmcache >= 0.3.9", "nixl<0.8"]', 'kv = ["lmcache >= 0.3.9", "nixl"]'
    )


def test_a_dependency_group_element_beside_an_include_group() -> None:
    done = edit(
        PYPROJECT,
        "ruff<0.9",
        "!=0.9.0",
        line=28,
        candidate="0.9.1",
        format="pyproject",
        group="dependency-groups.dev",
        evidence=["0.9.1 verified on lint: https://ci.example/runs/3, installed 0.9.1"],
        bad_versions=["0.9.0"],
    )
    assert done.text == PYPROJECT.replace(
        '  "ruff<0.9",\n',
        "  # govern: verified='0.9.1 on lint: https://ci.example/runs/3, installed 0.9.1'\n"
        '  "ruff!=0.9.0",\n',
    )


def test_build_system_requires() -> None:
    done = edit(
        PYPROJECT,
        "setuptools>=61,<70",
        ">=61,!=70.0",
        line=2,
        candidate="70.1",
        format="pyproject",
        group="build-system.requires",
        bad_versions=["70.0"],
    )
    assert done.text == PYPROJECT.replace(
        'requires = ["setuptools>=61,<70",', 'requires = ["setuptools>=61,!=70.0",'
    )


def test_a_pyproject_element_changed_by_hand_is_superseded() -> None:
    text = PYPROJECT.replace('"ruff<0.9"', '"ruff<0.8"')
    with pytest.raises(Superseded, match=r"now reads `ruff<0\.8`"):
        edit(
            text,
            "ruff<0.9",
            "!=0.9.0",
            candidate="0.9.1",
            format="pyproject",
            group="dependency-groups.dev",
        )


def test_a_pyproject_element_relaxed_by_hand_is_unchanged() -> None:
    text = PYPROJECT.replace('"ruff<0.9"', '"ruff>=0.9.1"')
    done = edit(
        text,
        "ruff<0.9",
        "!=0.9.0",
        candidate="0.9.1",
        format="pyproject",
        group="dependency-groups.dev",
    )
    assert (done.changed, done.text) == (False, text)


def test_requires_python_is_not_edited() -> None:
    with pytest.raises(EditRefused, match="not a requirement array"):
        edit(
            PYPROJECT,
            ">=3.10",
            ">=3.10",
            package="python",
            format="pyproject",
            group="project.requires-python",
        )


def test_crlf_and_a_byte_order_mark_are_kept_in_a_pyproject() -> None:
    text = "\ufeff" + PYPROJECT.replace("\n", "\r\n")
    done = edit(
        text,
        "cupy-cuda13x < 14.1.0",
        "!=14.1.0",
        line=12,
        format="pyproject",
        group="project.dependencies",
    )
    expected = PYPROJECT.replace(
        '    "cupy-cuda13x < 14.1.0",  # runtime images\n',
        f'    # {NOTE}\n    "cupy-cuda13x != 14.1.0",  # runtime images\n',
    )
    assert done.text == "\ufeff" + expected.replace("\n", "\r\n")


def test_a_pyproject_relaxation_letting_in_a_version_the_line_lists_as_bad_is_refused() -> None:
    text = '[project]\nname = "demo"\ndependencies = ["foo<1.0"]  # govern: bad=1.0,1.1\n'
    with pytest.raises(EditRefused) as refused:
        edit(
            text,
            "foo<1.0",
            "!=1.0",
            line=3,
            candidate="1.1",
            format="pyproject",
            group="project.dependencies",
        )
    assert str(refused.value) == (
        "pyproject.toml:3: the new clause would let in 1.1, which the line's bad= lists"
    )


def test_the_block_above_an_inline_array_is_not_extended_for_one_of_its_elements() -> None:
    text = (
        '[project]\nname = "demo"\n# govern: bad=0.9 for bar\ndependencies = ["bar<1", "foo<1.0"]\n'
    )
    done = edit(
        text,
        "foo<1.0",
        "!=1.0",
        line=4,
        candidate="1.1",
        format="pyproject",
        group="project.dependencies",
        bad_versions=["1.0"],
    )
    assert done.text == (
        "[project]\n"
        'name = "demo"\n'
        "# govern: bad=0.9 for bar\n"
        'dependencies = ["bar<1", "foo!=1.0"]\n'
    )


def test_the_block_above_the_first_element_on_the_key_line_is_not_extended() -> None:
    text = (
        '[project]\nname = "demo"\n# govern: bad=0.9\ndependencies = ["foo<1.0",\n    "bar<1",\n]\n'
    )
    done = edit(
        text,
        "foo<1.0",
        "!=1.0",
        line=4,
        candidate="1.1",
        format="pyproject",
        group="project.dependencies",
        bad_versions=["1.0"],
    )
    assert done.text == text.replace('"foo<1.0"', '"foo!=1.0"')


def test_the_comment_of_a_line_shared_with_another_element_is_not_extended() -> None:
    text = (
        "[project]\n"
        'name = "demo"\n'
        "dependencies = [\n"
        '    "bar<1", "foo<1.0",  # govern: bad=0.9\n'
        "]\n"
    )
    done = edit(
        text,
        "foo<1.0",
        "!=1.0",
        line=4,
        candidate="1.1",
        format="pyproject",
        group="project.dependencies",
        bad_versions=["1.0"],
    )
    assert done.text == text.replace('"foo<1.0"', '"foo!=1.0"')
