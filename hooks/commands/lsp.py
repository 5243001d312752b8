"""``chainlens lsp``: run the language server (stdio, or ``--tcp`` to debug)."""

from __future__ import annotations

import argparse
import sys

from chainlens.hooks.options import port


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens lsp``."""
    lsp = sub.add_parser(
        "lsp",
        help="run the language server (stdio by default)",
        description="Run the chainlens language server: diagnostics, hovers, code "
        "actions, code lenses, inlay hints and the job graph, over the Language "
        "Server Protocol.  Needs the 'lsp' extra (pygls).",
    )
    lsp.add_argument(
        "--tcp", action="store_true", help="listen on TCP instead of stdio"
    )
    lsp.add_argument("--host", default="127.0.0.1", help="TCP host (with --tcp)")
    lsp.add_argument("--port", type=port, default=2087, help="TCP port (with --tcp)")


def run_lsp(args: argparse.Namespace) -> int:
    """Serve until the client exits; 2 when this installation lacks the server."""
    try:
        from chainlens.server.app import serve
    except ModuleNotFoundError as exc:
        print(
            f"chainlens: error: the language server needs {exc.name}, which "
            "this installation lacks: reinstall chainlens (pip install "
            "--force-reinstall chainlens, or from a checkout: pip install .)",
            file=sys.stderr,
        )
        return 2
    return serve(tcp=args.tcp, host=args.host, port=args.port)
