"""Local git: the one command runner, a file's history for replay, the one-commit push.

Notes: docs/internals.md#git.
"""
