"""The `xlens` command of the Python package: the same command line as the binary."""

import signal
import sys


def main() -> None:
    # Ctrl-C ends the command as it ends the binary (the Rust code holds no Python state).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from . import _native

    _native.main(["xlens", *sys.argv[1:]])
