"""Configuration validation: every bad value is exit 2 with one line and a tip."""

from __future__ import annotations

import json
import math
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from govern.cli import main
from govern.config import ANNOTATION_KEYS, TOOL_KEYS, load_config
from govern.errors import ConfigError

REQUIREMENTS = "attrs!=25.2.0\ncupy-cuda13x < 14.1.0\n"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``govern`` in-process through its real error boundary."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def write_config(root: Path, top: str, annotation: str | None, *, pyproject: bool) -> None:
    """``top`` (and one annotation) as ``.govern.toml`` or ``[tool.govern]``."""
    (root / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    if pyproject:
        text = f"[tool.govern]\n{top}\n"
        if annotation is not None:
            text += f"[[tool.govern.annotations]]\n{annotation}\n"
        (root / "pyproject.toml").write_text(text, encoding="utf-8")
    else:
        text = f"{top}\n"
        if annotation is not None:
            text += f"[[annotations]]\n{annotation}\n"
        (root / ".govern.toml").write_text(text, encoding="utf-8")


def assert_config_error(err: str, key: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("govern: error: "), err
    assert key in lines[0], err
    assert lines[1].startswith("Tip: "), err
    assert "internal error" not in err


BAD_TOP = [
    ("policy = 5", "policy"),
    ('policy = ["strict"]', "policy"),
    ("repository = 1", "repository"),
    ("repository = true", "repository"),
    ("forge = 1", "forge"),
    ('forge = "github.com/owner/repo"', "forge"),
    ('forge = "ftp://example.org/repo"', "forge"),
    ("forge = { url = 'https://x' }", "forge"),
    ("bug-url = 3", "bug-url"),
    ('bug-url = "https://bugs.example.org/"', "bug-url"),
    ('bug-url = "https://bugs.example.org/{id}/{other}"', "bug-url"),  # KeyError
    ('bug-url = "https://bugs.example.org/{id}/{0}"', "bug-url"),  # IndexError
    ('bug-url = "https://bugs.example.org/{id}/{"', "bug-url"),  # ValueError
    ('bug-url = "https://bugs.example.org/{id}{id:d}"', "bug-url"),  # ValueError
    ('bug-url = "https://bugs.example.org/{id}{id.x}"', "bug-url"),  # AttributeError
    ('bug-url = "https://bugs.example.org/{id}{id[x]}"', "bug-url"),  # TypeError
    ('bug-url = "https://bugs.example.org/{{id}}"', "bug-url"),  # a literal {id}
    ('bug-url = "https://bugs.example.org/{id}{id:>999999999}"', "bug-url"),  # a huge pad
    ('bug-url = "https://bugs.example.org/{id}{id!r}"', "bug-url"),
    ('bug-url = "https://bugs.example.org/{id}{id[0]}"', "bug-url"),
    ('fail-on = "fatal"', "fail-on"),
    ('fail-on = "off"', "fail-on"),
    ("fail-on = 1", "fail-on"),
    ('fail-on = ["error"]', "fail-on"),
    ('allow-includes-outside-root = "false"', "allow-includes-outside-root"),
    ('allow-includes-outside-root = "true"', "allow-includes-outside-root"),
    ("allow-includes-outside-root = 0", "allow-includes-outside-root"),
    ("allow-includes-outside-root = [true]", "allow-includes-outside-root"),
    ("include = 5", "include"),
    ("include = [1]", "include"),
    ("exclude = { a = 1 }", "exclude"),
    ('exclude = ["ok", false]', "exclude"),
    ('comment-style = "left"', "comment-style"),
    ("comment-style = 1", "comment-style"),
    ("comment-scope = true", "comment-scope"),
    ('comment-scope = ["group"]', "comment-scope"),
    ('inline-comments = ["auto"]', "inline-comments"),
    ("inline-comments = { auto = true }", "inline-comments"),
    ('inline-comments = "sometimes"', "inline-comments"),
    ("annotations = 5", "annotations"),
    ('annotations = "attrs"', "annotations"),
    ("annotations = [5]", "annotations"),
    ("colour = 1", "colour"),
]

BAD_ANNOTATION = [
    ("package = 5", "package"),
    ('reason = "x"', "package"),
    ('package = "attrs"\nsource = 5', "source"),
    ('package = "attrs"\nsource = ["requirements.txt"]', "source"),
    ('package = "attrs"\nclause = 5', "clause"),
    ('package = "attrs"\nclause = "below 14"', "clause"),
    ('package = "attrs"\nreason = 5', "reason"),
    ('package = "attrs"\nreason = ["a", "b"]', "reason"),
    ('package = "attrs"\nowner = []', "owner"),
    ('package = "attrs"\nowner = true', "owner"),
    ('package = "attrs"\nverify = { cmd = "pytest" }', "verify"),
    ('package = "attrs"\nreview-by = 2027-01-31T00:00:00', "review-by"),
    ('package = "attrs"\nreview-by = 2027-01-31T10:00:00Z', "review-by"),
    ('package = "attrs"\nreview-by = 2027-01-31 10:00:00+02:00', "review-by"),
    ('package = "attrs"\nreview-by = "2027-01-31T10:00"', "review-by"),
    ('package = "attrs"\nreview-by = "someday"', "review-by"),
    ('package = "attrs"\nreview-by = 20270131', "review-by"),
    ('package = "attrs"\nreview-by = 10:00:00', "review-by"),
    ('package = "attrs"\nlinks = 5', "links"),
    ('package = "attrs"\nbad = [1]', "bad"),
    ('package = "attrs"\ncolour = "red"', "colour"),
]


@pytest.mark.parametrize("pyproject", [False, True], ids=["govern-toml", "pyproject"])
@pytest.mark.parametrize(("top", "key"), BAD_TOP, ids=[t for t, _ in BAD_TOP])
def test_a_bad_value_is_exit_2_with_a_tip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], top: str, key: str, pyproject: bool
) -> None:
    write_config(tmp_path, top, None, pyproject=pyproject)
    code, out, err = run(["audit", str(tmp_path)], capsys)
    assert code == 2
    assert out == ""
    assert_config_error(err, key)


@pytest.mark.parametrize("pyproject", [False, True], ids=["govern-toml", "pyproject"])
@pytest.mark.parametrize(
    ("annotation", "key"), BAD_ANNOTATION, ids=[a.replace("\n", " ") for a, _ in BAD_ANNOTATION]
)
def test_a_bad_annotation_value_is_exit_2_with_a_tip(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    annotation: str,
    key: str,
    pyproject: bool,
) -> None:
    write_config(tmp_path, "", annotation, pyproject=pyproject)
    code, out, err = run(["audit", str(tmp_path)], capsys)
    assert code == 2
    assert out == ""
    assert_config_error(err, key)


@pytest.mark.parametrize(
    ("name", "text", "key"),
    [
        (".govern.toml", 'tool = "x"\n', "tool"),
        (".govern.toml", "tool = 5\n", "tool"),
        (".govern.toml", "tool = [1]\n", "tool"),
        (".govern.toml", "[tool]\ngovern = 5\n", "[tool.govern]"),
        ("pyproject.toml", "[tool]\ngovern = 5\n", "[tool.govern]"),
        ("pyproject.toml", '[tool]\ngovern = ["policy"]\n', "[tool.govern]"),
    ],
)
def test_a_tool_or_govern_that_is_not_a_table_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, key: str
) -> None:
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, _, err = run(["audit", str(tmp_path)], capsys)
    assert code == 2
    assert_config_error(err, key)


@pytest.mark.parametrize("text", ['tool = "x"\n', "tool = 5\n", "tool = [1, 2]\n"])
def test_a_pyproject_tool_that_is_not_a_table_is_no_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    assert load_config(tmp_path).path is None
    code, out, err = run(["audit", str(tmp_path)], capsys)
    assert code in (0, 1)
    assert "error" not in err
    assert "attrs" in out


def test_an_explicit_pyproject_with_a_non_table_tool_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    config = tmp_path / "conf" / "pyproject.toml"
    config.parent.mkdir()
    config.write_text('tool = "x"\n', encoding="utf-8")
    code, _, err = run(["audit", str(tmp_path), "--config", str(config)], capsys)
    assert code == 2
    assert_config_error(err, "tool")


def test_a_missing_explicit_config_is_exit_2_with_a_tip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    code, _, err = run(["audit", str(tmp_path), "--config", str(tmp_path / "nope.toml")], capsys)
    assert code == 2
    assert_config_error(err, "nope.toml")


FULL = """\
policy = "strict"
include = ["requirements.txt"]
exclude = "build/**"
repository = "example/project"
forge = "https://github.com/example/project"
bug-url = "https://bugs.example.org/show?id={id}&x={{literal}}"
comment-style = "below"
comment-scope = "line"
inline-comments = "reason"
allow-includes-outside-root = false
fail-on = "never"
"""

FULL_ANNOTATIONS = """\
[[annotations]]
package = "attrs"
source = "requirements*.txt"
clause = "!=25.2.0"
reason = "25.2.0 broke slots"
issue = "#12"
links = ["https://example.org/a", "bug 7777"]
bad = "25.2.0"
owner = "@team"
review-by = 2027-01-31
verify = "pytest -k attrs"
profiles = ["cuda"]
ignore = ["missing-link"]

[[annotations]]
package = "cupy-cuda13x"
review-by = "2027-02-28"
reason = "CuPy 14.1.0 imports pytest"
"""


@pytest.mark.parametrize("pyproject", [False, True], ids=["govern-toml", "pyproject"])
def test_a_full_valid_config_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pyproject: bool
) -> None:
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    if pyproject:
        text = (
            "[tool.govern]\n"
            + FULL
            + "\n"
            + FULL_ANNOTATIONS.replace("[[annotations]]", "[[tool.govern.annotations]]")
        )
        (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    else:
        (tmp_path / ".govern.toml").write_text(FULL + "\n" + FULL_ANNOTATIONS, encoding="utf-8")
    config = load_config(tmp_path)
    assert config.allow_includes_outside_root is False
    assert config.fail_on == "never"
    assert config.exclude == ("build/**",)
    assert [a.fields["review_by"] for a in config.annotations] == [
        date(2027, 1, 31),
        date(2027, 2, 28),
    ]
    assert all(type(a.fields["review_by"]) is date for a in config.annotations)
    code, out, err = run(["audit", str(tmp_path), "-f", "json", "--as-of", "2027-02-01"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["policy"] == "strict"
    (attrs,) = [e for e in doc["exclusions"] if e["package"] == "attrs"]
    assert attrs["owner"] == "@team"
    assert attrs["review_by"] == "2027-01-31"
    assert "https://github.com/example/project/issues/12" in attrs["links"]
    assert "https://bugs.example.org/show?id=7777&x={literal}" in attrs["links"]
    # Past its review date on 2027-02-01: reported, not crashed (a date, not a datetime).
    assert {f["package"] for f in doc["findings"] if f["rule"] == "review-overdue"} == {"attrs"}


def test_allow_includes_outside_root_true_is_a_bool(tmp_path: Path) -> None:
    (tmp_path / ".govern.toml").write_text("allow-includes-outside-root = true\n", encoding="utf-8")
    assert load_config(tmp_path).allow_includes_outside_root is True


# Arbitrary values for every known key, written as TOML.

_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
    | st.sampled_from(
        ["strict", "never", "error", "above", "line", "reason", "https://x/{id}", "{id}", "*"]
    )
    | st.dates()
    | st.datetimes()
)
_values: st.SearchStrategy[Any] = st.recursive(
    _leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet=st.characters(codec="utf-8"), max_size=10), children)
    ),
    max_leaves=10,
)
_annotation_tables = st.lists(
    st.dictionaries(st.sampled_from(sorted(ANNOTATION_KEYS)), _values, max_size=6)
    | st.fixed_dictionaries(
        {"package": st.sampled_from(["attrs", "cupy-cuda13x"])},
        optional=dict.fromkeys(sorted(ANNOTATION_KEYS - {"package"}), _values),
    ),
    max_size=3,
)


def _toml_string(text: str) -> str:
    # JSON escapes are TOML escapes; DEL must be escaped in TOML, not in JSON.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def to_toml(value: Any) -> str | None:
    """A TOML value for ``value`` (``None`` has none)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, date):  # and datetime: both are TOML literals
        return value.isoformat()
    if isinstance(value, list):
        items = [t for t in (to_toml(v) for v in value) if t is not None]
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        pairs = [
            f"{_toml_string(k)} = {t}" for k, v in value.items() if (t := to_toml(v)) is not None
        ]
        return "{" + ", ".join(pairs) + "}"
    raise TypeError(type(value))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    table=st.dictionaries(
        st.sampled_from(sorted(TOOL_KEYS - {"annotations"})), _values, max_size=4
    ),
    annotations=st.none() | _values | _annotation_tables,
    pyproject=st.booleans(),
)
def test_arbitrary_config_values_never_are_an_internal_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    table: dict[str, Any],
    annotations: Any,
    pyproject: bool,
) -> None:
    for name in (".govern.toml", "pyproject.toml"):
        (tmp_path / name).unlink(missing_ok=True)
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    lines = [f"{json.dumps(k)} = {t}" for k, v in table.items() if (t := to_toml(v)) is not None]
    if (t := to_toml(annotations)) is not None:
        lines.append(f"annotations = {t}")
    body = "\n".join(lines) + "\n"
    if pyproject:
        (tmp_path / "pyproject.toml").write_text("[tool.govern]\n" + body, encoding="utf-8")
    else:
        (tmp_path / ".govern.toml").write_text(body, encoding="utf-8")
    code, _, err = run(["audit", str(tmp_path), "--as-of", "2026-06-01"], capsys)
    event(f"exit {code}")
    assert "internal error" not in err
    assert code in (0, 1, 2)
    if code == 2:
        lines = err.splitlines()
        assert lines[0].startswith("govern: error: ")
        assert lines[1].startswith("Tip: ")


@pytest.mark.parametrize("where", ["config", "option"])
def test_a_policy_name_too_long_for_a_path_is_exit_2_with_a_tip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    name = "p" * 300
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    argv = ["audit", str(tmp_path)]
    if where == "config":
        (tmp_path / ".govern.toml").write_text(f'policy = "{name}"\n', encoding="utf-8")
    else:
        argv += ["--policy", name]
    code, _, err = run(argv, capsys)
    assert code == 2
    assert_config_error(err, "policy")


def test_watcher_settings(tmp_path: Path) -> None:
    from govern.config import ProfileConfig

    (tmp_path / ".govern.toml").write_text(
        'index-url = "https://index.example.org/simple"\n'
        'extra-index-urls = ["https://extra.example.org/simple"]\n'
        "minimum-release-age = 7\n"
        "[indexes]\n"
        'Internal_Lib = "https://pkgs.example.org/simple"\n'
        "[profiles.cuda13]\n"
        'python = "3.12"\n'
        'platforms = ["manylinux_2_28_x86_64"]\n'
        "allow-sdist = true\n"
        "[profiles.arm]\n"
        'python = "3.11"\n'
        'platforms = ["manylinux_2_28_aarch64"]\n'
        "minimum-release-age = 2\n",
        encoding="utf-8",
    )
    config = load_config(tmp_path)
    assert config.index_url == "https://index.example.org/simple"
    assert config.extra_index_urls == ("https://extra.example.org/simple",)
    assert config.indexes == (("internal-lib", "https://pkgs.example.org/simple"),)
    assert config.minimum_release_age == 7
    assert config.profiles == (
        ProfileConfig(
            name="arm",
            python="3.11",
            platforms=("manylinux_2_28_aarch64",),
            minimum_release_age=2,
        ),
        ProfileConfig(
            name="cuda13", python="3.12", platforms=("manylinux_2_28_x86_64",), allow_sdist=True
        ),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('index-url = "index.example.org"', "is not an http(s):// URL"),
        ("minimum-release-age = -1", "must be a number of days"),
        ('minimum-release-age = "7"', "must be a number of days"),
        ('[profiles.x]\npython = "three"', "is not a version"),
        ("[profiles.x]\ncolour = 1", "unknown key(s) colour in profile x"),
        ('[profiles.x]\nallow-sdist = "yes"', "must be true or false"),
        ("indexes = 3", "indexes must be a table"),
    ],
)
def test_bad_watcher_settings(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / ".govern.toml").write_text(text + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path)
    assert message in raised.value.message


def test_an_odd_package_name_in_indexes_keeps_the_message_on_one_line(tmp_path: Path) -> None:
    """Found by the property test above: a key holding a newline split the message."""
    (tmp_path / ".govern.toml").write_text('[indexes]\n"a\\nb" = ""\n', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path)
    assert "\n" not in raised.value.message
    assert "indexes.'a\\nb'" in raised.value.message


def test_propose_in_pyproject_and_in_govern_toml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.govern.propose]\nvia = "github"\nremote = "upstream"\n'
        'token-env = "GH_TOKEN"\npackages = { "CuPy_CUDA13x" = "remind" }\n'
    )
    propose = load_config(tmp_path).propose
    assert (propose.via, propose.remote, propose.token_env) == ("github", "upstream", "GH_TOKEN")
    assert propose.mode_for("cupy-cuda13x") == "remind"
    assert propose.mode_for("numpy") == "pull-request"
    other = tmp_path / "other"
    other.mkdir()
    (other / ".govern.toml").write_text('[propose]\nvia = "git"\npropose = "none"\n')
    assert load_config(other).propose.mode_for("numpy") == "none"
    assert load_config(other).propose.remote == "origin"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('via = "svn"', "via"),
        ('token-env = "ghp_abc def"', "token-env"),
        ('packages = { numpy = "sometimes" }', "packages"),
        ('colour = "blue"', "colour"),
    ],
)
def test_a_bad_propose_table_is_a_config_error(tmp_path: Path, body: str, said: str) -> None:
    (tmp_path / ".govern.toml").write_text(f"[propose]\n{body}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert said in caught.value.message


@pytest.mark.parametrize(
    ("table", "wanted"),
    [
        (
            'exclusions = { "not-an-id" = "none" }',
            "propose.exclusions must map exclusion ids (16 hex digits",
        ),
        ('exclusions = { "0123456789abcdef" = "later" }', "to one of pull-request, remind"),
        ('author = "bot@example.org"', "propose.author must read Name <email>"),
    ],
)
def test_propose_exclusions_and_author_are_checked(tmp_path: Path, table: str, wanted: str) -> None:
    (tmp_path / ".govern.toml").write_text(f"[propose]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert wanted in caught.value.message


def test_propose_modes_go_exclusion_then_package_then_repository(tmp_path: Path) -> None:
    (tmp_path / ".govern.toml").write_text(
        '[propose]\npropose = "remind"\nauthor = "Release Bot <bot@example.org>"\n'
        'packages = { "CuPy_Cuda13x" = "pull-request" }\n'
        'exclusions = { "0123456789abcdef" = "none" }\n',
        encoding="utf-8",
    )
    settings = load_config(tmp_path).propose
    assert settings.mode_for("cupy-cuda13x", "0123456789abcdef") == "none"
    assert settings.mode_for("cupy-cuda13x", "fedcba9876543210") == "pull-request"
    assert settings.mode_for("numpy") == "remind"
    assert settings.author_identity() == ("Release Bot", "bot@example.org")


def test_the_variables_configuration_reads_secrets_from(tmp_path: Path) -> None:
    """Whatever they are called: the forge's token and App key, the webhook's URL, the SMTP
    login, the dashboard's and every CI table's ``*-env``."""
    (tmp_path / ".govern.toml").write_text(
        '[propose]\nvia = "github"\ntoken-env = "FORGE_PAT"\napp-id = 1\n'
        'installation-id = 2\nprivate-key-env = "APP_PEM"\n'
        '[notify]\nchannels = ["webhook"]\nwebhook-url-env = "SLACK_WEBHOOK_URL"\n'
        'smtp-user-env = "MAIL_LOGIN"\nsmtp-password-env = "MAIL_PASS"\n'
        '[web]\ntoken-env = "DASHBOARD_KEY"\n'
        '[ci.bk]\nprovider = "buildkite"\ntoken-env = "BK_ACCESS"\n',
        encoding="utf-8",
    )
    names = load_config(tmp_path).secret_variables()
    assert {
        "FORGE_PAT",
        "APP_PEM",
        "SLACK_WEBHOOK_URL",
        "MAIL_LOGIN",
        "MAIL_PASS",
        "DASHBOARD_KEY",
        "BK_ACCESS",
    } <= names
    assert "GOVERN_GITHUB_WEBHOOK_SECRET" in names  # the dashboard's defaults too


def test_relax_strategy_is_checked(tmp_path: Path) -> None:
    from govern.config import parse_config

    assert parse_config({"relax-strategy": "keep-ceiling"}, tmp_path).relax_strategy == (
        "keep-ceiling"
    )
    with pytest.raises(ConfigError, match="relax-strategy"):
        parse_config({"relax-strategy": "raise-the-roof"}, tmp_path)
    with pytest.raises(ConfigError, match="strategy must be one of exclude, keep-ceiling"):
        parse_config({"annotations": [{"package": "demo", "strategy": "nope"}]}, tmp_path)
