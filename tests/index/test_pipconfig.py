"""Tests for :mod:`govern.index.pipconfig`: which index, from where, as pip would say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from govern.errors import ConfigError, GovernError
from govern.index.pipconfig import (
    PIP_DEFAULT,
    IndexNotConfigured,
    IndexSettings,
    pip_config_files,
    resolve_indexes,
)

MAIN = "https://main.test/simple/"
MIRROR = "https://mirror.test/simple/"


def conf(path: Path, text: str) -> Path:
    """Write a pip.conf (creating its directory) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- precedence ---------------------------------------------------------------------------------


def test_cli_beats_configuration_beats_environment_beats_files(tmp_path: Path) -> None:
    files = [conf(tmp_path / "pip.conf", "[global]\nindex-url = https://file.test/simple/\n")]
    environ = {"PIP_INDEX_URL": "https://env.test/simple/"}
    resolved = resolve_indexes(
        cli_index_url="https://cli.test/simple/",
        configured_index_url="https://govern.test/simple/",
        environ=environ,
        config_files=files,
    )
    assert (resolved.index_url, resolved.source) == ("https://cli.test/simple/", "--index-url")
    resolved = resolve_indexes(
        configured_index_url="https://govern.test/simple/", environ=environ, config_files=files
    )
    assert resolved.index_url == "https://govern.test/simple/"
    assert resolved.source == "[tool.govern] index-url"
    resolved = resolve_indexes(environ=environ, config_files=files)
    assert (resolved.index_url, resolved.source) == ("https://env.test/simple/", "PIP_INDEX_URL")
    resolved = resolve_indexes(environ={}, config_files=files)
    assert resolved.index_url == "https://file.test/simple/"
    assert resolved.source == f"{files[0]} [global]"


def test_the_process_environment_is_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", MAIN)
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"  {MIRROR}   https://third.test/simple/ ")
    resolved = resolve_indexes(config_files=[])
    assert resolved.index_url == MAIN
    assert resolved.extra_index_urls == (MIRROR, "https://third.test/simple/")


def test_empty_values_count_as_unset(tmp_path: Path) -> None:
    files = [conf(tmp_path / "pip.conf", f"[global]\nindex-url = {MAIN}\n")]
    resolved = resolve_indexes(
        cli_index_url="  ",
        configured_index_url="",
        environ={"PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": " "},
        config_files=files,
    )
    assert resolved.index_url == MAIN
    assert resolved.extra_index_urls == ()


def test_each_option_comes_from_its_own_highest_level(tmp_path: Path) -> None:
    # PIP_EXTRA_INDEX_URL replaces (not extends) the file's extra indexes. Unlike pip,
    # govern's --index-url names the one index to ask: pip's extras do not join it.
    files = [
        conf(
            tmp_path / "pip.conf",
            "[global]\nindex-url = https://file.test/simple/\n"
            "extra-index-url =\n    https://a.test/simple/\n    https://b.test/simple/\n",
        )
    ]
    resolved = resolve_indexes(cli_index_url=MAIN, environ={}, config_files=files)
    assert resolved.index_url == MAIN
    assert resolved.extra_index_urls == ()
    resolved = resolve_indexes(environ={}, config_files=files)
    assert resolved.extra_index_urls == ("https://a.test/simple/", "https://b.test/simple/")
    resolved = resolve_indexes(environ={"PIP_EXTRA_INDEX_URL": MIRROR}, config_files=files)
    assert resolved.extra_index_urls == (MIRROR,)
    resolved = resolve_indexes(
        configured_extra=["https://c.test/simple/", MAIN],
        environ={"PIP_EXTRA_INDEX_URL": MIRROR},
        config_files=files,
        cli_index_url=MAIN,
    )
    assert resolved.extra_index_urls == ("https://c.test/simple/",)  # the main one dropped


# -- pip's files --------------------------------------------------------------------------------


def test_later_files_override_earlier_ones(tmp_path: Path) -> None:
    site_wide = conf(
        tmp_path / "etc/pip.conf",
        f"[global]\nindex-url = https://site.test/simple/\nextra-index-url = {MIRROR}\n",
    )
    user = conf(tmp_path / "user/pip.conf", f"[global]\nindex_url = {MAIN}\n")
    resolved = resolve_indexes(environ={}, config_files=[site_wide, user])
    assert (resolved.index_url, resolved.extra_index_urls) == (MAIN, (MIRROR,))
    assert resolved.source == f"{user} [global]"


def test_the_install_section_overrides_global_whatever_the_file(tmp_path: Path) -> None:
    # pip merges every file first, then lets the command's section beat [global]: an
    # [install] of the lowest file still wins over a [global] of the highest.
    low = conf(tmp_path / "low.conf", "[install]\nindex-url = https://install.test/simple/\n")
    high = conf(
        tmp_path / "high.conf",
        "[global]\nindex-url = https://global.test/simple/\n"
        "[download]\nindex-url = https://download.test/simple/\n",
    )
    resolved = resolve_indexes(environ={}, config_files=[low, high])
    assert (resolved.index_url, resolved.source) == (
        "https://install.test/simple/",
        f"{low} [install]",
    )
    download = resolve_indexes(environ={}, config_files=[low, high], command="download")
    assert download.index_url == "https://download.test/simple/"


def test_missing_files_are_skipped_and_keys_are_normalized(tmp_path: Path) -> None:
    path = conf(tmp_path / "pip.conf", f"[global]\n--INDEX_URL = {MAIN}\ntimeout = 60\n")
    resolved = resolve_indexes(environ={}, config_files=[tmp_path / "absent.conf", path])
    assert resolved.index_url == MAIN


def test_an_invalid_pip_file_is_a_config_error(tmp_path: Path) -> None:
    path = conf(tmp_path / "pip.conf", "index-url = no section header\n")
    with pytest.raises(ConfigError, match="not a valid pip configuration file") as raised:
        resolve_indexes(environ={}, config_files=[path])
    assert raised.value.tip is not None


def test_pip_config_files_follow_pips_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    environ = {
        "HOME": str(home),
        "XDG_CONFIG_DIRS": f"{tmp_path}/xdg1{os.pathsep}{tmp_path}/xdg2",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "VIRTUAL_ENV": str(tmp_path / "venv"),
    }
    assert pip_config_files(environ) == [
        tmp_path / "xdg1/pip/pip.conf",
        tmp_path / "xdg2/pip/pip.conf",
        Path("/etc/pip.conf"),
        home / ".pip/pip.conf",
        tmp_path / "config/pip/pip.conf",
        tmp_path / "venv/pip.conf",
    ]
    defaults = pip_config_files({"HOME": str(home)})
    assert defaults == [
        Path("/etc/xdg/pip/pip.conf"),
        Path("/etc/pip.conf"),
        home / ".pip/pip.conf",
        home / ".config/pip/pip.conf",
    ]


def test_pip_config_file_is_loaded_last_and_hides_the_user_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conf(home / ".config/pip/pip.conf", "[global]\nindex-url = https://user.test/simple/\n")
    named = conf(tmp_path / "named.conf", f"[global]\nindex-url = {MAIN}\n")
    environ = {"HOME": str(home), "PIP_CONFIG_FILE": str(named), "XDG_CONFIG_DIRS": "/nowhere"}
    files = pip_config_files(environ)
    assert files[-1] == named
    assert home / ".config/pip/pip.conf" not in files
    assert resolve_indexes(environ=environ).index_url == MAIN
    # A PIP_CONFIG_FILE that does not exist hides nothing (pip's rule).
    environ["PIP_CONFIG_FILE"] = str(tmp_path / "absent.conf")
    assert resolve_indexes(environ=environ).index_url == "https://user.test/simple/"


def test_user_files_are_found_from_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conf(home / ".pip/pip.conf", f"[global]\nindex-url = {MIRROR}\nextra-index-url = {MIRROR}\n")
    conf(home / ".config/pip/pip.conf", f"[global]\nindex-url = {MAIN}\n")  # beats the legacy
    resolved = resolve_indexes(environ={"HOME": str(home), "XDG_CONFIG_DIRS": "/nowhere"})
    assert (resolved.index_url, resolved.extra_index_urls) == (MAIN, (MIRROR,))
    assert resolved.source == f"{home / '.config/pip/pip.conf'} [global]"


def test_pip_config_file_devnull_loads_no_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conf(home / ".config/pip/pip.conf", f"[global]\nindex-url = {MAIN}\n")
    environ = {"HOME": str(home), "PIP_CONFIG_FILE": os.devnull}
    assert pip_config_files(environ) == []
    with pytest.raises(IndexNotConfigured):
        resolve_indexes(environ=environ)


# -- nothing configured -------------------------------------------------------------------------


def test_nothing_configured_raises_with_a_tip(tmp_path: Path) -> None:
    extra_only = conf(tmp_path / "pip.conf", f"[global]\nextra-index-url = {MIRROR}\n")
    with pytest.raises(IndexNotConfigured) as raised:
        resolve_indexes(environ={"PIP_EXTRA_INDEX_URL": MIRROR}, config_files=[extra_only])
    error = raised.value
    assert isinstance(error, GovernError)
    assert error.message == "no package index is configured"
    assert error.tip is not None
    for hint in ("--index-url", "[tool.govern]", "PIP_INDEX_URL"):
        assert hint in error.tip


# -- ${VAR}, URLs, credentials ------------------------------------------------------------------


def test_variables_are_expanded_in_every_source(tmp_path: Path) -> None:
    files = [
        conf(
            tmp_path / "pip.conf",
            "[global]\nindex-url = https://__token__:${INDEX_TOKEN}@${INDEX_HOST}/simple/\n",
        )
    ]
    environ = {"INDEX_TOKEN": "s3cret", "INDEX_HOST": "main.test"}
    resolved = resolve_indexes(environ=environ, config_files=files)
    assert resolved.index_url == "https://__token__:s3cret@main.test/simple/"
    mapped = resolve_indexes(
        cli_index_url=MAIN,
        per_package={"Private_Pkg": "https://${INDEX_HOST}/private/"},
        environ=environ,
        config_files=[],
    )
    assert mapped.per_package == {"private-pkg": "https://main.test/private/"}


def test_an_unset_variable_is_named_not_guessed() -> None:
    with pytest.raises(ConfigError, match=r"\$\{INDEX_TOKEN\}, which is not set") as raised:
        resolve_indexes(
            cli_index_url="https://u:${INDEX_TOKEN}@main.test/simple/", environ={}, config_files=[]
        )
    assert raised.value.tip is not None
    assert "INDEX_TOKEN" in raised.value.tip


@pytest.mark.parametrize(
    "url", ["ftp://u:s3cret@main.test/simple/", "/srv/index", "https://u:s3cret@/x", "http://[::1"]
)
def test_an_unusable_url_is_refused_without_its_credentials(url: str) -> None:
    with pytest.raises(ConfigError, match="is not an http\\(s\\) URL") as raised:
        resolve_indexes(cli_index_url=url, environ={}, config_files=[])
    assert "s3cret" not in str(raised.value) + str(raised.value.tip)


def test_per_package_mapping_wins_for_its_projects() -> None:
    settings = resolve_indexes(
        cli_index_url=MAIN,
        configured_extra=[MIRROR],
        per_package={"Corp.Internal": "https://corp.test/simple/"},
        environ={},
        config_files=[],
    )
    assert settings.indexes_for("corp_internal") == ("https://corp.test/simple/",)
    assert settings.indexes_for("requests") == (MAIN, MIRROR)
    assert IndexSettings(MAIN).indexes_for("x") == (MAIN,)


def test_a_local_directory_extra_index_from_pip_is_left_out(tmp_path: Path) -> None:
    files = [
        conf(
            tmp_path / "pip.conf",
            "[global]\nindex-url = https://file.test/simple/\n"
            "extra-index-url = file:///opt/wheels/simple https://a.test/simple/\n",
        )
    ]
    resolved = resolve_indexes(environ={}, config_files=files)
    assert resolved.extra_index_urls == ("https://a.test/simple/",)


# -- pip's own default -------------------------------------------------------------------------


def test_with_nothing_configured_pip_s_default_is_asked() -> None:
    settings = resolve_indexes(environ={}, config_files=[], pip_default=lambda: MAIN)
    assert (settings.index_url, settings.source) == (MAIN, PIP_DEFAULT)


def test_pip_s_default_is_not_asked_when_an_index_is_configured() -> None:
    def never() -> str:
        raise AssertionError("pip asked")

    settings = resolve_indexes(
        environ={"PIP_INDEX_URL": MIRROR}, config_files=[], pip_default=never
    )
    assert settings.index_url == MIRROR


@pytest.mark.parametrize("value", ["1", "true", "yes", "on"])
def test_pip_told_to_ask_no_index_has_no_default(value: str, tmp_path: Path) -> None:
    with pytest.raises(IndexNotConfigured):
        resolve_indexes(environ={"PIP_NO_INDEX": value}, config_files=[], pip_default=lambda: MAIN)
    no_index = conf(tmp_path / "pip.conf", f"[global]\nno-index = {value}\n")
    with pytest.raises(IndexNotConfigured):
        resolve_indexes(environ={}, config_files=[no_index], pip_default=lambda: MAIN)


def test_no_pip_to_ask_is_not_configured() -> None:
    with pytest.raises(IndexNotConfigured):
        resolve_indexes(environ={}, config_files=[], pip_default=lambda: None)
