"""Exclusions: classification of clauses, annotations read from comments, relaxation."""

from __future__ import annotations
