"""``govern demo``: the loop from a capped line to the pushed branch, offline, in a
workspace of its own (govern.demo)."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from govern.cli.options import DbOption
from govern.errors import GovernError, UsageError


def demo(
    serve: Annotated[
        bool,
        typer.Option(
            "--serve",
            help="Then serve the dashboard on the demo's store until Ctrl-C (the web extra).",
        ),
    ] = False,
    port: Annotated[
        int, typer.Option("--port", help="With --serve: the port.", min=1, max=65535)
    ] = 8080,
    keep: Annotated[
        Path | None,
        typer.Option(
            "--keep",
            metavar="DIR",
            help="Build the workspace in DIR (new or empty) and keep it, with its store.",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Run the whole loop on a local index and repository, offline, and show each step.

    A CuPy-like package `demo-cupy` (14.0.1 works, 14.1.0 breaks at import) on a local
    index, a git repository capping it `< 14.1.0` with its reason, and a bare remote:
    track, poll and verify; then 14.1.1 (fixed) is published, verified, and the branch
    relaxing the line to `!= 14.1.0` is pushed. The store is a temporary SQLite file
    unless --db names one; the default store is never touched. Exit 0 when the loop ended
    with the branch, 2 when it did not.
    """
    from govern import application
    from govern.cli.track import print_threads
    from govern.demo.index import LocalIndex
    from govern.demo.world import BROKEN, PACKAGE, Workspace, run_loop
    from govern.store.columns import utcnow
    from govern.store.history import threads

    if serve:
        from govern.cli.web import require_web_stack

        require_web_stack()  # before the work, not after it
    with contextlib.ExitStack() as stack:
        root = _workspace(keep, stack)
        index = stack.enter_context(LocalIndex(root / "index"))
        workspace = Workspace(root, index)
        url = db or f"sqlite:///{root / 'govern.db'}"
        typer.echo(f"govern demo: everything in {root} (offline)")
        workspace.publish("14.0.1")
        workspace.publish(BROKEN)
        typer.echo(
            f"0. a local index on {index.url}: {PACKAGE} 14.0.1 (works) and {BROKEN} "
            "(raises at import)"
        )
        workspace.create_repository()
        typer.echo(
            f"   a git repository repo/ capping {PACKAGE} <{BROKEN} with its reason, "
            "pushed to remote.git"
        )
        config = application.settings(root=workspace.repo)
        with application.store(url, config) as store:
            typer.echo(f"   the store: {store.display_url}")
            outcome = run_loop(workspace, store, typer.echo)
            with store.session() as session:
                found = threads(session, query=PACKAGE, now=utcnow())
        typer.echo("\nthe thread (govern history):")
        print_threads(found)
        if outcome.branch is not None:
            typer.echo(f"the branch {outcome.branch} on remote.git:")
            typer.echo(workspace.branch_diff(outcome.branch).rstrip())
        if outcome.problems or outcome.line != f"!={BROKEN}":
            problems = outcome.problems or [f"the branch holds {PACKAGE}{outcome.line or ''}"]
            raise GovernError(
                "the demo did not end as it should: " + "; ".join(problems),
                tip="Rerun with --keep DIR to look at the workspace.",
            )
        typer.echo(
            f"\ndone: {PACKAGE} {BROKEN} stays out, 14.1.1 is let in, on a branch for review."
        )
        if keep is not None:
            typer.echo(
                f"\nthe workspace stays in {root}; look at it with:\n"
                f"  govern status --all --db {url}\n"
                f"  govern history {PACKAGE} --db {url}\n"
                f"  govern dashboard --db {url}\n"
                f"  git --git-dir {workspace.remote} log --all --oneline --graph"
            )
        if serve:
            from govern.cli.web import serve as run_dashboard

            typer.echo(f"\nthe dashboard on http://127.0.0.1:{port}/ (Ctrl-C ends it)")
            run_dashboard(port=port, config_file=workspace.repo / ".govern.toml", db=url)


def _workspace(keep: Path | None, stack: contextlib.ExitStack) -> Path:
    """The directory to build in: ``keep`` (new or empty), else a temporary one."""
    if keep is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="govern-demo-")))
    root = keep.expanduser().resolve()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(
            f"--keep {keep} is not a new or empty directory",
            tip="Name a directory that does not exist yet; the demo builds everything in it.",
        )
    root.mkdir(parents=True, exist_ok=True)
    return root
