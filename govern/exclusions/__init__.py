"""Exclusions: classification of clauses, annotations read from comments, the lifecycle's sets."""

from __future__ import annotations
