"""``[tool.govern.notify]`` (``[notify]`` in .govern.toml): read, defaulted, and refused
with one line and a tip, as tests/test_config.py holds for the rest of the configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from govern.cli import main
from govern.config import NotifyConfig, load_config
from govern.errors import ConfigError

FULL = """\
channels = ["issue", "webhook", "email", "webhook"]
webhook-url-env = "GOVERN_WEBHOOK_URL"
smtp-host = "smtp.example.org"
smtp-port = 2525
smtp-from = "govern <govern@example.org>"
smtp-to = ["team@example.org", "lead@example.org"]
smtp-user-env = "SMTP_USER"
smtp-password-env = "SMTP_PASSWORD"
starttls = false
cafile = "certs/ca.pem"
pending-issue = true
digest = "weekly"
"""


def test_every_key_in_pyproject_and_in_govern_toml(tmp_path: Path) -> None:
    expected = NotifyConfig(
        channels=("issue", "webhook", "email"),
        webhook_url_env="GOVERN_WEBHOOK_URL",
        smtp_host="smtp.example.org",
        smtp_port=2525,
        smtp_from="govern <govern@example.org>",
        smtp_to=("team@example.org", "lead@example.org"),
        smtp_user_env="SMTP_USER",
        smtp_password_env="SMTP_PASSWORD",
        starttls=False,
        cafile="certs/ca.pem",
        pending_issue=True,
        digest="weekly",
    )
    (tmp_path / "pyproject.toml").write_text(f"[tool.govern.notify]\n{FULL}")
    assert load_config(tmp_path).notify == expected
    other = tmp_path / "other"
    other.mkdir()
    (other / ".govern.toml").write_text(f"[notify]\n{FULL}")
    assert load_config(other).notify == expected


def test_the_defaults_comment_on_the_issue_only(tmp_path: Path) -> None:
    (tmp_path / ".govern.toml").write_text('[propose]\npropose = "remind"\n')
    notify = load_config(tmp_path).notify
    assert notify == NotifyConfig()
    assert (notify.channels, notify.smtp_port, notify.starttls) == (("issue",), 587, True)
    assert (notify.pending_issue, notify.digest) == (False, "none")


@pytest.mark.parametrize(
    ("body", "message", "tip"),
    [
        (
            'colour = "blue"',
            "unknown [tool.govern.notify] key(s) colour",
            "Known keys: cafile, channels, digest, pending-issue, smtp-from, smtp-host, "
            "smtp-password-env, smtp-port, smtp-tls, smtp-to, smtp-user-env, starttls, "
            "webhook-url-env.",
        ),
        (
            'webhook-url = "https://hooks.slack.com/services/T/B/x"',
            "[tool.govern.notify] holds webhook-url: a secret must never be committed in a "
            "configuration file",
            'Remove it, revoke it, and name the variable that holds it: webhook-url-env = "..."',
        ),
        (
            'smtp-password = "hunter2"',
            "[tool.govern.notify] holds smtp-password: a secret must never be committed in a "
            "configuration file",
            'Remove it, revoke it, and name the variable that holds it: smtp-password-env = "..."',
        ),
        (
            'channels = ["issue", "sms"]',
            "notify.channels holds 'sms', not one of issue, webhook, email",
            'Write channels = ["issue", "webhook", "email"] (any of them).',
        ),
        (
            'channels = "webhook"',
            'notify.channels has "webhook" but no webhook-url-env',
            'Add webhook-url-env = "GOVERN_WEBHOOK_URL" and put the URL in that variable.',
        ),
        (
            'channels = ["email"]\nsmtp-host = "smtp.example.org"',
            'notify.channels has "email" but no smtp-from, smtp-to',
            'Add smtp-host = "smtp.example.org", smtp-from = "govern@example.org" and '
            'smtp-to = ["team@example.org"].',
        ),
        (
            'smtp-port = "587"',
            "notify.smtp-port must be a port number, not '587'",
            "Write it without quotes: smtp-port = 587 (STARTTLS's submission port).",
        ),
        (
            "smtp-port = 70000",
            "notify.smtp-port must be a port number, not a number",
            "Write it without quotes: smtp-port = 587 (STARTTLS's submission port).",
        ),
        (
            'webhook-url-env = "https://hooks.slack.com/x"',
            "notify.webhook-url-env must name an environment variable, not "
            "'https://hooks.slack.com/x'",
            'Write webhook-url-env = "GOVERN_..." (the name of a variable, not a secret).',
        ),
        (
            'smtp-user-env = "SMTP_USER"',
            "notify.smtp-user-env and smtp-password-env go together",
            'Name both variables: smtp-user-env = "SMTP_USER", '
            'smtp-password-env = "SMTP_PASSWORD".',
        ),
        (
            'starttls = "no"',
            "notify.starttls must be true or false, not 'no'",
            "Write a TOML boolean without quotes: starttls = true.",
        ),
        (
            'digest = "hourly"',
            "digest must be one of none, daily, weekly, not 'hourly'",
            'Write it as a string, e.g. digest = "none".',
        ),
        (
            'digest = "daily"',
            "notify.digest = 'daily' needs a webhook or email channel",
            'Add "webhook" or "email" to channels (the pending issue is pending-issue = true).',
        ),
    ],
)
def test_a_bad_notify_table_is_one_line_and_a_tip(
    tmp_path: Path, body: str, message: str, tip: str
) -> None:
    (tmp_path / ".govern.toml").write_text(f"[notify]\n{body}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert caught.value.message == f"{tmp_path / '.govern.toml'}: {message}"
    assert caught.value.tip == tip


def test_notify_that_is_not_a_table_exits_2_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text("attrs!=25.2.0\n")
    (tmp_path / ".govern.toml").write_text('notify = "webhook"\n')
    with pytest.raises(SystemExit) as exited:
        main(["audit", str(tmp_path)])
    assert exited.value.code == 2
    _out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"govern: error: {tmp_path / '.govern.toml'}: notify must be a table, not 'webhook'",
        'Tip: Write [tool.govern.notify] then channels = ["issue"].',
    ]
