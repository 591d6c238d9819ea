"""The edit: relaxing a requirement source as text, every byte it need not change kept.

Notes: docs/internals.md#edit.
"""

from __future__ import annotations

from govern.edit.common import Edit, EditRefused, Superseded
from govern.edit.source import relax_source

__all__ = ["Edit", "EditRefused", "Superseded", "relax_source"]
