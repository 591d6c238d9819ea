"""The rule catalogue: every rule govern can report, with its default and its fix.

Policies (``policies/*.toml``) choose severities and options; this table is the
one place a rule's id, meaning and advice are written.
"""

from __future__ import annotations

from govern.policy.model import Rule, Severity

_E, _W, _I, _O = Severity.ERROR, Severity.WARNING, Severity.INFO, Severity.OFF

RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "parse-error",
            _E,
            "A line that pip or PEP 508 cannot parse",
            "Fix the line as the hint says; pip would refuse the file.",
        ),
        Rule(
            "ignored-option",
            _W,
            "An option after a requirement that pip silently ignores (foo>=1 --pre)",
            "Put the option on a line of its own, or drop it.",
        ),
        Rule(
            "include-cycle",
            _E,
            "Requirement files or dependency groups that include each other",
            "Remove one of the includes so that the chain ends.",
        ),
        Rule(
            "include-not-found",
            _E,
            "An included file that does not exist",
            "Fix the path of the -r/-c include (it is relative to the including file).",
        ),
        Rule(
            "include-outside-root",
            _E,
            "An include that leaves the audited directory",
            "Audit from a directory that contains both files, or pass --allow-outside-root.",
        ),
        Rule(
            "include-too-deep",
            _E,
            "A chain of -r/-c includes deeper than govern follows (32 files)",
            "Include the files from fewer levels; pip reads them, govern stops there.",
        ),
        Rule(
            "source-refused",
            _E,
            "A file that is no regular file (a FIFO, a device, /proc/...): not read",
            "Name a requirements file of the repository; replace the link by the file.",
        ),
        Rule(
            "source-too-large",
            _E,
            "A file larger than govern reads (16 MiB): not read",
            "Audit the input the file is generated from, or split it.",
        ),
        Rule(
            "include-remote",
            _I,
            "A -r/-c include of a URL, which govern does not fetch",
            "Vendor the file into the repository to have it audited.",
        ),
        Rule(
            "not-a-requirements-file",
            _I,
            "A discovered *.in or *constraints*.txt file whose content is not requirements: "
            "it is not read",
            "Nothing to do if it is a template or another list; include it to read it.",
        ),
        Rule(
            "invalid-annotation",
            _W,
            "A '# govern:' annotation that cannot be read",
            'Write it as # govern: reason="..." issue=... bad=1.2.3 review-by=YYYY-MM-DD.',
        ),
        Rule(
            "missing-reason",
            _W,
            "An exclusion with no reason beside it",
            "Say why in a comment directly above the line (or on it), with a link.",
        ),
        Rule(
            "missing-link",
            _O,
            "An exclusion whose reason links no issue, PR or advisory",
            "Add the upstream issue or your tracking issue: # govern: issue=owner/repo#123.",
        ),
        Rule(
            "missing-review-by",
            _O,
            "An exclusion with no review date",
            "Add # govern: review-by=YYYY-MM-DD so that someone looks again.",
        ),
        Rule(
            "review-overdue",
            _W,
            "An exclusion whose review date has passed",
            "Check whether the reason still holds; relax the line or move the date.",
        ),
        Rule(
            "partial-version-exclusion",
            _W,
            "A != that names a partial version (!=3.14)",
            "Write !=X.Y.* to exclude the whole series, or the full version to exclude one.",
        ),
        Rule(
            "redundant-exclusion",
            _W,
            "A clause that the other clauses already exclude",
            "Remove the clause, or the clause that makes it redundant.",
        ),
        Rule(
            "cap-in-library",
            _O,
            "An upper bound on a library's runtime dependency",
            "Drop the cap; exclude the known-bad release with !=V instead.",
        ),
        Rule(
            "inconsistent-exclusions",
            _W,
            "One package excluded differently across sources",
            "Make the sources agree, or say in each why they differ.",
        ),
        Rule(
            "lock-stale",
            _E,
            "A lock pins a version its intent keeps out: it was not regenerated",
            "Regenerate the lock with its tool (the command in its header), then commit both.",
        ),
        Rule(
            "lock-holds-known-bad",
            _E,
            "A lock pins a version known to be bad (a bad= of an exclusion, a failed verification)",
            "Exclude the version in the intent and regenerate the lock, or take the fix.",
        ),
        Rule(
            "ban",
            _I,
            "A requirement that no release can satisfy: the package is banned",
            "Nothing to do if the ban is intended; keep its reason beside it.",
        ),
        Rule(
            "sentinel",
            _I,
            "A <9999-style bound that is not a real cap",
            "Nothing to do; govern does not treat sentinels as debts.",
        ),
        Rule(
            "unconstrainable",
            _I,
            "An editable install, URL or path that versions cannot bound",
            "Nothing to do; govern cannot watch the index for it.",
        ),
        # The index rules: only with `govern audit --online`.
        Rule(
            "unknown-version",
            _W,
            "An excluded version that was never published (a typo?)",
            "Correct the version to the release that is really broken.",
        ),
        Rule(
            "yanked-excluded",
            _I,
            "The excluded release was yanked: installers skip it already",
            "The exclusion may go; keep it only for pins to the yanked release.",
        ),
        Rule(
            "stale-cap",
            _W,
            "Releases above a cap have been out for longer than the policy allows",
            "Try the newest release (govern verify) and relax the cap, or renew its reason.",
        ),
        Rule(
            "fix-available",
            _I,
            "A release that the exclusion keeps out is a candidate for the runtime profiles",
            "Verify the candidate on the runtime image, then relax the line narrowly.",
        ),
        Rule(
            "index-unreachable",
            _I,
            "The index could not be asked about a package: its online rules did not run",
            "Check the index URL and credentials (--index-url, PIP_INDEX_URL).",
        ),
    )
}
