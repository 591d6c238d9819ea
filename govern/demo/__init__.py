"""``govern demo``: the whole loop, offline, in a workspace of its own.

A local index with a CuPy-like package, a git repository that caps it with its reason, a
bare remote; track, poll and verify; a fixed release; the loop again, up to the pushed
branch. ``wheels`` writes the package's distributions, ``index`` serves them, ``world``
builds the workspace and runs the loop through the service functions the CLI uses.

Notes: docs/internals.md#demo.
"""
