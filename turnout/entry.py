"""The `turnout` console script: the CLI, with Ctrl-C quiet even while it is still importing.

`turnout.cli` imports every command's module (the API, the workers' settings, the embedded stack);
a Ctrl-C during those imports would otherwise end in a traceback although nothing was started.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from turnout.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.exit(130)  # the shell's code for "interrupted"
