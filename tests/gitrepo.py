"""Scratch git repositories for tests: real git, isolated from the user's configuration."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

AUTHOR = "Ada Lovelace"


class Repo:
    """A scratch repository; every git call gets an explicit, isolated environment."""

    def __init__(self, root: Path) -> None:
        """Create an empty repository (branch ``main``) at root."""
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "--initial-branch=main")

    def env(self, when: str, author: str) -> dict[str, str]:
        """The environment of one git call: no user config, fixed dates and identity."""
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_DATE": when,
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": "ada@example.org",
            "LC_ALL": "C",
        }

    def git(
        self,
        *args: str,
        when: str = "2024-01-01T00:00:00+00:00",
        author: str = AUTHOR,
        stdin: bytes | None = None,
    ) -> str:
        """Run git in the repository and return its stdout (fails the test on an error)."""
        proc = subprocess.run(
            ["git", "-c", "user.name=Committer", "-c", "user.email=c@example.org", *args],
            cwd=self.root,
            env=self.env(when, author),
            input=stdin,
            capture_output=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        return proc.stdout.decode("utf-8", "surrogateescape")

    def write(self, path: str, content: str | bytes) -> None:
        """Write a file in the working tree (str as UTF-8), creating directories."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)

    def commit(
        self,
        message: str,
        when: str,
        files: Mapping[str, str | bytes | None] | None = None,
        *,
        author: str = AUTHOR,
    ) -> str:
        """Write files (None deletes one), stage everything and commit; returns the sha."""
        for path, content in (files or {}).items():
            if content is None:
                (self.root / path).unlink()
            else:
                self.write(path, content)
        self.git("add", "--all")
        self.git(
            "commit",
            "-q",
            "--allow-empty",
            "--cleanup=whitespace",  # keep "#..." lines: they are message text here
            "-F",
            "-",
            when=when,
            author=author,
            stdin=message.encode(),
        )
        return self.git("rev-parse", "HEAD").strip()
