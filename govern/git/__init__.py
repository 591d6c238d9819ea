"""Local git: the one command runner, a file's history for replay, the one-commit push.

:mod:`govern.git.runner` runs ``git`` (argv lists, a timeout, no prompts) and holds the
one family of its errors (:class:`~govern.git.runner.GitError`);
:mod:`govern.git.history` reads provenance from a clone (a file's commits, its blobs,
blame, ``-U0`` patches) for the replay of a file's history; :mod:`govern.git.push`
pushes one commit that changes one file to a branch of a remote, leaving the user's
clone alone. The hosted forges (pull and merge requests, comments) are
:mod:`govern.forge`'s.
"""
