"""The subcommands of ``python -m hurray``, one module each.

Each module has ``NAME``, ``HELP`` (one line for the list of commands),
``DESCRIPTION`` (plain text for the command's --help: what it reads, prints
and exits with), ``add_arguments(parser)`` and ``run(args) -> int`` (the exit
status); __main__.py lists them in COMMANDS.
"""
from . import convert_files, inspect, verify

COMMANDS = (inspect, verify, convert_files)
