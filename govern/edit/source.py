"""The one entry point of the edit: relax one clause of a requirement source, any format.

Requirements and constraints files are :mod:`govern.edit.requirements`'s, ``pyproject.toml``
is :mod:`govern.edit.pyproject`'s; the rules are in docs/commands/propose.md and
docs/internals.md#edit.
"""

from __future__ import annotations

from collections.abc import Sequence

from govern.edit.common import Edit, EditRefused
from govern.edit.pyproject import relax_pyproject
from govern.edit.requirements import relax_requirements
from govern.exclusions.ref import ExclusionRef

__all__ = ["relax_source"]


def relax_source(
    text: str,
    *,
    ref: ExclusionRef,
    format: str,
    specifier: str,
    candidate: str,
    evidence: Sequence[str] = (),
    bad_versions: Sequence[str] = (),
    hashes: Sequence[str] | None = None,
) -> Edit:
    """Relax ``ref``'s requirement (tracked at its line, in its group for a pyproject) of
    the ``format`` source ``text`` to ``specifier``, which admits ``candidate``.

    Raises :class:`~govern.edit.common.Superseded` when a person changed the line,
    :class:`EditRefused` when the file cannot be edited as proposed; the rules are in
    docs/commands/propose.md and docs/internals.md#edit.
    """
    path, line, requirement, package = ref.source, ref.line, ref.requirement, ref.package
    if format in ("requirements", "constraints"):
        return relax_requirements(
            text,
            path=path,
            line=line,
            requirement=requirement,
            package=package,
            specifier=specifier,
            candidate=candidate,
            evidence=evidence,
            bad_versions=bad_versions,
            hashes=hashes,
        )
    if format == "pyproject":
        return relax_pyproject(
            text,
            path=path,
            line=line,
            requirement=requirement,
            group=ref.group,
            package=package,
            specifier=specifier,
            candidate=candidate,
            evidence=evidence,
            bad_versions=bad_versions,
        )
    raise EditRefused(f"{path}: a {format} source is not edited by govern")
