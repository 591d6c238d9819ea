"""Regenerating a lock with the project's own tool, so a relaxation is a whole change.

Notes: docs/internals.md#locks.
"""
