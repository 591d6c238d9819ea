"""The closed sets (states, candidate statuses, conclusions, kinds, event kinds): their stored
strings, and no module outside the enums' own spelling one of them in a comparison, an
assignment, a list of them, an event written or SQL text."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from govern.ci.base import Conclusion as ProviderConclusion
from govern.exclusions.model import Kind, SubKind
from govern.exclusions.states import CandidateStatus, Conclusion, EventKind, State

GOVERN = Path(__file__).resolve().parents[2] / "govern"

STATES = frozenset(State)
STATUSES = frozenset(CandidateStatus)
CONCLUSIONS = frozenset(Conclusion)
KINDS = frozenset(Kind) | frozenset(SubKind)
EVENT_KINDS = frozenset(EventKind)
# The event kinds of two words mean nothing else: spelled anywhere, they are one.
HYPHENATED = frozenset(kind for kind in EventKind if "-" in kind)
# What a name or an attribute is called says which closed set its values come from.
BY_SUBJECT = {
    "state": STATES,
    "status": STATUSES,
    "conclusion": CONCLUSIONS,
    "kind": KINDS | EVENT_KINDS,
}
EVERY_SET = (STATES, STATUSES, CONCLUSIONS, KINDS, EVENT_KINDS)
SQL = re.compile(r"\b(SELECT|UPDATE|INSERT|DELETE|WHERE)\b")
QUOTED = re.compile(r"'([a-z-]+)'")

# Modules that define the sets, and the CI vendors' own vocabularies (a GitLab job's status
# "failed", a Buildkite state), which their providers translate to a Conclusion at the seam.
EXEMPT = {
    "exclusions/states.py",
    "exclusions/model.py",
    "ci/github.py",
    "ci/gitlab.py",
    "ci/buildkite.py",
    "ci/hosted.py",
}
# Modules being rewritten elsewhere that still write an event kind's text; each moves to
# EventKind with its rewrite, and leaves this set then.
EVENT_KIND_PENDING: set[str] = set()


def test_the_values_are_the_strings_the_store_and_the_json_contracts_hold() -> None:
    assert [s.value for s in State] == [
        "held",
        "candidate",
        "verifying",
        "verified",
        "proposed",
        "overdue",
        "relaxed",
        "removed",
    ]
    assert [s.value for s in CandidateStatus] == [
        "found",
        "verifying",
        "passed",
        "failed",
        "errored",
        "bad",
    ]
    assert [c.value for c in Conclusion] == [
        "passed",
        "failed",
        "errored",
        "cancelled",
        "timed-out",
    ]
    assert ProviderConclusion is Conclusion


def test_a_member_is_its_string_in_sets_formatting_and_json() -> None:
    import json

    assert {"held"} == {State.HELD}
    assert f"{State.OVERDUE}" == "overdue"
    assert json.dumps({State.HELD: [CandidateStatus.BAD]}) == '{"held": ["bad"]}'
    assert State.RELAXED.ended
    assert not State.HELD.ended


def _subject(node: ast.expr) -> str | None:
    """The name a value is compared with or stored in: ``x.state``, ``state``, ``col(X.state)``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call) and node.args:
        return _subject(node.args[0])
    return None


def _values_of(subject: str | None) -> frozenset[str]:
    if subject is None:
        return frozenset()
    for suffix, values in BY_SUBJECT.items():
        if subject == suffix or subject.endswith("_" + suffix):
            return values
    return frozenset()


def _strings(node: ast.expr) -> Iterator[ast.Constant]:
    """A string constant, or the string elements of a tuple, list or set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _strings(element)


def _findings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for side in sides:
                values = frozenset().union(
                    *(_values_of(_subject(o)) for o in sides if o is not side)
                )
                for c in _strings(side):
                    if c.value in values:
                        yield c.lineno, f"compared: {c.value!r}"
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                values = _values_of(_subject(target))
                value = node.value
                if isinstance(value, ast.Call):  # a column's default: Field(default="held")
                    value = next((k.value for k in value.keywords if k.arg == "default"), None)
                for c in _strings(value) if value else ():
                    if c.value in values:
                        yield c.lineno, f"assigned: {c.value!r}"
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                for c in _strings(keyword.value):
                    if c.value in _values_of(keyword.arg):
                        yield c.lineno, f"passed as {keyword.arg}=: {c.value!r}"
            if isinstance(node.func, ast.Attribute) and node.func.attr == "in_":
                values = _values_of(_subject(node.func.value))
                for arg in node.args:
                    for c in _strings(arg):
                        if c.value in values:
                            yield c.lineno, f"in_(): {c.value!r}"
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else None
            callee = node.func.id if isinstance(node.func, ast.Name) else callee
            if callee is not None and callee.lower().endswith("event"):  # Event(...), _event(...)
                for arg in node.args:
                    for c in _strings(arg):
                        if c.value in EVENT_KINDS:
                            yield c.lineno, f"an event written: {c.value!r}"
        elif isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
            groups: list[list[ast.expr | None]] = (
                [list(node.keys), list(node.values)]
                if isinstance(node, ast.Dict)
                else [list(node.elts)]
            )
            for elements in groups:
                words = [e.value for e in elements if isinstance(e, ast.Constant)]
                for values in EVERY_SET:
                    if len(set(words)) >= 2 and all(w in values for w in words):
                        yield node.lineno, f"a list of them: {words!r}"
        elif isinstance(node, ast.Constant) and SQL.search(str(node.value)):
            for word in QUOTED.findall(str(node.value)):
                if any(word in values for values in EVERY_SET):
                    yield node.lineno, f"in SQL text: {word!r}"
        elif isinstance(node, ast.Constant) and node.value in HYPHENATED:
            yield node.lineno, f"an event kind: {node.value!r}"


def _of_an_event(finding: str) -> bool:
    """Whether a finding names an event kind (and no value of another set)."""
    word = finding.rsplit(": ", 1)[-1].strip("'[]")
    return word in EVENT_KINDS and not any(word in v for v in EVERY_SET if v is not EVENT_KINDS)


def literals(root: Path) -> list[str]:
    """Every place under ``root`` (a copy of govern/) that spells a closed set's value."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where in EXEMPT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        findings = sorted(_findings(tree))
        if where in EVENT_KIND_PENDING:
            findings = [(line, what) for line, what in findings if not _of_an_event(what)]
        found += [f"{where}:{line}: {what}" for line, what in findings]
    return found


def test_no_module_spells_a_state_status_conclusion_or_kind() -> None:
    assert literals(GOVERN) == []


def test_the_scan_finds_each_way_of_spelling_one(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "if row.state == 'held': pass\n"
        "row.status = 'bad'\n"
        "state = 'verifying'\n"
        "state: str = Field(default='held', max_length=16)\n"
        "Exclusion(state='verified')\n"
        "q.where(col(Candidate.status).in_(('failed', 'bad')))\n"
        "STATES = ('held', 'candidate')\n"
        "rank = {'passed': 0, 'found': 1}\n"
        "SQL = \"UPDATE exclusion SET state = 'candidate' WHERE id = ?\"\n"
        "if event.kind == 'removed': pass\n"
        "if way == 'relaxed': pass\n"  # a direction, not a state
        "summary = {'found': 1, 'failed': 0, 'limited': 2}\n"  # JSON keys of other things
        "session.add(_event(row, 'snoozed', now))\n"
        "kind = {PASSED: 'verification-passed', FAILED: 'verification-failed'}[c]\n"
        "events.append((row.id, 'candidate-found', now))\n",
        encoding="utf-8",
    )
    assert [entry.split(": ", 1)[0] for entry in literals(tmp_path)] == [
        "m.py:1",
        "m.py:2",
        "m.py:3",
        "m.py:4",
        "m.py:5",
        "m.py:6",
        "m.py:6",
        "m.py:6",
        "m.py:7",
        "m.py:8",
        "m.py:9",
        "m.py:10",
        "m.py:13",
        "m.py:14",
        "m.py:14",
        "m.py:14",
        "m.py:15",
    ]
