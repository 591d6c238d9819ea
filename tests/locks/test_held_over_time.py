"""What a lock held over time (govern/locks/history.py): the line-by-line reading of a
requirements-shaped lock gives what reading each revision whole gives."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from govern.git.history import Commit, Revision
from govern.locks.history import held_over_time, pins_in
from govern.sources.model import SourceFormat
from govern.store.views import LockHeld

START = datetime(2026, 1, 1, tzinfo=UTC)


def _revisions(texts: list[bytes | None]) -> list[Revision]:
    return [
        Revision(
            Commit(f"{n:040x}", START + timedelta(days=n), "bot", "bump", None),
            "upper-constraints.txt",
            deleted=text is None,
        )
        for n, text in enumerate(texts)
    ]


def _whole(texts: list[bytes | None], open_: tuple[LockHeld, ...] = ()) -> list[LockHeld]:
    """The same intervals, from every revision's pins read whole."""
    current = {(h.package, h.version): h for h in open_}
    out: list[LockHeld] = []
    for revision, text in zip(_revisions(texts), texts, strict=True):
        now = set() if text is None else pins_in(text, SourceFormat.COMPILED, revision.path)
        assert now is not None  # a requirements-shaped lock always reads
        for key in sorted(set(current) - now):
            h = current.pop(key)
            out.append(
                LockHeld(
                    h.package,
                    h.version,
                    h.since,
                    h.since_commit,
                    revision.commit.date,
                    revision.commit.sha,
                )
            )
        for package, version in sorted(now - set(current)):
            current[(package, version)] = LockHeld(
                package, version, revision.commit.date, revision.commit.sha
            )
    return out + [h for h in current.values() if h not in open_]


def _lock(rng: random.Random) -> bytes | None:
    if rng.random() < 0.05:
        return None  # deleted
    lines = []
    for name in ("Flask", "flask", "click", "Jinja2", "numpy"):
        if rng.random() < 0.7:
            marker = ' ; python_version < "3.12"' if rng.random() < 0.2 else ""
            lines.append(f"{name}=={rng.choice(['1.0', '1.1', '2.0'])}{marker}")
    lines.append("    # via -r requirements.in")
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=12))
def test_line_by_line_is_the_same_as_whole(seed: int, commits: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - a generated history, not a secret
    texts = [_lock(rng) for _ in range(commits)]
    line_by_line = held_over_time(_revisions(texts), texts, SourceFormat.COMPILED)
    assert sorted(line_by_line, key=repr) == sorted(_whole(texts), key=repr)
    # Continued from an earlier replay: what that left open closes or stays.
    cut = commits // 2
    first = held_over_time(_revisions(texts)[:cut], texts[:cut], SourceFormat.COMPILED)
    still = tuple(h for h in first if h.until is None)
    rest = held_over_time(_revisions(texts)[cut:], texts[cut:], SourceFormat.COMPILED, open_=still)
    closed = {(h.package, h.version, h.since_commit) for h in rest}
    joined = [h for h in first if h.until is not None] + rest
    joined += [h for h in still if (h.package, h.version, h.since_commit) not in closed]
    assert sorted(joined, key=repr) == sorted(line_by_line, key=repr)


def test_pins_in_reads_names_as_pep_503_and_skips_what_is_no_pin() -> None:
    text = (
        b"Flask_Login[extra] == 0.6.3 \\\n    --hash=sha256:ab\n"
        b"# a comment==1.0\n-r other.txt\nzope.interface===6.4.post2 ; python_version<'3.12'\n"
        b"unpinned>=1\n"
    )
    assert pins_in(text, SourceFormat.COMPILED, "r.txt") == {
        ("flask-login", "0.6.3"),
        ("zope-interface", "6.4.post2"),
    }


def test_an_unreadable_revision_of_a_toml_lock_changes_nothing() -> None:
    """A commit that left conflict markers in uv.lock says nothing about what was
    installed: no false gap, no false "installed from ... to"."""
    good = b'version = 1\n\n[[package]]\nname = "cupy-demo"\nversion = "14.0.1"\n'
    broken = b"<<<<<<< HEAD\n" + good + b"=======\n>>>>>>> theirs\n"
    texts: list[bytes | None] = [good, broken, good]
    revisions = [Revision(r.commit, "uv.lock", deleted=False) for r in _revisions(texts)]
    held = held_over_time(revisions, texts, SourceFormat.UV_LOCK)
    assert [(h.package, h.version, h.since_commit, h.until) for h in held] == [
        ("cupy-demo", "14.0.1", revisions[0].commit.sha, None)
    ]
