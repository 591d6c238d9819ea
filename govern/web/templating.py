"""The Jinja environment of the dashboard's pages and of the standalone report.

Apart from :mod:`govern.web.app` so that ``govern report --format html`` renders without
FastAPI: Jinja2 escapes every value (reasons, names and logs come from files and CI anyone
can edit), links pass :func:`safe_url`, and every value printed passes
:func:`govern.text.visible` first, so that bidirectional controls and invisible characters
are shown as ``<U+XXXX>`` instead of reordering or hiding the text around them.
"""

from __future__ import annotations

import functools

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from govern.exclusions.states import REASONED_EVENTS
from govern.text import visible


def shown(value: object) -> object:
    """Every printed value as it is shown: text made visible (line breaks kept, for logs);
    markup built here (the SVG charts, the inlined stylesheet) left as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value, lines=True)
    return value


def safe_url(value: object) -> str:
    """A link from a repository or CI only if it is http(s): never ``javascript:`` and co."""
    text = str(value or "").strip()
    return text if text.lower().startswith(("https://", "http://")) else "#"


@functools.cache
def environment() -> Environment:
    """The templates of ``govern/web/templates``, autoescaped, with the ``safe_url`` filter
    (and the event kinds after which a thread shows the reason)."""
    made = Environment(
        loader=PackageLoader("govern.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=shown,
    )
    made.filters["safe_url"] = safe_url
    made.globals["reasoned_events"] = REASONED_EVENTS
    return made
