"""The subcommands of ``python -m hurray``, one module each.

Each module has ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int`` (the exit status); __main__.py lists them in COMMANDS.
"""
from . import clean, convert_files, inspect, verify

COMMANDS = (inspect, verify, convert_files, clean)
