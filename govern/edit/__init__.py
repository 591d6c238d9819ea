"""The edit: relaxing a requirement source as text, every byte it need not change kept.

:func:`relax_source` (:mod:`govern.edit.source`) is the one entry point;
:mod:`govern.edit.requirements` edits requirements and constraints files (a requirement's
line as the edit sees it in :mod:`govern.edit.pip`), :mod:`govern.edit.pyproject` edits
``pyproject.toml``; :mod:`govern.edit.common` holds the result (:class:`Edit`) and its
refusals (:class:`EditRefused`, :class:`Superseded`), :mod:`govern.edit.blocks` the
comments around a requirement (``bad=``, evidence, blocks shared with other lines), and
:mod:`govern.edit.relax` the specifier algebra: the narrow relaxation of a clause and the
rewrite of one requirement. The edit reads :mod:`govern.sources` and
:mod:`govern.exclusions`; neither reads it.
"""

from __future__ import annotations

from govern.edit.common import Edit, EditRefused, Superseded
from govern.edit.source import relax_source

__all__ = ["Edit", "EditRefused", "Superseded", "relax_source"]
