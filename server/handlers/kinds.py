"""The kinds of handler, as ruff's server has them (its ``api/traits.rs``).

* A **notification** handler (``did_open``, ``did_change_configuration``...)
  runs on the event loop and only updates the server's state: the documents,
  the settings, what to analyse again.  It never analyses: the session does
  that off the loop, on a snapshot.
* A **document request** (``hover``, ``codeAction``, ``codeLens``...) is about
  one open document: :func:`document_request` waits for the analysis of the
  document's current version, then the handler converts it; a document that is
  not open gets the handler's empty answer.
* The other requests (``initialize``, ``shutdown``, ``chainlens/jobGraph``) are
  functions of the server and their parameters.

Every handler is listed once, with its method, in :mod:`chainlens.server.routes`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer
    from chainlens.server.session import Analysis


class _Document(Protocol):
    uri: str


class AboutADocument(Protocol):
    """The parameters of a request about one document."""

    @property
    def text_document(self) -> _Document: ...


P = TypeVar("P", bound=AboutADocument)
R = TypeVar("R")

#: A document request's own work: the server, the document's current
#: analysis and the request's parameters in; the answer out (or awaited).
Run = Callable[["ChainlensServer", "Analysis", P], "R | Awaitable[R]"]


def document_request(
    run: Run[P, R], empty: R
) -> Callable[[ChainlensServer, P], Awaitable[R]]:
    """The handler of a request about one document: ``run`` on the analysis of
    its current version (waited for), ``empty`` when it is not open."""

    async def handle(ls: ChainlensServer, params: P) -> R:
        analysis = await ls.session.current(params.text_document.uri)
        if analysis is None:
            return empty
        answer: Any = run(ls, analysis, params)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer  # type: ignore[no-any-return]

    handle.__name__ = handle.__qualname__ = run.__name__
    handle.__module__ = run.__module__
    handle.__doc__ = run.__doc__
    return handle
