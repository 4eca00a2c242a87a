"""The one door to a Codabench site: urllib from the standard library, the token in one header, a time
limit on every request, retries only where a request can be repeated safely (a GET), and every failure
turned into one of codascore.errors' PlatformError classes, with the address asked and what was being done,
here and nowhere else (docs/end_of_competition.md#when-something-goes-wrong).

The token goes only to the site's own address, as an unredirected header: neither a redirect nor a
presigned storage address (the bundle's upload, a submission's files) ever sees it.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

from ..errors import (NotCodabenchError, PlatformAuthError, PlatformError, PlatformRequestError,
                      PlatformServerError, PlatformTimeout, SiteFault, SiteUnreachable, TransferInterrupted)

#: Seconds to wait for a connection or for the next bytes of an answer.
TIMEOUT = 60.0
#: Attempts after the first of a request that may be repeated (a GET), after a fault of the site.
RETRIES = 2
#: Bytes read or sent at a time (and the step of the progress shown).
CHUNK = 1 << 20
#: Progress of a transfer: called with the bytes done and the total (None when the site did not say).
Progress = Callable[[int, "int | None"], None]


class Http:
    """A site's address, the token sent to it (None: anonymous), the time limit and the retries of GETs.
    backoff: seconds before the first retry (doubled at each)."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = TIMEOUT,
                 retries: int = RETRIES, backoff: float = 1.0):
        self.base_url = base_url.rstrip("/") + "/"
        self.token = token
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.opener = urllib.request.build_opener()

    def url(self, path: str, params: dict | None = None) -> str:
        """The absolute address of an API path ("api/phases/3/") on this site, with its query."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return urllib.parse.urljoin(self.base_url, path.lstrip("/")) + query

    def is_own(self, url: str) -> bool:
        """Whether url is on this site's own scheme, host and port (where the token may go)."""
        mine, theirs = urllib.parse.urlsplit(self.base_url), urllib.parse.urlsplit(url)
        return (mine.scheme, mine.netloc) == (theirs.scheme, theirs.netloc)

    def request(self, url: str, method: str = "GET", body: bytes | Any = None,
                headers: dict | None = None) -> urllib.request.Request:
        request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        if self.token and self.is_own(url):
            request.add_unredirected_header("Authorization", f"Token {self.token}")
        return request

    def json(self, method: str, path: str, doing: str, payload: dict | None = None,
             params: dict | None = None, timeout: float | None = None) -> Any:
        """The JSON answer of an API request (payload sent as JSON), within timeout seconds (default: the
        site's). A GET is repeated after a fault of the site; anything else is sent once."""
        url = self.url(path, params)
        body = None if payload is None else json.dumps(payload).encode()
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"

        def attempt():
            with self.open(self.request(url, method, body, headers), doing, timeout) as response:
                raw = read_all(response, url, doing)
                return parse_json(raw, response.headers.get("Content-Type", ""), url, doing)

        return self.repeat(attempt) if method == "GET" else attempt()

    def repeat(self, attempt: Callable[[], Any]) -> Any:
        """attempt(), again after a SiteFault (up to self.retries times, waiting backoff, 2 backoff...)."""
        for number in range(self.retries + 1):
            try:
                return attempt()
            except SiteFault:
                if number == self.retries:
                    raise
                time.sleep(self.backoff * 2 ** number)

    def open(self, request: urllib.request.Request, doing: str, timeout: float | None = None):
        """The response to request, or the PlatformError its failure is."""
        try:
            return self.opener.open(request, timeout=timeout or self.timeout)
        except BaseException as exc:
            fault = platform_error(exc, request.full_url, doing)
            if fault is None:
                raise
            raise fault from exc

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
        with self.open(self.request(url, "PUT", chunks(), headers), doing) as response:
            read_all(response, url, doing)

    def download(self, url: str, dest: Path, doing: str, progress: Progress | None = None) -> tuple[int, str]:
        """Download url into dest through dest's ``.part`` name, renamed only once every byte the site
        announced has come; its size and sha256. A fault of the site is retried; a cut transfer leaves no
        file under dest's name."""
        dest = Path(dest)
        part = dest.with_name(dest.name + ".part")

        def attempt():
            try:
                size, sha256 = self.stream(url, part, doing, progress)
            except BaseException:
                part.unlink(missing_ok=True)
                raise
            os.replace(part, dest)
            return size, sha256

        return self.repeat(attempt)

    def stream(self, url: str, part: Path, doing: str, progress: Progress | None) -> tuple[int, str]:
        """Write url's bytes to part; TransferInterrupted when fewer came than Content-Length said."""
        digest, size = hashlib.sha256(), 0
        with self.open(self.request(url), doing) as response, open(part, "wb") as handle:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            while True:
                chunk = read_chunk(response, url, doing)
                if not chunk:
                    break
                handle.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                if progress:
                    progress(size, total)
        if total is not None and size != total:
            raise TransferInterrupted(f"the transfer stopped after {size} of {total} bytes", url, doing)
        return size, digest.hexdigest()


def read_all(response, url: str, doing: str) -> bytes:
    """The whole body of a response (a fault while reading becomes a PlatformError)."""
    try:
        return response.read()
    except BaseException as exc:
        fault = platform_error(exc, url, doing)
        if fault is None:
            raise
        raise fault from exc


def read_chunk(response, url: str, doing: str) -> bytes:
    try:
        return response.read(CHUNK)
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


def platform_error(exc: BaseException, url: str, doing: str) -> PlatformError | None:
    """The PlatformError a urllib failure is (None: not a transfer's failure, let it through)."""
    if isinstance(exc, PlatformError):
        return exc
    if isinstance(exc, urllib.error.HTTPError):
        return http_error(exc, url, doing)
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return PlatformTimeout("no answer in time (the site is slow or stuck; try again later)", url, doing)
    if isinstance(reason, (http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionResetError,
                           BrokenPipeError, ConnectionAbortedError)):
        return TransferInterrupted(f"the connection was cut before the end ({type(reason).__name__})", url, doing)
    if isinstance(reason, (ConnectionRefusedError, socket.gaierror)) or isinstance(exc, urllib.error.URLError):
        return SiteUnreachable(f"nothing answers at this address ({reason})", url, doing)
    if isinstance(reason, (http.client.HTTPException, OSError)) and not isinstance(reason, FileNotFoundError):
        return TransferInterrupted(f"the transfer failed ({type(reason).__name__}: {reason})", url, doing)
    return None


def http_error(exc: urllib.error.HTTPError, url: str, doing: str) -> PlatformError:
    """The PlatformError of an HTTP error status: 401 or 403 refused rights, 5xx the site's fault, another
    4xx the request's (or, answered in HTML, not a Codabench API at all)."""
    try:
        raw = exc.read()
    except (OSError, http.client.HTTPException):
        raw = b""
    text, is_json = error_text(raw)
    status = f"HTTP {exc.code}"
    if exc.code >= 500:
        return PlatformServerError(f"the site failed ({status}{': ' + text if is_json and text else ''}); "
                                   "try again later", url, doing)
    if exc.code in (401, 403) and is_json:
        return PlatformAuthError(f"refused ({status}): {text}", url, doing)
    if not is_json:
        return NotCodabenchError(f"{status} with an HTML or plain answer, not Codabench's JSON: is this a "
                                 "Codabench site's address?", url, doing)
    return PlatformRequestError(f"refused ({status}): {text}", url, doing)


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
