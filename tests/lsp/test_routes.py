"""The server reads like ruff's: one routing table, one module per handler."""

from __future__ import annotations

from chainlens.server import routes
from chainlens.server.app import create_server
from tests.support import ROOT


def test_each_method_is_routed_once_to_a_handler_of_its_own_module() -> None:
    methods = [route.method for route in routes.ROUTES]
    assert len(methods) == len(set(methods))
    handlers = {
        path.stem
        for path in (ROOT / "server" / "handlers").glob("*.py")
        if path.stem not in ("__init__", "kinds")
    }
    handled = [r.handler for r in routes.ROUTES] + [h for _, h in routes.COMMANDS]
    used = {handler.__module__.rsplit(".", 1)[1] for handler in handled}
    assert used == handlers  # no handler module left out, none shared


def test_the_server_serves_every_route_and_command() -> None:
    server = create_server()
    features = server.protocol.fm.features
    assert {route.method for route in routes.ROUTES} <= set(features)
    commands = server.protocol.fm.commands
    assert {name for name, _ in routes.COMMANDS} <= set(commands)
