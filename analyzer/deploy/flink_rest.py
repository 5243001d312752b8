"""A Flink cluster's REST API, read (never written to): the running job.

What is asked, of Flink 2.3's REST API (also 1.x's: the same paths):

* ``GET /config``: the cluster's Flink version (``flink-version``);
* ``GET /jobs/overview``: the jobs, their names, IDs and states;
* ``GET /jobs/<id>``: the job's tasks (``vertices``: ID, name, parallelism,
  max parallelism) and ``plan`` (each task's chained operators in its
  ``description``, its inputs with their ``ship_strategy``);
* ``GET /jobs/<id>/config``: the parallelism the job was submitted with
  (``execution-config.job-parallelism``);
* ``GET /jobs/<id>/checkpoints``: the latest completed checkpoint and
  savepoint (``latest.completed`` / ``latest.savepoint``, ``external_path``).

Flink exposes no operator ID below a task's head: a task's ID is its head
operator's ID, and the operator IDs of the operators chained after it are
read from the latest snapshot's ``_metadata`` (every operator of the job has
a state there, empty or not).

The client is bounded: each request has a timeout, a response larger than
:attr:`RestLimits.max_bytes` is refused, a redirect to another host (or
scheme, or port) is refused, and ``https://`` is verified against the system's
certificates (``SSL_CERT_FILE`` as Python's ``ssl`` reads it) unless the caller
gives a context.  Only the standard library is used (``urllib``).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlsplit

from chainlens.analyzer.model.deployment import (
    RunningJob,
    RunningVertex,
    Snapshot,
)

#: a task's description in the plan: its operators, one per line
_OPERATOR_SEPARATOR: Final = "<br/>"


class RestError(Exception):
    """The cluster could not give what was asked (one line)."""


@dataclass(frozen=True, slots=True)
class RestLimits:
    """Bounds of the REST client."""

    #: seconds for connecting and for each read
    timeout: float = 30.0
    #: the largest response read (a plan of 1,000 tasks is about 1 MB)
    max_bytes: int = 16 * 1024 * 1024


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same scheme, host and port."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        old, new = urlsplit(req.full_url), urlsplit(newurl)
        if (old.scheme, old.netloc) != (new.scheme, new.netloc):
            raise RestError(
                f"{req.full_url}: redirected to {new.scheme}://{new.netloc}, another "
                "host: not followed"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class FlinkRest:
    """GET requests to one Flink REST endpoint, bounded."""

    def __init__(
        self,
        url: str,
        limits: RestLimits | None = None,
        *,
        context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RestError(
                f"{url}: not a Flink REST endpoint (http://HOST:PORT or https://...)"
            )
        self.url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.limits = limits or RestLimits()
        handlers: list[Any] = [_SameOrigin()]
        if parts.scheme == "https":
            handlers.append(
                urllib.request.HTTPSHandler(
                    context=context or ssl.create_default_context()
                )
            )
        self._opener = urllib.request.build_opener(*handlers)

    def get(self, path: str) -> Any:
        """The JSON the cluster answers ``GET path`` with."""
        shown = self.url + path
        request = urllib.request.Request(
            shown, headers={"Accept": "application/json"}, method="GET"
        )
        try:
            with self._opener.open(request, timeout=self.limits.timeout) as response:
                body = response.read(self.limits.max_bytes + 1)
        except RestError:
            raise
        except urllib.error.HTTPError as exc:
            raise RestError(f"{shown}: HTTP {exc.code}{_flink_errors(exc)}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise RestError(self._silent(shown)) from None
            if isinstance(reason, ssl.SSLError):
                raise RestError(
                    f"{shown}: TLS: {getattr(reason, 'reason', None) or reason}"
                ) from None
            raise RestError(f"{shown}: cannot connect: {_words(reason)}") from None
        except TimeoutError:
            raise RestError(self._silent(shown)) from None
        except (http.client.HTTPException, OSError) as exc:
            raise RestError(f"{shown}: {_words(exc)}") from None
        if len(body) > self.limits.max_bytes:
            raise RestError(
                f"{shown}: the answer is larger than {self.limits.max_bytes:,} bytes, "
                "more than chainlens reads"
            )
        try:
            return json.loads(body)
        except ValueError:
            raise RestError(f"{shown}: the answer is not JSON") from None

    def _silent(self, shown: str) -> str:
        return f"{shown}: the cluster did not answer within {self.limits.timeout:g} s"

    # -- what the analysis needs ----------------------------------------------

    def flink_version(self) -> str:
        """The cluster's Flink version (``2.3.0``)."""
        answer = self.get("/config")
        version = answer.get("flink-version") if isinstance(answer, dict) else None
        if not isinstance(version, str) or not version:
            raise RestError(f"{self.url}/config: no flink-version in the answer")
        return version

    def jobs(self) -> list[dict[str, Any]]:
        """``/jobs/overview``: each job's ``jid``, ``name``, ``state``."""
        answer = self.get("/jobs/overview")
        jobs = answer.get("jobs") if isinstance(answer, dict) else None
        if not isinstance(jobs, list):
            raise RestError(f"{self.url}/jobs/overview: no jobs list in the answer")
        return [j for j in jobs if isinstance(j, dict)]

    def find_job(self, wanted: str) -> dict[str, Any]:
        """The job with ID ``wanted``, else the running job named ``wanted``
        (a name several running jobs have is an error)."""
        jobs = self.jobs()
        by_id = [j for j in jobs if str(j.get("jid", "")).lower() == wanted.lower()]
        if by_id:
            return by_id[0]
        named = [j for j in jobs if j.get("name") == wanted]
        running = [j for j in named if j.get("state") == "RUNNING"]
        if len(running) == 1:
            return running[0]
        if len(running) > 1:
            ids = ", ".join(str(j.get("jid")) for j in running)
            raise RestError(
                f"{self.url}: {len(running)} running jobs are named {wanted!r} "
                f"({ids}): give the job's ID"
            )
        if named:
            latest = max(named, key=lambda j: int(j.get("start-time") or 0))
            return latest
        shown = (
            ", ".join(f"{j.get('name')!r} ({j.get('state')})" for j in jobs[:10])
            or "none"
        )
        raise RestError(
            f"{self.url}: no job named or with ID {wanted!r} (jobs: {shown})"
        )

    def running_job(self, wanted: str) -> RunningJob:
        """The job ``wanted`` (name or ID) as the cluster runs it."""
        summary = self.find_job(wanted)
        job_id = str(summary.get("jid"))
        where = "/jobs/" + quote(job_id, safe="")
        detail = self.get(where)
        if not isinstance(detail, dict):
            raise RestError(f"{self.url}{where}: not a job")
        plan = detail.get("plan") if isinstance(detail.get("plan"), dict) else None
        if plan is None:
            plan = self.get(where + "/plan").get("plan", {})
        nodes = {
            str(n.get("id")): n for n in plan.get("nodes", []) if isinstance(n, dict)
        }
        vertices = []
        for vertex in detail.get("vertices", []):
            if not isinstance(vertex, dict):
                continue
            vid = str(vertex.get("id"))
            node = nodes.get(vid, {})
            inputs = tuple(
                (str(i.get("id")), str(i.get("ship_strategy", "")))
                for i in node.get("inputs", []) or []
                if isinstance(i, dict)
            )
            vertices.append(
                RunningVertex(
                    id=vid,
                    name=str(vertex.get("name", "")),
                    parallelism=_int(vertex.get("parallelism")),
                    max_parallelism=_int(vertex.get("maxParallelism")),
                    operators=_operators(str(node.get("description", ""))),
                    inputs=inputs,
                )
            )
        config = self.get(where + "/config")
        execution = (
            config.get("execution-config", {}) if isinstance(config, dict) else {}
        )
        return RunningJob(
            url=self.url,
            id=job_id,
            name=str(detail.get("name", summary.get("name", ""))),
            state=str(detail.get("state", summary.get("state", ""))),
            flink_version=self.flink_version(),
            job_parallelism=_int(execution.get("job-parallelism")),
            vertices=tuple(vertices),
            snapshot=self.latest_snapshot(job_id),
        )

    def latest_snapshot(self, job_id: str) -> Snapshot | None:
        """The job's latest completed checkpoint or savepoint with a path."""
        answer = self.get("/jobs/" + quote(job_id, safe="") + "/checkpoints")
        latest = answer.get("latest", {}) if isinstance(answer, dict) else {}
        found = []
        for kind in ("completed", "savepoint"):
            entry = latest.get(kind) if isinstance(latest, dict) else None
            if not isinstance(entry, dict):
                continue
            path = entry.get("external_path")
            if not isinstance(path, str) or not path or path.startswith("<"):
                continue  # "<checkpoint-not-externalized>"
            found.append(
                Snapshot(
                    path=path,
                    kind="savepoint" if entry.get("is_savepoint") else "checkpoint",
                    checkpoint_id=_int(entry.get("id")) or 0,
                    taken=_int(entry.get("latest_ack_timestamp")) or 0,
                )
            )
        return max(found, key=lambda s: (s.checkpoint_id, s.taken)) if found else None


def _operators(description: str) -> tuple[str, ...]:
    """The operator names of a plan node's description, head first
    (``Source: numbers<br/>+- Map<br/>``)."""
    out = []
    for part in description.split(_OPERATOR_SEPARATOR):
        name = part.strip().removeprefix("+-").strip()
        if name:
            out.append(name)
    return tuple(out)


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _flink_errors(exc: urllib.error.HTTPError) -> str:
    """Flink's ``{"errors": [...]}``, first line of the first."""
    try:
        body = exc.read(64 * 1024)
        errors = json.loads(body).get("errors")
    except (OSError, ValueError, AttributeError):
        return ""
    if isinstance(errors, list) and errors:
        first = str(errors[0]).strip().splitlines()
        return f": {first[0][:300]}" if first else ""
    return ""


def _words(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason).splitlines()[0][:300] if str(reason) else type(reason).__name__
