"""schemathesis against the dashboard's OpenAPI description: no server error, no answer
that breaks the schema, for generated requests to every operation (reads and writes).

The app runs in-process (ASGI) over a seeded SQLite store with a write token configured;
writes are sent both without and with the token, so the 401 paths and the real writes are
both exercised. (schemathesis's own pytest plugin does not load on pytest 9, so each
operation gets a plain hypothesis test over the strategy schemathesis builds for it.)
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webseed import NOW, seed

from govern.store.db import Store
from govern.web.app import create_app
from govern.web.security import Secrets
from govern.web.state import AppState

TOKEN = "schema-TOKEN-0123456789"


@pytest.fixture(scope="module")
def web_schema() -> Iterator[Any]:
    with tempfile.TemporaryDirectory(prefix="govern-schema-") as work:
        root = Path(work)
        with Store(f"sqlite:///{root / 'govern.db'}") as store:
            seed(store, root, generated=60)
            state = AppState(store=store, secrets=Secrets(token=TOKEN), clock=lambda: NOW)
            yield schemathesis.openapi.from_asgi("/api/v1/openapi.json", create_app(state))


def _operations(schema: Any) -> dict[str, Any]:
    return {result.ok().label: result.ok() for result in schema.get_all_operations()}


def test_every_operation_is_described(web_schema: Any) -> None:
    labels = set(_operations(web_schema))
    assert {
        "GET /api/v1/pending",
        "GET /api/v1/exclusions",
        "GET /api/v1/exclusions/{key}",
        "GET /api/v1/debt",
        "POST /api/v1/exclusions/{key}/snooze",
        "POST /api/v1/exclusions/{key}/owner",
        "POST /api/v1/exclusions/{key}/acknowledge",
        "POST /api/v1/exclusions/{key}/verify",
    } <= labels


@pytest.mark.parametrize(
    "label",
    [
        "GET /api/v1/pending",
        "GET /api/v1/exclusions",
        "GET /api/v1/exclusions/{key}",
        "GET /api/v1/debt",
        "POST /api/v1/exclusions/{key}/snooze",
        "POST /api/v1/exclusions/{key}/owner",
        "POST /api/v1/exclusions/{key}/acknowledge",
        "POST /api/v1/exclusions/{key}/verify",
    ],
)
def test_the_api_honours_its_description(web_schema: Any, label: str) -> None:
    operation = _operations(web_schema)[label]
    # A snooze date must lie in the future: a rule JSON Schema cannot state, so a
    # schema-valid past date is rightly refused (400, documented).
    excluded = [schemathesis.checks.positive_data_acceptance] if "snooze" in label else []

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(case=operation.as_strategy(), signed=st.booleans())
    def check(case: Any, signed: bool) -> None:
        if signed:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {TOKEN}"}
        case.call_and_validate(excluded_checks=excluded)

    check()
