"""The Jinja environment of the dashboard's pages and of the standalone report.

Apart from :mod:`govern.web.app` so that ``govern report --format html`` renders without
FastAPI: Jinja2 escapes every value (reasons, names and logs come from files and CI anyone
can edit), and links pass :func:`safe_url`.
"""

from __future__ import annotations

import functools

from jinja2 import Environment, PackageLoader, select_autoescape


def safe_url(value: object) -> str:
    """A link from a repository or CI only if it is http(s): never ``javascript:`` and co."""
    text = str(value or "").strip()
    return text if text.lower().startswith(("https://", "http://")) else "#"


@functools.cache
def environment() -> Environment:
    """The templates of ``govern/web/templates``, autoescaped, with the ``safe_url`` filter."""
    made = Environment(
        loader=PackageLoader("govern.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    made.filters["safe_url"] = safe_url
    return made
