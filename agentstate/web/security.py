"""Who may talk to the ui server: the per-launch token, the Host and Origin checks, CSRF.

The server binds 127.0.0.1, but any page the user's browser opens can send requests to a
loopback port, and a DNS-rebinding name can point at it. So, besides the address:
- a random token, generated per launch, must come with the first request (`?token=`); it is
  then kept in a SameSite=Strict, HttpOnly cookie, and every later request must carry it;
- the Host header must name the loopback address and this port (a rebound name fails);
- a request with an Origin header must come from this origin, and a POST must have one
  (or a Referer from here);
- every POST carries a CSRF token that only a page of this server could have read.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

COOKIE = "agentstate_ui"
LOOPBACK_NAMES = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class Guard:
    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    @property
    def cookie(self) -> str:
        # Cookies are not kept per port: two ui servers side by side (two repositories)
        # would overwrite each other's under one name.
        return f"{COOKIE}_{self.port}"

    def hosts(self) -> set[str]:
        return {f"{name}:{self.port}" for name in LOOPBACK_NAMES}

    def origins(self) -> set[str]:
        return {f"http://{host}" for host in self.hosts()}

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def token_ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(str(value), self.token)

    def csrf_ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(str(value), self.csrf)

    def refusal(self, *, method: str, host: str | None, origin: str | None,
                referer: str | None, client: str | None) -> str | None:
        """Why this request is refused before any page runs, or None. The token is checked
        by the caller (it may arrive in the query or the cookie)."""
        if not _loopback(client):
            return "requests come from this machine only"
        if (host or "").lower() not in self.hosts():
            return "the Host header does not name this server (127.0.0.1 or localhost)"
        if origin is not None and origin not in self.origins():
            return "the request comes from another origin"
        if method == "POST" and origin is None:
            where = urlsplit(referer or "")
            if f"{where.scheme}://{where.netloc}" not in self.origins():
                return "a form must be sent from a page of this server"
        return None


def _loopback(client: str | None) -> bool:
    if not client:
        return False
    try:
        return ipaddress.ip_address(client).is_loopback
    except ValueError:
        return False
