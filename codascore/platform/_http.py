"""The one door to a Codabench site, on the standard library's http.client: one kept-alive connection per
host (the site's API, its storage), the token in one header, a time limit on every request, retries that
read the server, downloads that resume inside a file, and every failure turned into one of
codascore.errors' PlatformError classes, with the address asked, what was being done and the HTTP status,
here and nowhere else (docs/end_of_competition.md#when-something-goes-wrong).

Retries, as huggingface_hub's downloads do them: only a request that may be repeated (a GET) is repeated,
after a fault of the site (5xx, no answer, a cut) with a doubling wait, or after a 429 or 503 for as long
as its ``Retry-After`` asks, each wait capped (MAX_WAIT: a site asking for longer is told to the user, not
waited for). A download that is cut keeps its bytes under the ``.part`` name and asks for the rest with
``Range``: a 206 is appended, a 200 starts the file again; a cut after which bytes came is not counted as a
retry, one without is.

The token goes only to the site's own address, and never through a redirect: neither a redirect nor a
presigned storage address (the bundle's upload, a submission's files) ever sees it. Proxies are those of
the environment (``http_proxy``, ``https_proxy``, ``no_proxy``), as urllib reads them.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import http.client
import json
import os
import re
import select
import socket
import ssl
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable

from .. import __version__
from ..errors import (NotCodabenchError, PlatformAuthError, PlatformError, PlatformRequestError,
                      PlatformServerError, PlatformThrottled, PlatformTimeout, SiteFault, SiteUnreachable,
                      TransferInterrupted)
from ..formats.fetch import part_path

#: Seconds to wait for a connection or for the next bytes of an answer.
TIMEOUT = 60.0
#: Attempts after the first of a request that may be repeated (a GET), after a fault of the site.
RETRIES = 2
#: Waits a GET may make when the site asks for them (429, or 503 with Retry-After), beside its retries.
WAITS = 5
#: The longest wait between two attempts, in seconds: a Retry-After beyond it ends the request.
MAX_WAIT = 60.0
#: Cuts of one download after which it stops, even though bytes came after each (a never-ending trickle).
CUTS = 100
#: Redirects a GET follows.
REDIRECTS = 5
#: Bytes read or sent at a time (and the step of the progress shown).
CHUNK = 1 << 20
USER_AGENT = f"codascore/{__version__}"
#: Progress of a transfer: called with the bytes done and the total (None when the site did not say).
Progress = Callable[[int, "int | None"], None]
#: The errors of a connection already open that the server closed meanwhile: the request goes again on a
#: fresh connection, once, when it may be repeated.
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)

sleep = time.sleep  # every wait of this module, in one place


class Http:
    """A site's address, the token sent to it (None: anonymous), the time limit and the retries of GETs.
    backoff: seconds before the first retry after a fault (doubled at each); say: where a wait the site
    asked for is told (None: not told). ``opened`` and ``sent`` count the connections and the requests."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = TIMEOUT,
                 retries: int = RETRIES, backoff: float = 1.0, say: Callable[[str], None] | None = None):
        self.base_url = base_url.rstrip("/") + "/"
        self.token = token
        self.timeout, self.retries, self.backoff, self.say = timeout, retries, backoff, say
        self.connections: dict[tuple, http.client.HTTPConnection] = {}
        self.opened = self.sent = 0

    def url(self, path: str, params: dict | None = None) -> str:
        """The absolute address of an API path ("api/phases/3/") on this site, with its query."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return urllib.parse.urljoin(self.base_url, path.lstrip("/")) + query

    def is_own(self, url: str) -> bool:
        """Whether url is on this site's own scheme, host and port (where the token may go)."""
        mine, theirs = urllib.parse.urlsplit(self.base_url), urllib.parse.urlsplit(url)
        return (mine.scheme, mine.netloc) == (theirs.scheme, theirs.netloc)

    def close(self) -> None:
        """Close every kept connection."""
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()

    # -- one request --------------------------------------------------------------------------------------
    def connection(self, url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
        """The kept connection for url's host (through the environment's proxy, if any; a new one when none
        is open or the server closed it), and the target to ask it for (a plain proxy: the whole address)."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise SiteUnreachable(f"not an http(s) address ({parts.scheme or 'no scheme'})", url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        proxy = proxy_for(parts.scheme, parts.hostname or "")
        key = (parts.scheme, parts.hostname, port, proxy)
        connection = self.connections.get(key)
        if connection is not None and connection.sock is not None and dropped(connection.sock):
            connection.close()
        if connection is None:
            connection = new_connection(parts.scheme, parts.hostname or "", port, proxy, timeout)
            self.connections[key] = connection
        if proxy and parts.scheme == "http":
            target = url.split("#", 1)[0]
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection, target

    def send(self, method: str, url: str, doing: str, body: bytes | Iterable[bytes] | None = None,
             headers: dict | None = None, timeout: float | None = None,
             token: bool = True) -> http.client.HTTPResponse:
        """The answer to one request, whatever its status, its body still to read (read it to the end, or
        call :func:`finish`). A transport failure is raised as its PlatformError; a kept connection that the
        server had closed is replaced once, when the request may be repeated. token False: not sent (a
        redirect's)."""
        timeout = timeout or self.timeout
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **(headers or {})}
        if token and self.token and self.is_own(url):
            headers["Authorization"] = f"Token {self.token}"
        for fresh in (False, True):
            connection, target = self.connection(url, timeout)
            headers.update(getattr(connection, "proxy_headers", {}))
            reused = connection.sock is not None
            try:
                if not reused:
                    self.opened += 1
                    connection.connect()
            except BaseException as exc:
                connection.close()
                fault = connect_error(exc, url, doing)
                if fault is None:
                    raise
                raise fault from exc
            try:
                self.sent += 1
                connection.request(method, target, body=body, headers=headers)
                return connection.getresponse()
            except BaseException as exc:
                connection.close()
                if reused and not fresh and isinstance(exc, STALE) and method in ("GET", "HEAD"):
                    continue
                fault = platform_error(exc, url, doing)
                if fault is None:
                    raise
                raise fault from exc
        raise AssertionError("unreachable")

    def get(self, url: str, doing: str, headers: dict | None = None, timeout: float | None = None,
            accept: tuple[int, ...] = ()) -> tuple[http.client.HTTPResponse, str]:
        """A GET's answer and the address that gave it, redirects followed (without the token); an error
        status raised as its PlatformError, except those in accept."""
        for hop in range(REDIRECTS + 1):
            response = self.send("GET", url, doing, headers=headers, timeout=timeout, token=not hop)
            location = response.getheader("Location")
            if response.status in (301, 302, 303, 307, 308) and location:
                drain(response)
                url = urllib.parse.urljoin(url, location)
                continue
            if response.status >= 400 and response.status not in accept:
                raise http_error(response, url, doing)
            return response, url
        raise PlatformRequestError(f"more than {REDIRECTS} redirects", url, doing)

    # -- what the client asks --------------------------------------------------------------------------------
    def json(self, method: str, path: str, doing: str, payload: dict | None = None,
             params: dict | None = None, timeout: float | None = None) -> Any:
        """The JSON answer of an API request (payload sent as JSON), within timeout seconds (default: the
        site's). A GET is repeated after a fault of the site or when the site asks to wait; anything else is
        sent once."""
        url = self.url(path, params)
        body = None if payload is None else json.dumps(payload).encode()
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"

        def attempt():
            if method == "GET":
                response, _ = self.get(url, doing, headers, timeout)
            else:
                response = self.send(method, url, doing, body, headers, timeout)
                if response.status >= 300:
                    raise http_error(response, url, doing)
            raw = read_all(response, url, doing)
            return parse_json(raw, response.getheader("Content-Type") or "", url, doing)

        return self.repeat(attempt) if method == "GET" else attempt()

    def repeat(self, attempt: Callable[[], Any]) -> Any:
        """attempt(), again after a SiteFault as :class:`Patience` allows, waiting what it says."""
        patience = Patience(self)
        while True:
            try:
                return attempt()
            except SiteFault as exc:
                patience.wait_or_raise(exc)

    def put_file(self, url: str, path: Path, doing: str, progress: Progress | None = None,
                 content_type: str = "application/zip") -> None:
        """PUT a file's bytes to url (a presigned storage address: sent once, with no token), in chunks,
        progress called after each."""
        total = Path(path).stat().st_size

        def chunks():
            sent = 0
            with open(path, "rb") as handle:
                while chunk := handle.read(CHUNK):
                    sent += len(chunk)
                    yield chunk
                    if progress:
                        progress(sent, total)

        headers = {"Content-Type": content_type, "Content-Length": str(total)}
        response = self.send("PUT", url, doing, chunks(), headers)
        if response.status >= 300:
            raise http_error(response, url, doing)
        read_all(response, url, doing)

    def download(self, url: str, dest: Path, doing: str, progress: Progress | None = None, *,
                 validator: str | None = None, started: Callable[[str | None, int | None], bool] | None = None,
                 keep_empty: bool = True) -> tuple[int, str]:
        """Download url into dest through dest's ``.part`` name, renamed only once every byte the site
        announced has come; its size and sha256 (Download says how). validator: the ETag of the object an
        existing ``.part`` holds the first bytes of (None: that ``.part`` is not trusted, the file starts
        again); started(etag, total): called before the first byte of a transfer from byte 0 is written,
        for the caller to record what the ``.part`` will hold, True when it did (without it: when the
        object has an ETag): only then is the ``.part`` kept after a failure, for another fetch to resume;
        keep_empty False: an empty answer is not kept (a placeholder), (0, its sha256) returned and no file
        left."""
        return Download(self, url, Path(dest), doing, progress, validator, started).fetch(keep_empty)


class Patience:
    """How long to wait before the next attempt of a GET, or that there is none (the error raised): a fault
    of the site (5xx, no answer, a cut) is retried ``retries`` times after ``backoff``, 2 ``backoff``...;
    a 429 or a 503 with Retry-After waits what it asks, ``WAITS`` times; no wait is longer than MAX_WAIT."""

    def __init__(self, http: Http):
        self.http, self.faults, self.waits = http, 0, 0

    def wait_or_raise(self, exc: SiteFault) -> None:
        asked = exc.retry_after
        if exc.status == 429 or asked is not None:
            self.waits += 1
            if self.waits > WAITS or (asked is not None and asked > MAX_WAIT):
                raise exc
            seconds = asked if asked is not None else min(self.http.backoff * 2 ** (self.waits - 1), MAX_WAIT)
            if self.http.say:
                self.http.say(f"    waiting {seconds:g} s: the site answered HTTP {exc.status} ({exc.doing})")
        else:
            self.faults += 1
            if self.faults > self.http.retries:
                raise exc
            seconds = min(self.http.backoff * 2 ** (self.faults - 1), MAX_WAIT)
        sleep(seconds)


class Download:
    """One file's download: its bytes appended to its ``.part`` as they come, the rest asked for with
    ``Range`` after a cut, the sha256 computed on the way."""

    def __init__(self, http: Http, url: str, dest: Path, doing: str, progress: Progress | None,
                 validator: str | None, started: Callable[[str | None, int | None], bool] | None):
        self.http, self.url, self.dest, self.doing, self.progress = http, url, dest, doing, progress
        self.part, self.started = part_path(dest), started or (lambda etag, total: etag is not None)
        self.resumable = bool(validator)
        self.etag, self.total, self.digest, self.size = validator, None, hashlib.sha256(), 0
        if validator and self.part.is_file() and self.part.stat().st_size:
            with open(self.part, "rb") as handle:  # resumed from an earlier fetch: its bytes in the digest
                while chunk := handle.read(CHUNK):
                    self.digest.update(chunk)
            self.size = self.part.stat().st_size
        else:
            self.etag = None
            self.part.unlink(missing_ok=True)

    def fetch(self, keep_empty: bool) -> tuple[int, str]:
        """The file whole under its name: its size and sha256."""
        patience, cuts = Patience(self.http), 0
        try:
            while True:
                before = self.size
                try:
                    self.attempt()
                    break
                except SiteFault as exc:
                    if self.size > before and cuts < CUTS:
                        cuts += 1  # bytes came: resume at once, no retry spent
                        continue
                    patience.wait_or_raise(exc)
        except BaseException:
            if not (self.resumable and self.size):  # nothing another fetch could resume
                self.part.unlink(missing_ok=True)
            raise
        if not self.size and not keep_empty:
            self.part.unlink(missing_ok=True)
            return 0, self.digest.hexdigest()
        os.replace(self.part, self.dest)
        return self.size, self.digest.hexdigest()

    def restart(self) -> None:
        self.size, self.digest, self.etag, self.total = 0, hashlib.sha256(), None, None

    def answer(self) -> tuple[http.client.HTTPResponse, str]:
        """The answer that gives the next bytes: the rest of the ``.part``'s object (206), else the whole
        file from byte 0 (a 200; a 416 or a 206 of other bytes is asked again without Range)."""
        if self.size:
            response, url = self.http.get(self.url, self.doing, {"Range": f"bytes={self.size}-"}, accept=(416,))
            if self.resumes(response):
                return response, url
            if response.status == 416 or response.status == 206:
                drain(response)
                response, url = self.http.get(self.url, self.doing)
        else:
            response, url = self.http.get(self.url, self.doing)
        self.restart()
        length = response.getheader("Content-Length")
        self.total = int(length) if length and length.isdigit() else None
        self.etag = strong_etag(response.getheader("ETag"))
        self.resumable = bool(self.started(self.etag, self.total))
        return response, url

    def attempt(self) -> None:
        """One request: from byte 0, or the rest after the bytes of the ``.part``."""
        response, url = self.answer()
        try:
            with open(self.part, "ab" if self.size else "wb") as handle:
                while chunk := read_chunk(response, url, self.doing):
                    handle.write(chunk)
                    self.digest.update(chunk)
                    self.size += len(chunk)
                    if self.progress:
                        self.progress(self.size, self.total)
        finally:
            finish(response)
        if self.total is not None and self.size != self.total:
            raise TransferInterrupted(f"the transfer stopped after {self.size} of {self.total} bytes", url,
                                      self.doing)

    def resumes(self, response: http.client.HTTPResponse) -> bool:
        """Whether a 206 answer is the rest of the ``.part``'s object: it starts where the ``.part`` ends,
        of the same total and ETag."""
        if response.status != 206 or not self.size:
            return False
        found = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+|\*)", (response.getheader("Content-Range") or "").strip())
        if not found or int(found.group(1)) != self.size:
            return False
        total = None if found.group(3) == "*" else int(found.group(3))
        if self.total is not None and total != self.total:
            return False
        etag = strong_etag(response.getheader("ETag"))
        if self.etag is not None and etag != self.etag:
            return False
        if self.etag is None and self.total is None:  # nothing to tell this object from another
            return False
        self.total, self.etag = total, etag
        return True


def strong_etag(value: str | None) -> str | None:
    """An ETag that names the bytes (a weak one, W/..., does not)."""
    return value if value and not value.startswith("W/") else None


def drain(response: http.client.HTTPResponse) -> None:
    """Read a small answer to its end (a redirect's, a refused range's), so that its connection is kept."""
    try:
        response.read(CHUNK)
    except (OSError, http.client.HTTPException):
        pass
    finish(response)


def finish(response: http.client.HTTPResponse) -> None:
    """Done with an answer: its connection kept when the body was read to the end, else closed (unread bytes
    would be read as the next answer)."""
    if not response.isclosed() and getattr(response, "length", None) == 0:
        response.read()  # read1 stops at the last byte without closing the answer; this closes it
    if not response.isclosed():
        response.close()
        connection = getattr(response, "codascore_connection", None)
        if connection is not None:
            connection.close()


def dropped(sock: socket.socket) -> bool:
    """Whether the server closed a kept connection (it is readable while no answer is awaited)."""
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def proxy_for(scheme: str, host: str) -> str | None:
    """The environment's proxy for scheme and host (``http_proxy``, ``https_proxy``, ``no_proxy``)."""
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


class Connection(http.client.HTTPConnection):
    """A plain connection whose answers know it (so that an answer left unread closes it)."""

    def getresponse(self):
        response = super().getresponse()
        response.codascore_connection = self
        return response


class SecureConnection(http.client.HTTPSConnection):
    def getresponse(self):
        response = super().getresponse()
        response.codascore_connection = self
        return response


def new_connection(scheme: str, host: str, port: int, proxy: str | None,
                   timeout: float) -> http.client.HTTPConnection:
    """A connection to host (through proxy: a plain request to it for http, a tunnel for https)."""
    if not proxy:
        if scheme == "https":
            return SecureConnection(host, port, timeout=timeout, context=ssl.create_default_context())
        return Connection(host, port, timeout=timeout)
    parts = urllib.parse.urlsplit(proxy)
    headers = {}
    if parts.username:
        secret = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(secret.encode()).decode()
    if scheme == "https":
        connection = SecureConnection(parts.hostname, parts.port or 80, timeout=timeout,
                                      context=ssl.create_default_context())
        connection.set_tunnel(host, port, headers=headers)
        return connection
    connection = Connection(parts.hostname, parts.port or 80, timeout=timeout)
    connection.proxy_headers = headers  # sent with each request to a plain proxy
    return connection


def read_all(response, url: str, doing: str) -> bytes:
    """The whole body of a response (a fault while reading becomes a PlatformError)."""
    try:
        return response.read()
    except BaseException as exc:
        finish(response)
        fault = platform_error(exc, url, doing)
        if fault is None:
            raise
        raise fault from exc


def read_chunk(response, url: str, doing: str) -> bytes:
    try:
        return response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
    except BaseException as exc:
        fault = platform_error(exc, url, doing)
        if fault is None:
            raise
        raise fault from exc


def parse_json(raw: bytes, content_type: str, url: str, doing: str) -> Any:
    """The JSON of an API answer; NotCodabenchError when the answer is not JSON (an HTML page)."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        kind = content_type.split(";")[0] or "no content type"
        raise NotCodabenchError(f"the answer is not JSON ({kind}): is this a Codabench site's address?",
                                url, doing) from None


def connect_error(exc: BaseException, url: str, doing: str) -> PlatformError | None:
    """The PlatformError of a connection that could not be opened (None: not a network failure)."""
    if isinstance(exc, PlatformError):
        return exc
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return PlatformTimeout("no answer in time (the site is slow or stuck; try again later)", url, doing)
    if isinstance(exc, ssl.SSLError):
        return SiteUnreachable(f"the secure connection failed ({exc.reason or exc})", url, doing)
    if isinstance(exc, (OSError, http.client.HTTPException)):
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return SiteUnreachable(f"nothing answers at this address ({reason})", url, doing)
    return None


def platform_error(exc: BaseException, url: str, doing: str) -> PlatformError | None:
    """The PlatformError a failure during a request is (None: not a transfer's failure, let it through)."""
    if isinstance(exc, PlatformError):
        return exc
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return PlatformTimeout("no answer in time (the site is slow or stuck; try again later)", url, doing)
    if isinstance(exc, (http.client.IncompleteRead, *STALE)):
        return TransferInterrupted(f"the connection was cut before the end ({type(exc).__name__})", url, doing)
    if isinstance(exc, (ConnectionRefusedError, socket.gaierror)):
        return SiteUnreachable(f"nothing answers at this address ({exc})", url, doing)
    if isinstance(exc, (http.client.HTTPException, OSError)) and not isinstance(exc, FileNotFoundError):
        return TransferInterrupted(f"the transfer failed ({type(exc).__name__}: {exc})", url, doing)
    return None


def retry_after(value: str | None) -> float | None:
    """The seconds a Retry-After header asks to wait (a number of seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time()) if moment else None


def http_error(response: http.client.HTTPResponse, url: str, doing: str) -> PlatformError:
    """The PlatformError of an HTTP error status, its status kept: 429 and 503 the site asking to wait
    (Retry-After kept), another 5xx the site's fault, 401 or 403 refused rights, another 4xx the
    request's (or, answered in HTML, not a Codabench API at all)."""
    code = response.status
    try:
        raw = response.read()
    except (OSError, http.client.HTTPException):
        raw = b""
    finish(response)
    text, is_json = error_text(raw)
    status = f"HTTP {code}"
    wait = retry_after(response.getheader("Retry-After")) if code in (429, 503) else None
    asked = f"; it asks to wait {wait:g} s" if wait is not None else ""
    if code == 429:
        return PlatformThrottled(f"the site is busy ({status}: too many requests{asked}); try again later", url,
                                 doing, status=code, retry_after=wait)
    if code >= 500:
        said = f": {text}" if is_json and text else ""
        return PlatformServerError(f"the site failed ({status}{said}{asked}); try again later", url, doing,
                                   status=code, retry_after=wait)
    if code in (401, 403) and is_json:
        return PlatformAuthError(f"refused ({status}): {text}", url, doing, status=code)
    if not is_json:
        return NotCodabenchError(f"{status} with an HTML or plain answer, not Codabench's JSON: is this a "
                                 "Codabench site's address?", url, doing, status=code)
    return PlatformRequestError(f"refused ({status}): {text}", url, doing, status=code)


def error_text(raw: bytes) -> tuple[str, bool]:
    """What an error answer says, on one line, and whether it was JSON (DRF's {"detail": ...}, a field's
    list of messages, or a bare list)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return "", False
    return " ".join(flatten(data).split()), True


def flatten(data: Any) -> str:
    if isinstance(data, dict):
        if set(data) == {"detail"}:
            return flatten(data["detail"])
        return "; ".join(f"{key}: {flatten(value)}" for key, value in data.items())
    if isinstance(data, list):
        return "; ".join(flatten(item) for item in data)
    return str(data)
