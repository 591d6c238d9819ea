"""What a repository's pending-relaxations issue and its digest list, read from the store.

:func:`overview` sorts a repository's open exclusions into relaxable (a verified
candidate with a stored relaxation), overdue (past the annotation's review date) and
held (sentinel caps are no debt and are left out).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from sqlmodel import Session, col, select

from govern.exclusions.model import SubKind
from govern.exclusions.notices import Notice, Overview
from govern.exclusions.states import ENDED, State
from govern.store import proposals, schema
from govern.store.models import Repository
from govern.store.queries import ordered_rows
from govern.store.refs import from_row


def repositories(session: Session) -> list[tuple[str, str]]:
    """Every tracked repository: (name, the root it was last tracked from), by name."""
    rows = session.exec(select(Repository.name, Repository.root).order_by(col(Repository.name)))
    return [(name, root) for name, root in rows.all()]


def overview(session: Session, *, repository: str, today: date) -> Overview:
    """The open exclusions of ``repository``: relaxable first, then overdue, then held."""
    verified = {
        work.exclusion_id: work for work in proposals.verified(session, repository=repository)
    }
    relaxable: list[Notice] = []
    overdue: list[Notice] = []
    held: list[Notice] = []
    rows = ordered_rows(
        session, schema.repository.c.name == repository, schema.exclusion.c.removed_at.is_(None)
    )
    for exclusion, note, source, repo in rows:
        if exclusion.state in ENDED or exclusion.sub_kind == SubKind.SENTINEL:
            continue  # a <9999-style sentinel is no debt (docs/design.md)
        entry = Notice(
            ref=from_row(exclusion, repository=repo.name, source=source.path),
            state=exclusion.state,
            reason=note.reason if note else None,
            links=tuple(note.links) if note else (),
            review_by=note.review_by if note else None,
        )
        work = verified.get(exclusion.id or 0)
        if work is not None and work.relaxation is not None and work.relaxation.specifier:
            run = next((r.url for r in work.runs if r.url), None)
            relaxable.append(
                replace(entry, version=work.version, new=work.relaxation.requirement, run_url=run)
            )
        elif entry.review_by is not None and entry.review_by < today:
            overdue.append(entry)
        elif entry.state is State.HELD:
            held.append(entry)
    return Overview(repository, tuple(relaxable), tuple(overdue), tuple(held))
