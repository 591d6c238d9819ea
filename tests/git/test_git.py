"""Tests for :mod:`govern.git.history` and :mod:`govern.git.runner` on real repositories."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from gitrepo import AUTHOR, Repo

from govern.errors import GovernError
from govern.git import runner
from govern.git.history import Commit, Git, Revision, pull_request_number
from govern.git.runner import GitError


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """An empty repository at tmp_path/repo."""
    return Repo(tmp_path / "repo")


@pytest.fixture
def count_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argv of every subprocess.run call made while the test runs (git still runs)."""
    calls: list[list[str]] = []
    real_run: Callable[..., Any] = subprocess.run

    def counting_run(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.append(list(argv))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting_run)
    return calls


def day(n: int, clock: str = "12:00:00", zone: str = "+00:00") -> str:
    """An ISO date in January 2024 for GIT_*_DATE."""
    return f"2024-01-{n:02d}T{clock}{zone}"


def subcommands(calls: list[list[str]]) -> list[str]:
    """The git subcommand of each recorded call (the first argument not an option)."""
    names = []
    for argv in calls:
        args = iter(argv[1:])
        for arg in args:
            if arg == "-c":
                next(args)
            elif not arg.startswith("-"):
                names.append(arg)
                break
    return names


# -- pull_request_number ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Pin numpy below 2 (#43530)", 43530),
        ("Pin numpy below 2 (#43530)\n\nLong description.\n", 43530),
        ("Pin numpy (#43530)  \n", 43530),
        ("Backport: pin numpy (#43530) (#43601)", 43601),
        ('Revert "Pin numpy (#43530)" (#43700)', 43700),
        ("Merge pull request #12 from a/b", 12),
        ("Merge pull request #12 from octo-org/fix-pin\n\nPin numpy", 12),
        ("Bump numpy\n\nCloses #5\n\nSee merge request g/p!7", 7),
        ("Bump numpy\n\nSee merge request group/sub/project!1234\n", 1234),
        ("Merged in feature/pin (pull request #31)\n\nPin numpy", 31),
        ("Merged PR 88: pin numpy", 88),
        ("Pin numpy\n\nFixes #99", None),
        ("Pin numpy\n\n(#99)", None),  # only the subject's trailing (#N) is a squash merge
        ("Pin numpy, see #99 for why", None),
        ('Revert "Pin numpy (#43530)"', None),
        ("Pin numpy (#abc)", None),
        ("Pin numpy", None),
        ("", None),
    ],
)
def test_pull_request_number(message: str, expected: int | None) -> None:
    assert pull_request_number(message) == expected


# -- file_history --------------------------------------------------------------------------------


def test_file_history_oldest_first_with_dates_subjects_and_pull_requests(repo: Repo) -> None:
    first = repo.commit("Add requirements", day(1), {"requirements.txt": "numpy\n"})
    second = repo.commit(
        "Pin numpy below 2 (#43530)\n\nFixes #99",
        day(2, "10:30:00", "+02:00"),
        {"requirements.txt": "numpy<2\n"},
        author="Grace Hopper",
    )
    repo.commit("Unrelated", day(3), {"README.md": "hi\n"})
    fourth = repo.commit(
        "Bump numpy\n\nSee merge request g/p!7", day(4), {"requirements.txt": "numpy<3\n"}
    )

    history = Git(repo.root).file_history("requirements.txt")

    assert [r.commit.sha for r in history] == [first, second, fourth]
    assert [r.commit.subject for r in history] == [
        "Add requirements",
        "Pin numpy below 2 (#43530)",
        "Bump numpy",
    ]
    assert [r.commit.pull_request for r in history] == [None, 43530, 7]
    assert [r.commit.author for r in history] == [AUTHOR, "Grace Hopper", AUTHOR]
    assert all(r.path == "requirements.txt" and not r.deleted for r in history)
    assert history[1].commit.date == datetime(
        2024, 1, 2, 10, 30, tzinfo=timezone(timedelta(hours=2))
    )
    assert history[1].commit.date.utcoffset() == timedelta(hours=2)
    assert history[0].commit == Commit(
        first, datetime(2024, 1, 1, 12, tzinfo=UTC), AUTHOR, "Add requirements", None
    )


def test_file_history_since_keeps_commits_from_midnight_utc(repo: Repo) -> None:
    repo.commit("one", day(1), {"r.txt": "1\n"})
    repo.commit("late on the 2nd", day(2, "23:59:59"), {"r.txt": "2\n"})
    repo.commit("the 3rd east of UTC", day(3, "01:00:00", "+02:00"), {"r.txt": "3\n"})
    repo.commit("midnight", day(3, "00:00:00"), {"r.txt": "4\n"})
    repo.commit("five", day(5), {"r.txt": "5\n"})
    git = Git(repo.root)

    assert [r.commit.subject for r in git.file_history("r.txt", since=date(2024, 1, 3))] == [
        "midnight",
        "five",
    ]
    assert len(git.file_history("r.txt", since=date(2023, 1, 1))) == 5
    assert git.file_history("r.txt", since=date(2024, 2, 1)) == []


def test_file_history_follows_a_rename(repo: Repo) -> None:
    content = "".join(f"package-{i}==1.{i}\n" for i in range(20))
    repo.commit("Add", day(1), {"requirements.txt": content})
    (repo.root / "requirements").mkdir()
    repo.git("mv", "requirements.txt", "requirements/base.txt")
    repo.write("requirements/base.txt", content + "extra==1\n")
    repo.commit("Move requirements (#5)", day(2))
    repo.commit("Edit", day(3), {"requirements/base.txt": content + "extra==2\n"})

    history = Git(repo.root).file_history("requirements/base.txt")

    assert [(r.commit.subject, r.path, r.deleted) for r in history] == [
        ("Add", "requirements.txt", False),
        ("Move requirements (#5)", "requirements/base.txt", False),
        ("Edit", "requirements/base.txt", False),
    ]


def test_file_history_of_a_deleted_file(repo: Repo) -> None:
    repo.commit("Add", day(1), {"constraints.txt": "a==1\n", "keep": "x\n"})
    repo.commit("Edit", day(2), {"constraints.txt": "a==2\n"})
    gone = repo.commit("Drop constraints (#9)", day(3), {"constraints.txt": None})

    history = Git(repo.root).file_history("constraints.txt")

    assert [r.deleted for r in history] == [False, False, True]
    assert history[-1] == Revision(history[-1].commit, "constraints.txt", deleted=True)
    assert history[-1].commit.sha == gone
    assert history[-1].commit.pull_request == 9


def test_file_history_shows_a_merged_branch_as_its_merge_commit(repo: Repo) -> None:
    repo.commit("Add", day(1), {"requirements.txt": "numpy\n"})
    repo.git("checkout", "-q", "-b", "fix-pin")
    repo.commit("Pin numpy on the branch", day(2), {"requirements.txt": "numpy<2\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("Unrelated on main", day(3), {"README.md": "hi\n"})
    repo.git(
        "merge",
        "-q",
        "--no-ff",
        "fix-pin",
        "-m",
        "Merge pull request #12 from a/fix-pin",
        when=day(4),
    )
    merge = repo.git("rev-parse", "HEAD").strip()

    history = Git(repo.root).file_history("requirements.txt")

    assert [r.commit.subject for r in history] == ["Add", "Merge pull request #12 from a/fix-pin"]
    assert history[-1].commit.sha == merge
    assert history[-1].commit.pull_request == 12
    assert history[-1].commit.date == datetime(2024, 1, 4, 12, tzinfo=UTC)
    assert history[-1].path == "requirements.txt"


def test_file_history_unknown_path_and_empty_repository(repo: Repo) -> None:
    git = Git(repo.root)
    assert git.head() is None
    assert git.file_history("requirements.txt") == []
    assert git.blame("requirements.txt") == {}

    sha = repo.commit("Add", day(1), {"requirements.txt": "numpy\n"})
    assert git.head() == sha
    assert git.file_history("nope.txt") == []


def test_file_history_accepts_an_absolute_path_and_rejects_one_outside(
    repo: Repo, tmp_path: Path
) -> None:
    repo.commit("Add", day(1), {"sub/r.txt": "numpy\n"})
    git = Git(repo.root)

    assert [r.path for r in git.file_history(str(repo.root / "sub" / "r.txt"))] == ["sub/r.txt"]
    with pytest.raises(GitError, match="outside the git repository"):
        git.file_history(str(tmp_path / "elsewhere.txt"))
    with pytest.raises(GitError, match="does not name a file"):
        git.file_history("../repo/sub/r.txt")
    with pytest.raises(GitError, match="does not name a file"):
        git.blame(".")


def test_file_history_is_one_process(repo: Repo, count_runs: list[list[str]]) -> None:
    for n in range(1, 8):
        repo.commit(f"Change {n} (#{n})", day(n), {"r.txt": f"{n}\n"})
    git = Git(repo.root)
    count_runs.clear()

    history = git.file_history("r.txt")

    assert [r.commit.pull_request for r in history] == list(range(1, 8))
    assert subcommands(count_runs) == ["log"]


def test_a_commit_message_with_awkward_characters_round_trips(repo: Repo) -> None:
    subject = "Pin \"numpy\" 'below' $(rm -rf /) `id` ; | & \\ %H %x1e — ü 日本 🐍"
    body = "Body with \x1e and \x1f separators,\n%B and (#1) mid-line\n\nSee merge request g/p!77"
    repo.commit("Add", day(1), {"r.txt": "1\n"})
    repo.commit(f"{subject}\n\n{body}\n", day(2), {"r.txt": "2\n"}, author="Zoë O'Brien-日本")
    repo.commit("After (#3)", day(3), {"r.txt": "3\n"})

    history = Git(repo.root).file_history("r.txt")

    assert [r.commit.subject for r in history] == ["Add", subject, "After (#3)"]
    assert history[1].commit.author == "Zoë O'Brien-日本"
    assert history[1].commit.pull_request == 77
    assert history[2].commit.pull_request == 3


# -- read_blobs ----------------------------------------------------------------------------------


def test_read_blobs_several_pairs_in_order_with_missing_ones(
    repo: Repo, count_runs: list[list[str]]
) -> None:
    binary = bytes(range(256)) + b"\r\n\0\n"
    first = repo.commit("Add", day(1), {"requirements.txt": "numpy\n", "blob.bin": binary})
    repo.git("mv", "requirements.txt", "base.txt")
    second = repo.commit("Move", day(2), {"base.txt": "numpy<2\n", "empty.txt": ""})
    git = Git(repo.root)
    count_runs.clear()

    blobs = git.read_blobs(
        [
            (second, "base.txt"),
            (first, "requirements.txt"),
            (first, "base.txt"),  # not yet created
            (second, "requirements.txt"),  # moved away
            (first, "blob.bin"),
            (second, "empty.txt"),
            ("0" * 40, "base.txt"),  # no such commit
            (second, "."),  # a directory, not a file
            (second, "new\nline"),  # cannot be asked in batch mode
            (first, "requirements.txt"),
        ]
    )

    assert blobs == [
        b"numpy<2\n",
        b"numpy\n",
        None,
        None,
        binary,
        b"",
        None,
        None,
        None,
        b"numpy\n",
    ]
    assert subcommands(count_runs) == ["cat-file"]
    assert git.read_blobs([]) == []


def test_read_blobs_of_a_tree_entry_is_none(repo: Repo) -> None:
    sha = repo.commit("Add", day(1), {"requirements/base.txt": "numpy\n"})
    assert Git(repo.root).read_blobs([(sha, "requirements"), (sha, "requirements/base.txt")]) == [
        None,
        b"numpy\n",
    ]


# -- file_patches ---------------------------------------------------------------------------------


def _replayed(git: Git, path: str) -> list[bytes | None]:
    """Each version of path rebuilt from the first by the patches (None where one fails)."""
    history = git.file_history(path)
    patches = git.file_patches(path, after=history[0].commit.sha)
    (first,) = git.read_blobs([(history[0].commit.sha, history[0].path)])
    assert first is not None
    lines: list[bytes] | None = first.splitlines(keepends=True)
    out: list[bytes | None] = [first]
    for revision in history[1:]:
        patch = patches[revision.commit.sha]
        lines = patch.apply(lines) if lines is not None else None
        out.append(b"".join(lines) if lines is not None else None)
    return out


def test_file_patches_rebuild_every_version_exactly(
    repo: Repo, count_runs: list[list[str]]
) -> None:
    versions = [
        "numpy<2\nattrs\n",
        "numpy<3\nattrs\n-- odd\n+++ odd\n",  # lines that look like diff headers
        "# reason\nnumpy<3\r\nattrs",  # CRLF, and no newline at the end
        "numpy<3\r\nattrs\nsix\n",
        "",
        "six\n",
    ]
    for number, text in enumerate(versions):
        repo.commit(f"v{number} (#{number})", day(number + 1), {"requirements.txt": text})
    repo.git("mv", "requirements.txt", "base.txt")
    repo.commit("Move", day(9))
    repo.commit("Edit", day(10), {"base.txt": "six\nnumpy!=1.0\n"})
    git = Git(repo.root)
    count_runs.clear()
    rebuilt = _replayed(git, "base.txt")
    assert rebuilt == [v.encode() for v in (*versions, "six\n", "six\nnumpy!=1.0\n")]
    log_runs = [argv for argv in count_runs if "log" in argv]
    assert sum("-p" in argv for argv in log_runs) == 1  # one git log -p for the whole history


def test_a_patch_that_does_not_give_its_blob_is_refused(repo: Repo) -> None:
    repo.commit("Add", day(1), {"r.txt": "a\nb\n"})
    second = repo.commit("Edit", day(2), {"r.txt": "a\nc\n"})
    patch = Git(repo.root).file_patches("r.txt")[second]
    assert patch.apply([b"a\n", b"b\n"]) == [b"a\n", b"c\n"]
    assert patch.apply([b"x\n", b"b\n"]) is None  # not the version it was made from
    assert patch.apply([b"a\n"]) is None  # a hunk past the end


def test_a_binary_change_is_not_applied(repo: Repo) -> None:
    repo.commit("Add", day(1), {"r.txt": b"a\0\n"})
    second = repo.commit("Edit", day(2), {"r.txt": b"b\0\n"})
    patch = Git(repo.root).file_patches("r.txt")[second]
    assert not patch.usable
    assert patch.apply([b"a\0\n"]) is None


# -- blame ---------------------------------------------------------------------------------------


def test_blame_maps_lines_to_commits_and_leaves_out_uncommitted_lines(repo: Repo) -> None:
    repo.commit("Add (#1)", day(1), {"requirements.txt": "a\nb\nc\n", "other": "x\n"})
    repo.commit("Pin b (#2)", day(2), {"requirements.txt": "a\nb<2\nc\n"})
    repo.commit("Unrelated", day(3), {"other": "y\n"})
    repo.write("requirements.txt", "a\nb<2\nc, edited\nd\n")  # not committed
    git = Git(repo.root)
    first, second = (r.commit for r in git.file_history("requirements.txt"))

    blame = git.blame("requirements.txt")

    assert blame == {1: first, 2: second}
    assert blame[2].pull_request == 2
    assert blame[1].subject == "Add (#1)"


def test_blame_of_paths_git_does_not_know(repo: Repo) -> None:
    repo.commit("Add", day(1), {"requirements.txt": "a\n"})
    repo.write("untracked.txt", "x\n")
    git = Git(repo.root)

    assert git.blame("untracked.txt") == {}
    assert git.blame("missing.txt") == {}


def test_blame_is_one_blame_and_one_log(repo: Repo, count_runs: list[list[str]]) -> None:
    for n in range(1, 6):
        lines = "".join(f"{i}{'*' if i == n else ''}\n" for i in range(1, 6))
        repo.commit(f"Line {n} (#{n})", day(n), {"r.txt": lines})
    git = Git(repo.root)
    count_runs.clear()

    blame = git.blame("r.txt")

    # change n stars line n and un-stars line n - 1
    assert {line: commit.pull_request for line, commit in blame.items()} == {
        1: 2,
        2: 3,
        3: 4,
        4: 5,
        5: 5,
    }
    assert subcommands(count_runs) == ["blame", "log"]


# -- paths with spaces and unicode ---------------------------------------------------------------


def test_a_path_with_spaces_and_unicode(repo: Repo) -> None:
    path = "deps dir/requirements ü 日本 (prod).txt"
    first = repo.commit("Add", day(1), {path: "numpy\n"})
    repo.commit("Pin (#4)", day(2), {path: "numpy<2\n"})
    git = Git(repo.root)

    history = git.file_history(path)
    assert [(r.path, r.commit.pull_request) for r in history] == [(path, None), (path, 4)]
    assert git.read_blobs([(first, path)]) == [b"numpy\n"]
    assert [c.pull_request for c in git.blame(path).values()] == [4]
    assert git.file_history("deps dir/requirements ? 日本 (prod).txt") == []  # no globbing


# -- opening a repository ------------------------------------------------------------------------


def test_discover_from_a_subdirectory_and_a_file(repo: Repo) -> None:
    repo.commit("Add", day(1), {"sub/dir/r.txt": "a\n"})

    from_dir = Git.discover(repo.root / "sub" / "dir")
    from_file = Git.discover(repo.root / "sub" / "dir" / "r.txt")
    from_missing = Git.discover(repo.root / "sub" / "not-yet" / "r.txt")

    assert from_dir is not None
    assert from_file is not None
    assert from_missing is not None
    assert from_dir.top == from_file.top == from_missing.top == repo.root.resolve()
    assert Git(repo.root / "sub").top == repo.root.resolve()


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory that is in no repository, even if tmp_path happens to be inside one."""
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    return plain


def test_discover_outside_a_repository_is_none(outside: Path) -> None:
    assert Git.discover(outside) is None


def test_opening_a_non_repository_is_a_git_error(outside: Path, tmp_path: Path) -> None:
    with pytest.raises(GitError, match="is not inside a git repository") as caught:
        Git(outside)
    assert caught.value.tip
    assert isinstance(caught.value, GovernError)
    with pytest.raises(GitError, match="is not a directory"):
        Git(tmp_path / "absent")


def test_a_missing_git_executable(repo: Repo) -> None:
    with pytest.raises(GitError) as caught:
        Git(repo.root, executable="/nonexistent/git")

    message = caught.value.message
    assert message == "cannot run git (/nonexistent/git): No such file or directory"
    assert "Traceback" not in message
    assert "Errno" not in message
    assert caught.value.tip is not None
    assert "Install git" in caught.value.tip
    assert caught.value.__cause__ is None
    assert Git.discover(repo.root, executable="/nonexistent/git") is None


def test_a_timeout_is_a_git_error(repo: Repo) -> None:
    with pytest.raises(GitError, match="did not finish within"):
        Git(repo.root, timeout=1e-9)


def test_repository_variables_from_a_git_hook_do_not_redirect(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sha = repo.commit("Add", day(1), {"r.txt": "a\n"})
    other = Repo(tmp_path / "other")
    other.commit("Other", day(2), {"o.txt": "b\n"})
    monkeypatch.setenv("GIT_DIR", str(other.root / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other.root))

    git = Git(repo.root)

    assert git.top == repo.root.resolve()
    assert git.head() == sha


def test_credentials_never_reach_a_message() -> None:
    text = "unable to access 'https://user:ghp_secret@github.com/o/r.git/' or ssh://tok@h/x"
    assert runner.strip_userinfo(text) == (
        "unable to access 'https://github.com/o/r.git/' or ssh://h/x"
    )
    error = runner.git_error(f"failed: {text}", tip="see https://a:b@c.example/")
    assert "secret" not in error.message
    assert "tok@" not in error.message
    assert error.tip == "see https://c.example/"


def test_values_are_frozen(repo: Repo) -> None:
    repo.commit("Add", day(1), {"r.txt": "a\n"})
    revision = Git(repo.root).file_history("r.txt")[0]
    with pytest.raises(AttributeError):
        revision.path = "x"  # type: ignore[misc]
