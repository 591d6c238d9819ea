"""The one-file push on real git: a local bare origin, a clone with uncommitted work."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from gitrepo import Repo

import govern.git.push as push_module
from fakes import githttp
from govern.errors import ForgeAuthError, ForgeError
from govern.git import runner
from govern.git.push import TRAILER, Pusher, PushError, PushOutcome


def _git(cwd: Path, *args: str) -> str:
    """Run git with no user configuration; its stdout (fails the test on an error)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin whose main holds pyproject.toml (executable, to check the mode kept)."""
    seed = Repo(tmp_path / "seed")
    seed.write("pyproject.toml", "[project]\nname = 'x'\n")
    seed.write("README", "hello\n")
    seed.git("add", ".")
    seed.git("update-index", "--chmod=+x", "pyproject.toml")
    seed.git("commit", "-q", "-m", "start")
    bare = tmp_path / "origin.git"
    _git(tmp_path, "clone", "-q", "--bare", str(seed.root), str(bare))
    return bare


@pytest.fixture
def clone(tmp_path: Path, origin: Path) -> Path:
    """The user's clone, with uncommitted changes that must survive every push."""
    root = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(origin), str(root))
    (root / "README").write_text("edited, not committed\n")
    (root / "new.txt").write_text("untracked\n")
    _git(root, "add", "new.txt")
    return root


def _state(root: Path) -> tuple[str, ...]:
    """Everything the user sees of their clone: status, HEAD, index, refs, files."""
    return (
        _git(root, "status", "--porcelain=v2", "--branch"),
        _git(root, "rev-parse", "HEAD"),
        _git(root, "ls-files", "-s"),
        _git(root, "for-each-ref"),
        (root / "README").read_text(),
        (root / "new.txt").read_text(),
    )


def _pusher(clone: Path) -> Pusher:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(clone), "GIT_CONFIG_NOSYSTEM": "1"}
    return Pusher(clone, environ={**env, "GIT_CONFIG_GLOBAL": os.devnull})


def _push(
    pusher: Pusher, content: str, base: str = "main", ours: tuple[str, ...] = ()
) -> tuple[str, bool]:
    pushed = pusher.push(
        branch="govern/x",
        base=base,
        path="pyproject.toml",
        content=content.encode(),
        message="Relax x\n\nEvidence: 3 green runs.",
        key="p-1",
        ours=ours,
    )
    assert pushed.branch == "govern/x"
    return pushed.sha, pushed.unchanged


def test_push_once_then_unchanged_then_updated(origin: Path, clone: Path) -> None:
    before = _state(clone)
    pusher = _pusher(clone)
    assert pusher.default_branch() == "main"
    assert pusher.branch_head("govern/x") is None

    sha, unchanged = _push(pusher, "[project]\nname = 'y'\n")
    assert not unchanged
    assert pusher.branch_head("govern/x") == sha
    main = _git(origin, "rev-parse", "main").strip()
    assert _git(origin, "rev-list", "--parents", "-n", "1", sha).split() == [sha, main]
    assert _git(origin, "diff", "--name-only", main, sha).split() == ["pyproject.toml"]
    assert _git(origin, "ls-tree", sha, "pyproject.toml").startswith("100755 blob")
    assert _git(origin, "show", f"{sha}:pyproject.toml") == "[project]\nname = 'y'\n"
    message = _git(origin, "log", "-1", "--format=%B%an <%ae>", sha)
    assert "Evidence: 3 green runs." in message
    assert f"{TRAILER}: p-1" in message
    assert message.rstrip().endswith("govern <govern@localhost>")
    assert pusher.read("pyproject.toml", base="main") == b"[project]\nname = 'x'\n"
    assert pusher.read("missing.toml", base="main") is None

    again, unchanged = _push(pusher, "[project]\nname = 'y'\n")
    assert (again, unchanged) == (sha, True)
    assert _git(origin, "rev-list", "--count", "govern/x").strip() == "2"

    newer, unchanged = _push(pusher, "[project]\nname = 'z'\n", ours=(sha,))
    assert not unchanged
    assert newer != sha
    assert _git(origin, "rev-parse", "govern/x").strip() == newer
    assert _git(origin, "rev-list", "--count", "govern/x").strip() == "2"
    assert _state(clone) == before


def test_base_moved_rebuilds(tmp_path: Path, origin: Path, clone: Path) -> None:
    pusher = _pusher(clone)
    first, _ = _push(pusher, "[project]\nname = 'y'\n")
    other = tmp_path / "other"
    _git(tmp_path, "clone", "-q", str(origin), str(other))
    (other / "README").write_text("moved\n")
    _git(other, "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-qam", "move")
    _git(other, "push", "-q", "origin", "main")

    rebuilt, unchanged = _push(pusher, "[project]\nname = 'y'\n")
    assert not unchanged
    assert rebuilt != first
    main = _git(origin, "rev-parse", "main").strip()
    assert _git(origin, "rev-list", "--parents", "-n", "1", rebuilt).split() == [rebuilt, main]


def test_rejected_push_is_a_clean_forge_error(origin: Path, clone: Path) -> None:
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'branch is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(ForgeError) as caught:
        _push(_pusher(clone), "[project]\nname = 'y'\n")
    assert isinstance(caught.value, PushError)
    assert "rejected" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_base_and_odd_names(clone: Path) -> None:
    pusher = _pusher(clone)
    with pytest.raises(PushError, match="no branch 'nope'"):
        pusher.read("pyproject.toml", base="nope")
    with pytest.raises(PushError, match="plain branch name"):
        pusher.branch_head("--upload-pack=x")
    with pytest.raises(PushError, match="nothing to propose"):
        _push(pusher, "[project]\nname = 'x'\n")


def test_token_over_http_through_askpass(
    tmp_path: Path, origin: Path, clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "s3cr3t-token-value"
    argvs: list[list[str]] = []
    real = runner.run

    def recording(executable: str, args: Sequence[str], **kwargs: Any) -> Any:
        argvs.append([executable, *args])
        script = kwargs["env"].get("GIT_ASKPASS")
        if script is not None:  # the script reads the token from the environment
            assert token not in Path(script).read_text()
        return real(executable, args, **kwargs)

    monkeypatch.setattr(push_module, "run", recording)
    with githttp.serve(tmp_path, user="x-access-token", password=token) as (base, seen):
        _git(clone, "remote", "set-url", "origin", f"{base}/origin.git")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(clone), "GIT_CONFIG_NOSYSTEM": "1"}
        env |= {"GIT_CONFIG_GLOBAL": os.devnull, "GOVERN_TEST_TOKEN": token}
        pusher = Pusher(clone, token_env="GOVERN_TEST_TOKEN", environ=env)
        sha, unchanged = _push(pusher, "[project]\nname = 'y'\n")
        assert not unchanged
        assert _git(origin, "rev-parse", "govern/x").strip() == sha
        assert "x-access-token" in seen

        wrong = Pusher(
            clone, token_env="GOVERN_TEST_TOKEN", environ={**env, "GOVERN_TEST_TOKEN": "bad"}
        )
        with pytest.raises(ForgeAuthError) as caught:
            wrong.branch_head("govern/x")
        assert "bad" not in str(caught.value)
        assert argvs
        assert all(token not in arg for argv in argvs for arg in argv)
        assert token not in repr(pusher) + pusher.url


def test_a_tip_govern_did_not_push_is_left_alone(tmp_path: Path, origin: Path, clone: Path) -> None:
    pusher = _pusher(clone)
    sha, _ = _push(pusher, "[project]\nname = 'y'\n")
    other = tmp_path / "reviewer"
    _git(tmp_path, "clone", "-q", "-b", "govern/x", str(origin), str(other))
    (other / "README").write_text("fix-up\n")
    _git(other, "-c", "user.name=R", "-c", "user.email=r@b", "commit", "-qam", "fix-up")
    _git(other, "push", "-q", "origin", "govern/x")
    fixed = _git(origin, "rev-parse", "govern/x").strip()
    pushed = pusher.push(
        branch="govern/x",
        base="main",
        path="pyproject.toml",
        content=b"[project]\nname = 'z'\n",
        message="Relax x",
        key="p-1",
        ours=(sha,),
    )
    assert (pushed.outcome, pushed.sha) == (PushOutcome.FOREIGN, fixed)
    assert _git(origin, "rev-parse", "govern/x").strip() == fixed, "the fix-up survives"


def _headless(origin: Path, clone: Path) -> None:
    """The origin's HEAD names a branch never pushed; the clone forgets what it named."""
    _git(origin, "symbolic-ref", "HEAD", "refs/heads/gone")
    _git(clone, "remote", "set-head", "origin", "-d")


def test_a_remote_head_naming_no_branch_falls_back_to_the_clones_default(
    origin: Path, clone: Path
) -> None:
    _headless(origin, clone)
    assert "ref:" not in _git(clone, "ls-remote", "--symref", "origin", "HEAD")
    pusher = _pusher(clone)
    assert pusher.default_branch() == "main"  # the current branch, which tracks origin
    _, unchanged = _push(pusher, "[project]\nname = 'y'\n", base=pusher.default_branch())
    assert not unchanged
    assert (
        _git(origin, "rev-parse", "govern/x^").strip() == _git(origin, "rev-parse", "main").strip()
    )


def test_no_default_branch_anywhere_fails_with_the_tip_to_set_base(
    origin: Path, clone: Path
) -> None:
    _headless(origin, clone)
    _git(clone, "checkout", "-q", "-b", "topic")  # tracks nothing
    _git(clone, "branch", "-q", "-m", "main", "trunk")  # no local main or master
    with pytest.raises(PushError, match="does not name a default branch") as raised:
        _pusher(clone).default_branch()
    assert raised.value.tip is not None
    assert 'base = "main"' in raised.value.tip
