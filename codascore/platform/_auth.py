"""Where the token comes from: $CODABENCH_TOKEN, a token file, or a username and password exchanged once at
the site's ``POST /api/api-token-auth/`` (Django REST framework's obtain_auth_token). The token is kept in
memory only: codascore never writes it anywhere (docs/end_of_competition.md#signing-in)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from ..errors import PlatformAuthError, PlatformRequestError, UsageError
from ._http import Http

TOKEN_VARIABLE = "CODABENCH_TOKEN"
PASSWORD_VARIABLE = "CODABENCH_PASSWORD"


def read_token_file(path: Path) -> str:
    """The token in a file (its first non-empty line); UsageError when it cannot be read or is empty."""
    try:
        lines = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    except OSError as exc:
        raise UsageError(f"--token-file {path}: {exc.strerror or exc}") from None
    if not lines:
        raise UsageError(f"--token-file {path}: the file is empty (it holds the token from your Codabench "
                         "profile page)")
    return lines[0]


def exchange_password(http: Http, username: str, password: str) -> str:
    """The token the site gives for username and password (PlatformAuthError when it refuses them)."""
    try:
        answer = http.json("POST", "api/api-token-auth/", f"signing in as {username}",
                           {"username": username, "password": password})
    except PlatformRequestError as exc:  # DRF answers 400 to wrong credentials
        raise PlatformAuthError(exc.message, exc.url, exc.doing) from None
    if not isinstance(answer, dict) or not answer.get("token"):
        raise PlatformAuthError("the site answered without a token", http.url("api/api-token-auth/"),
                                f"signing in as {username}")
    return str(answer["token"])


def find_token(http: Http, token_file: str | None = None, username: str | None = None,
               password: str | None = None, environ=os.environ, ask=getpass.getpass) -> str | None:
    """The token to use, in this order: --token-file, --username (the password from the argument,
    $CODABENCH_PASSWORD or asked without echo), $CODABENCH_TOKEN; None when none is given (anonymous)."""
    if token_file and username:
        raise UsageError("give --token-file or --username, not both")
    if token_file:
        return read_token_file(Path(token_file))
    if username:
        secret = password or environ.get(PASSWORD_VARIABLE) or ask(f"Codabench password for {username}: ")
        return exchange_password(http, username, secret)
    return environ.get(TOKEN_VARIABLE) or None
