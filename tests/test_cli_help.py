"""python -m hurray's help is plain text a terminal shows as written, and a bare command says what there is."""
import re
import subprocess
import sys

import pytest

from hurray.cli import COMMANDS

# Markup a terminal shows raw, and pointers into a source checkout a user of the wheel does not have.
NOT_PLAIN = (re.compile(r"``|`"), re.compile(r"\bsrc/|hurray/(cli|commands)/|\.py\b"))


def run(*args):
    return subprocess.run([sys.executable, "-m", "hurray", *args], capture_output=True, text=True, timeout=120)


def assert_plain(text, where):
    for pattern in NOT_PLAIN:
        found = pattern.search(text)
        assert found is None, f"{where} shows {found.group(0)!r}:\n{text}"


@pytest.mark.parametrize("args", [["--help"], *([c.NAME, "--help"] for c in COMMANDS)], ids=" ".join)
def test_help_is_plain_text(args):
    result = run(*args)
    assert result.returncode == 0 and result.stderr == ""
    assert_plain(result.stdout, "python -m hurray " + " ".join(args))
    assert result.stdout.startswith("usage: python -m hurray")


def test_a_bare_command_lists_what_the_commands_do_and_succeeds():
    bare = run()
    assert bare.returncode == 0 and bare.stderr == ""
    assert bare.stdout == run("--help").stdout
    text = " ".join(bare.stdout.split())
    for command in COMMANDS:
        assert f"{command.NAME} {' '.join(command.HELP.split())}" in text
    assert "--cflags --libs" in text and "COMMAND --help" in text


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.NAME)
def test_every_command_says_what_it_exits_with(command):
    assert "Exit status: 0" in command.DESCRIPTION
    assert_plain(command.DESCRIPTION + command.HELP, command.NAME)


def test_the_plain_text_check_can_fail():
    with pytest.raises(AssertionError, match="shows '``'"):
        assert_plain("``python -m hurray --cflags --libs`` prints", "old help")
    with pytest.raises(AssertionError, match="hurray/commands/"):
        assert_plain("runs a command (see hurray/commands/)", "old help")
