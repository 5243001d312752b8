"""``python -P -m chainlens.server``: run the language server (stdio; ``--tcp``).

Start it with ``-P`` (or as ``chainlens lsp``): without it Python puts the
working folder, the user's workspace, first on the import path, and a module
there named like one the server imports would run in its place.
"""

from __future__ import annotations

import argparse
import sys


def main() -> int:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(
        prog="python -P -m chainlens.server",
        description="Run the chainlens language server.",
    )
    parser.add_argument(
        "--tcp", action="store_true", help="listen on TCP instead of stdio"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=2087)
    args = parser.parse_args()
    from chainlens.server.app import serve

    return serve(tcp=args.tcp, host=args.host, port=args.port)


if __name__ == "__main__":
    sys.exit(main())
