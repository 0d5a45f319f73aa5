"""A loopback OAuth 2.0 token endpoint for tests, standing in for a managed Kafka's identity provider.

It answers the client-credentials grant (RFC 6749 §4.4) as librdkafka's `sasl.oauthbearer.method=oidc` sends
it, a form POST with `grant_type=client_credentials` (and `scope` when configured) and the client's id and
secret in HTTP Basic authentication, with an unsigned JWT (`alg: none`). A sandbox broker started with
`oauthbearer=True` accepts such tokens (Kafka's unsecured validator), so the operator's whole OAUTHBEARER
login runs for real: token request, token, SASL exchange. Wrong credentials get the 401 `invalid_client`
answer an identity provider gives. Runs aiohttp on its own event loop in a thread, so that blocking tests
and the operator's loop can both use it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from aiohttp import web

TOKEN_LIFETIME = 300
"""Seconds a token lives: librdkafka refreshes it at 80% of that, well after any test's end."""


@dataclass(frozen=True)
class TokenRequest:
    """What one POST carried: its Authorization header and form fields."""

    authorization: str
    form: dict[str, str]


def unsigned_jwt(subject: str, scope: str | None, lifetime: int = TOKEN_LIFETIME) -> str:
    """An unsecured JWS compact serialization (RFC 7519 §6): header, claims, empty signature."""
    now = int(time.time())
    claims: dict[str, object] = {"sub": subject, "iat": now, "exp": now + lifetime}
    if scope:
        claims["scope"] = scope
    return f"{_b64url({'alg': 'none'})}.{_b64url(claims)}."


def _b64url(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


class TokenEndpoint:
    """`POST /token` on 127.0.0.1; `client_secret` may change while it runs; `requests`: every POST."""

    def __init__(self, client_id: str, client_secret: str) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.requests: list[TokenRequest] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="token-endpoint", daemon=True)
        self._runner: web.AppRunner | None = None
        self.url = ""

    def __enter__(self) -> Self:
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        self.url = f"http://127.0.0.1:{port}/token"
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _start(self) -> int:
        app = web.Application()
        app.router.add_post("/token", self._token)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return int(self._runner.addresses[0][1])

    async def _token(self, request: web.Request) -> web.Response:
        form = {key: str(value) for key, value in (await request.post()).items()}
        authorization = request.headers.get("Authorization", "")
        self.requests.append(TokenRequest(authorization, form))
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if authorization != f"Basic {expected}":
            error = {"error": "invalid_client", "error_description": "client authentication failed"}
            return web.json_response(error, status=401)
        if form.get("grant_type") != "client_credentials":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        token = unsigned_jwt(self.client_id, form.get("scope"))
        answer = {"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME}
        return web.json_response(answer)
