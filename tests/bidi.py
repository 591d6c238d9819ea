"""A requirements file whose reason and owner hide and reorder text (for the escaping tests).

The reason holds right-to-left overrides ("Trojan Source", CVE-2021-42574), an isolate
pair and an ANSI escape; the owner a right-to-left mark. Shown, each must read as
``<U+XXXX>``.
"""

from __future__ import annotations

from pathlib import Path

RLO = "\u202e"
HIDDEN = frozenset({RLO, "\u2066", "\u2069", "\u200f", "\x1b"})
REQUIREMENTS = (
    f"# Breaks the {RLO}gnp.exe{RLO} loader, see \x1b[2Jthe issue \u2066x\u2069.\n"
    "# govern: owner=@team\u200f review-by=2026-01-01\n"
    "numpy<2\n"
)
REASON_SHOWN = (
    "Breaks the <U+202E>gnp.exe<U+202E> loader, see <U+001B>[2Jthe issue <U+2066>x<U+2069>."
)


def repository(root: Path) -> Path:
    """``root`` made a repository holding that file (the folder is created)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    return root
