"""The REST API of rungd as Python methods (docs/api.md is the reference).

Standard library only (urllib). Every method returns the API's JSON
objects as dicts and lists; lists are fetched whole, page by page. An
error reply raises ApiError with the API's code, message and field.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Iterator, Optional

__all__ = ["Client", "RungError", "ApiError", "UnreachableError", "DEFAULT_SERVER"]

DEFAULT_SERVER = "http://127.0.0.1:8080"
PAGE = 1000  # the lists' largest limit
# Transport errors and 503 (rungd refusing connections beyond its limits,
# or a long-poll queue that is full) are worth a few more tries.
RETRIES = 3
# With several addresses: how long a request goes on looking for the leader
# while none leads (a standby takes over within a few seconds).
FAILOVER_WAIT_S = 10


class _ReplyAfterRefusal:
    """An HTTP connection that still reads the reply when sending the body
    failed: rungd refuses a request from its head (413 for a body over its
    --max-body, 401) and closes without reading the body, so the sender
    gets a broken pipe while the reply that says why waits to be read.
    Without this, urllib reports "Broken pipe" (docs/api.md, "Errors")."""

    _send_error: Optional[OSError] = None

    def request(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().request(*args, **kwargs)  # type: ignore[misc]
        except (BrokenPipeError, ConnectionResetError) as err:
            self._send_error = err  # the reply, if one came, says more

    def getresponse(self) -> http.client.HTTPResponse:
        try:
            return super().getresponse()  # type: ignore[misc]
        except (OSError, http.client.HTTPException):
            if self._send_error is not None:
                raise self._send_error from None
            raise


class _HTTPConnection(_ReplyAfterRefusal, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_ReplyAfterRefusal, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_HTTPConnection, req, **kwargs)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_HTTPSConnection, req, **kwargs)


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


def _is_loopback(server: str) -> bool:
    """Whether the URL's host is this machine: localhost, 127.0.0.0/8, ::1,
    as literals (a name such as 127.example.com may be anywhere)."""
    import ipaddress

    host = urllib.parse.urlsplit(server).hostname or ""
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


class RungError(Exception):
    """Any error of the client."""


class ApiError(RungError):
    """An error reply of rungd: HTTP status, and the API's code, message and
    field (the input at fault, or None)."""

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None):
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        text = f"{message} (field: {field})" if field else message
        super().__init__(f"{status} {code}: {text}")


class UnreachableError(RungError):
    """rungd could not be reached (connection refused, timeout, DNS);
    `refused`: the connection was refused, so nothing was sent."""

    refused = False


class Client:
    """A connection to rungd.

    `server` defaults to $RUNG_SERVER, else http://127.0.0.1:8080; several
    comma-separated addresses are a leader and its standbys on one
    PostgreSQL store: a request goes to one, and moves to the leader a
    standby names (or to the next address) when it is answered by a standby
    or cannot connect (docs/api.md, "Several servers"). `token`
    to $RUNG_TOKEN (sent as `Authorization: Bearer`, needed when rungd runs
    with --token). An https:// server is verified against `ca` (a CA
    file; default $RUNG_CA, else the system's CAs) unless `insecure`
    ($RUNG_INSECURE=1). A token is never sent over plain http:// to another
    machine unless `allow_plain_http` ($RUNG_ALLOW_PLAIN_HTTP=1): the
    client refuses, raising RungError (docs/api.md, "HTTPS").
    """

    def __init__(self, server: Optional[str] = None, token: Optional[str] = None,
                 timeout: float = 30.0, ca: Optional[str] = None,
                 insecure: Optional[bool] = None, allow_plain_http: Optional[bool] = None):
        import ssl

        given = server or os.environ.get("RUNG_SERVER") or DEFAULT_SERVER
        self.servers = []
        for one in given.split(","):
            one = one.strip().rstrip("/")
            if not one:
                raise RungError(f"an empty address in the server list {given!r}")
            self.servers.append(one if "://" in one else "http://" + one)
        self.server = self.servers[0]
        self.token = token if token is not None else os.environ.get("RUNG_TOKEN")
        self.timeout = timeout
        allow = _env_true("RUNG_ALLOW_PLAIN_HTTP") if allow_plain_http is None \
            else allow_plain_http
        for one in self.servers:
            if self.token and one.lower().startswith("http://") and not allow \
                    and not _is_loopback(one):
                raise RungError("refusing to send the token over plain http:// to another "
                                "machine: use https:// (rungd --tls-cert), or "
                                "allow_plain_http=True / RUNG_ALLOW_PLAIN_HTTP=1 on a network "
                                "you trust")
        ca = ca if ca is not None else (os.environ.get("RUNG_CA") or None)
        context = ssl.create_default_context(cafile=ca)
        if (_env_true("RUNG_INSECURE") if insecure is None else insecure):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self._opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler(context=context))

    def __repr__(self) -> str:
        return f"rung.Client({self.server!r})"

    # -- transport ---------------------------------------------------------

    def _move_on(self, leader: Optional[str]) -> None:
        """Talks to the leader a standby named when it is one of the
        addresses, else to the next."""
        leader = (leader or "").rstrip("/")
        if leader in self.servers and leader != self.server:
            self.server = leader
        else:
            self.server = self.servers[(self.servers.index(self.server) + 1)
                                       % len(self.servers)]

    def request(self, method: str, path: str, body: Any = None,
                query: Optional[dict] = None, raw: bool = False) -> Any:
        """One request; returns the decoded JSON reply (None for 204), or
        the text when `raw`. Raises ApiError or UnreachableError. With
        several addresses, a standby's answer or a refused connection (the
        request was not carried out) sends it to another, for up to
        FAILOVER_WAIT_S while none leads."""
        suffix = ""
        if query:
            query = {k: _query_value(v) for k, v in query.items() if v is not None}
            if query:
                suffix = "?" + urllib.parse.urlencode(query)
        moves = 0
        while True:
            try:
                return self._request_once(method, path + suffix, body, raw)
            except (ApiError, UnreachableError) as err:
                n = len(self.servers)
                standby = isinstance(err, ApiError) and err.status == 503 \
                    and getattr(err, "role", None) == "standby"
                refused = isinstance(err, UnreachableError) and err.refused
                if n < 2 or not (standby or refused) or moves >= n * (FAILOVER_WAIT_S + 1):
                    raise
                moves += 1
                self._move_on(getattr(err, "leader", None))
                if moves % n == 0:
                    time.sleep(1.0)

    def _request_once(self, method: str, path: str, body: Any, raw: bool) -> Any:
        url = self.server + path
        data = None
        headers = {"Accept": "application/json"}
        if body is not None or method in ("POST", "PATCH", "PUT"):
            data = json.dumps({} if body is None else body, allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in range(RETRIES + 1):
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with self._opener.open(req, timeout=self.timeout) as resp:
                    payload = resp.read()
                    if raw:
                        return payload.decode("utf-8")
                    return json.loads(payload) if payload else None
            except urllib.error.HTTPError as err:
                payload = err.read()
                # A 503 that carries Retry-After is rungd refusing the
                # connection before reading it: safe to send again; a
                # standby's goes to another address (request).
                if err.code == 503 and err.headers.get("X-Rung-Role") == "standby":
                    raise _api_error(err.code, payload) from None
                if err.code == 503 and attempt < RETRIES and err.headers.get("Retry-After"):
                    time.sleep(min(float(err.headers.get("Retry-After") or 1), 5.0))
                    continue
                raise _api_error(err.code, payload) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
                # Only requests that change nothing are sent again: a POST
                # whose reply was lost may have been carried out.
                reason = getattr(err, "reason", err)
                refused = isinstance(reason, ConnectionRefusedError) or \
                    isinstance(err, ConnectionRefusedError)
                if method == "GET" and attempt < RETRIES and not (refused and
                                                                  len(self.servers) > 1):
                    time.sleep(0.2 * (attempt + 1))
                    continue
                unreachable = UnreachableError(f"cannot reach rungd at {self.server}: {reason}")
                unreachable.refused = refused
                raise unreachable from None
        raise AssertionError("unreachable")

    def _pages(self, path: str, query: Optional[dict] = None) -> Iterator[dict]:
        offset = 0
        while True:
            reply = self.request("GET", path, query={**(query or {}), "limit": PAGE,
                                                     "offset": offset})
            items = reply["items"]
            yield from items
            offset += len(items)
            if not items or offset >= reply["total"]:
                return

    # -- blobs (docs/api.md, "Blobs") ---------------------------------------

    def _raw(self, method: str, path: str, data: Any = None, headers: Optional[dict] = None):
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.server + path, data=data, headers=headers,
                                     method=method)
        try:
            return self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            raise _api_error(err.code, err.read()) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            reason = getattr(err, "reason", err)
            raise UnreachableError(f"cannot reach rungd at {self.server}: {reason}") from None

    def blob_held(self, sha256: str) -> bool:
        """HEAD /api/v1/blobs/{sha256}: whether rungd holds that blob."""
        try:
            with self._raw("HEAD", "/api/v1/blobs/" + sha256):
                return True
        except ApiError as err:
            if err.status == 404:
                return False
            raise

    def put_blob(self, sha256: str, fileobj: Any, size: int) -> dict:
        """PUT /api/v1/blobs/{sha256}: uploads a packed working directory."""
        headers = {"Content-Type": "application/x-tar", "Content-Length": str(size),
                   "Accept": "application/json"}
        with self._raw("PUT", "/api/v1/blobs/" + sha256, fileobj, headers) as resp:
            return json.loads(resp.read())

    def get_artifacts(self, trial_id: int) -> bytes:
        """GET /api/v1/trials/{id}/artifacts: the tar of a completed trial's
        kept folder (Result.download unpacks it safely)."""
        with self._raw("GET", f"/api/v1/trials/{int(trial_id)}/artifacts") as resp:
            return resp.read()

    def get_blob(self, sha256: str) -> bytes:
        """GET /api/v1/blobs/{sha256}: the packed folder's bytes."""
        with self._raw("GET", "/api/v1/blobs/" + sha256) as resp:
            return resp.read()

    # -- experiments -------------------------------------------------------

    def create_experiment(self, spec: dict) -> dict:
        """POST /api/v1/experiments: submits a spec; returns the experiment."""
        return self.request("POST", "/api/v1/experiments", spec)

    def list_experiments(self, state: Optional[str] = None,
                         tag: Optional[str] = None) -> list[dict]:
        """Every experiment, newest first; only those in `state` and those
        tagged `tag` (rungd filters) when given."""
        items = self._pages("/api/v1/experiments", {"tag": tag})
        return [e for e in items if state is None or e["state"] == state]

    def get_experiment(self, experiment_id: int) -> dict:
        return self.request("GET", f"/api/v1/experiments/{int(experiment_id)}")

    def patch_experiment(self, experiment_id: int, **fields: Any) -> dict:
        """Changes num_samples (only up), priority, max_concurrent_trials,
        share, tags or notes (tags and notes in any state)."""
        return self.request("PATCH", f"/api/v1/experiments/{int(experiment_id)}", fields)

    def experiment_spec(self, experiment_id: int) -> dict:
        """{"submitted": the body as POSTed (None for experiments stored
        before rungd kept it), "effective": the spec with its defaults}."""
        return self.request("GET", f"/api/v1/experiments/{int(experiment_id)}/spec")

    def timeline(self, experiment_id: int) -> dict:
        """{"items": [[trial_id, attempt, worker_id, started_ms, ended_ms or
        None, state], ...] by start, "workers": {"id": "name"}}."""
        return self.request("GET", f"/api/v1/experiments/{int(experiment_id)}/timeline")

    def delete_experiment(self, experiment_id: int) -> dict:
        """Deletes an ended experiment with its trials and reports."""
        return self.request("DELETE", f"/api/v1/experiments/{int(experiment_id)}")

    def cancel_experiment(self, experiment_id: int) -> dict:
        return self.request("POST", f"/api/v1/experiments/{int(experiment_id)}/cancel")

    def pause_experiment(self, experiment_id: int, running: str = "finish") -> dict:
        """Leases nothing more of it; `running="pause"` also pauses its
        running trials (they resume from their checkpoints)."""
        return self.request("POST", f"/api/v1/experiments/{int(experiment_id)}/pause",
                            query={"running": running})

    def resume_experiment(self, experiment_id: int) -> dict:
        return self.request("POST", f"/api/v1/experiments/{int(experiment_id)}/resume")

    def retry_failed(self, experiment_id: int) -> dict:
        """Puts the failed trials back in line: {"retried": n, "experiment": {...}}."""
        return self.request("POST", f"/api/v1/experiments/{int(experiment_id)}/retry-failed")

    def list_trials(self, experiment_id: int, state: Optional[str] = None,
                    sort: str = "number", tag: Optional[str] = None) -> list[dict]:
        """The experiment's trials (`sort`: "number" or "value", best
        first); only those tagged `tag` when given."""
        return list(self._pages(f"/api/v1/experiments/{int(experiment_id)}/trials",
                                {"state": state, "sort": sort, "tag": tag}))

    def trials_csv(self, experiment_id: int) -> str:
        """The trials as CSV, as `rung export` writes them."""
        return self.request("GET", f"/api/v1/experiments/{int(experiment_id)}/trials.csv",
                            raw=True)

    def curves(self, experiment_id: int, after: int = 0, generation: int = 0,
               metric: Optional[str] = None) -> dict:
        """One page of every reported value of the metric (or of `metric`,
        any reported one), from a cursor."""
        return self.request("GET", f"/api/v1/experiments/{int(experiment_id)}/curves",
                            query={"after": after, "generation": generation, "metric": metric})

    def importance(self, experiment_id: int, metric: Optional[str] = None) -> dict:
        """Each parameter's share of the variance of each objective and
        constraint (or of `metric`), by fANOVA over the completed trials
        (docs/api.md, "GET /api/v1/experiments/{id}/importance")."""
        return self.request("GET", f"/api/v1/experiments/{int(experiment_id)}/importance",
                            query={"metric": metric})

    def surface(self, experiment_id: int, x: str, y: str, metric: Optional[str] = None,
                n: Optional[int] = None) -> dict:
        """The metric over two numeric parameters on an n x n grid (docs/api.md,
        "GET /api/v1/experiments/{id}/surface")."""
        return self.request("GET", f"/api/v1/experiments/{int(experiment_id)}/surface",
                            query={"x": x, "y": y, "metric": metric, "n": n})

    # -- trials ------------------------------------------------------------

    def get_trial(self, trial_id: int) -> dict:
        return self.request("GET", f"/api/v1/trials/{int(trial_id)}")

    def patch_trial(self, trial_id: int, **fields: Any) -> dict:
        """Changes a trial's tags or notes (the only fields it takes)."""
        return self.request("PATCH", f"/api/v1/trials/{int(trial_id)}", fields)

    def trial_metrics(self, trial_id: int, after_step: Optional[int] = None) -> list[dict]:
        """The reports of the trial's current attempt, ascending by step."""
        items: list[dict] = []
        cursor = -1 if after_step is None else after_step
        while True:
            reply = self.request("GET", f"/api/v1/trials/{int(trial_id)}/metrics",
                                 query={"after_step": cursor})
            page = reply["items"]
            if not page:
                return items
            items.extend(page)
            cursor = page[-1]["step"]

    def stop_trial(self, trial_id: int) -> dict:
        """Stops one trial: state `stopped`, stopped_by `user`."""
        return self.request("POST", f"/api/v1/trials/{int(trial_id)}/stop")

    # -- workers (the pull protocol of rung-worker) ------------------------

    def list_workers(self, all: bool = False) -> list[dict]:
        """The workers seen lately (`all=True`: every one ever registered)."""
        return list(self._pages("/api/v1/workers", {"all": all}))

    def register_worker(self, **body: Any) -> dict:
        return self.request("POST", "/api/v1/workers", body)

    def lease(self, worker_id: int, **body: Any) -> Optional[dict]:
        """Asks for a trial; None when none came within `wait_s`."""
        return self.request("POST", f"/api/v1/workers/{int(worker_id)}/lease", body)

    def heartbeat(self, worker_id: int, **body: Any) -> dict:
        return self.request("POST", f"/api/v1/workers/{int(worker_id)}/heartbeat", body)

    def report(self, trial_id: int, **body: Any) -> dict:
        return self.request("POST", f"/api/v1/trials/{int(trial_id)}/report", body)

    def finish(self, trial_id: int, **body: Any) -> dict:
        return self.request("POST", f"/api/v1/trials/{int(trial_id)}/finish", body)

    # -- users, tokens, events (docs/api.md, "Users, roles and tokens") ----

    def whoami(self) -> dict:
        """{"name", "role", "user_id", "token_id"} of this client's token."""
        return self.request("GET", "/api/v1/whoami")

    def create_user(self, name: str, role: str, labels: Optional[dict] = None,
                    expires_in_days: Optional[int] = None) -> dict:
        """An admin adds a user; the reply holds their first token ("token"),
        shown this once. `labels` binds a worker user to a pool."""
        body: dict = {"name": name, "role": role}
        if labels is not None:
            body["labels"] = labels
        if expires_in_days is not None:
            body["expires_in_days"] = expires_in_days
        return self.request("POST", "/api/v1/users", body)

    def list_users(self) -> list[dict]:
        return self.request("GET", "/api/v1/users")["items"]

    def remove_user(self, user_id: int) -> dict:
        """Marks the user removed and revokes every token of theirs."""
        return self.request("DELETE", f"/api/v1/users/{int(user_id)}")

    def create_token(self, name: str = "token", expires_in_days: Optional[int] = None) -> dict:
        """A new token of this client's user ("token" in the reply, shown once)."""
        body: dict = {"name": name}
        if expires_in_days is not None:
            body["expires_in_days"] = expires_in_days
        return self.request("POST", "/api/v1/tokens", body)

    def list_tokens(self, all: bool = False) -> list[dict]:
        """This user's tokens, without their text (`all=True`: an admin's view
        of everyone's)."""
        return self.request("GET", "/api/v1/tokens", query={"all": all or None})["items"]

    def revoke_token(self, token_id: int) -> dict:
        return self.request("DELETE", f"/api/v1/tokens/{int(token_id)}")

    def events(self, after: int = 0, kind: Optional[str] = None,
               experiment: Optional[int] = None, trial: Optional[int] = None,
               actor: Optional[str] = None, limit: int = 100, wait_s: int = 0) -> dict:
        """One page of the event log, oldest first: {"items", "next_after"}.
        With `wait_s`, waits up to that long for a new event (an empty page
        when none came)."""
        reply = self.request("GET", "/api/v1/events", query={
            "after": after, "kind": kind, "experiment": experiment, "trial": trial,
            "actor": actor, "limit": limit, "wait_s": wait_s or None})
        return reply if reply is not None else {"items": [], "next_after": after}

    def iter_events(self, follow: bool = False, **filters: Any) -> Iterator[dict]:
        """Every event the filters select; with `follow`, goes on waiting
        for new ones until the caller stops iterating."""
        after = int(filters.pop("after", 0))
        while True:
            page = self.events(after=after, limit=1000, wait_s=30 if follow else 0, **filters)
            yield from page["items"]
            after = page["next_after"]
            if not follow and len(page["items"]) < 1000:
                return

    # -- operations --------------------------------------------------------

    def healthz(self) -> dict:
        return self.request("GET", "/healthz")

    def metrics_text(self) -> str:
        """The Prometheus text of GET /metrics."""
        return self.request("GET", "/metrics", raw=True)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _api_error(status: int, payload: bytes) -> ApiError:
    try:
        doc = json.loads(payload)
        err = doc["error"]
        out = ApiError(status, err.get("code", "error"), err.get("message", ""),
                       err.get("field"))
        # A standby's answer names the leader (docs/api.md, "Several servers").
        out.role = doc.get("role")
        out.leader = doc.get("leader")
        return out
    except (ValueError, KeyError, TypeError):
        text = payload.decode("utf-8", "replace").strip()[:200]
        return ApiError(status, "http_error", text or f"HTTP {status}")
