"""Policies: which rules apply, at which severity; rules turn exclusions into findings."""

from __future__ import annotations
