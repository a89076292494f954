"""Hugging Face's OpenID provider on loopback, as Gradio's OAuth on a Space meets it (``gradio.oauth._add_oauth_routes``
through authlib): its discovery document, an authorize endpoint that signs in whichever Hub user ``user`` names and
sends the browser back to the Space's registered callback with a one-use code, a token endpoint that takes the code
with the client's secret and answers an RS256 ``id_token`` (the nonce of the authorize request, the user's claims)
signed with the key its JWKS serves, and userinfo. ``space_env`` is what a Space with ``hf_oauth: true`` sets.

``SpaceBrowser`` is the reviewer's browser: it follows the login's redirects by hand, keeping the Space's session
cookie (Secure, which a cookie jar would not send over loopback's plain HTTP), and reaches ``https://SPACE_HOST`` at the
served app, as the Space's TLS proxy does. Nothing leaves loopback."""
from __future__ import annotations

import json
import secrets
import time
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.helpers import clients
from tests.helpers.fake_hub import JsonHandler, Loopback

SPACE_ID = "owner/lookbench-review"
SPACE_HOST = "owner-lookbench-review.hf.space"
CLIENT_ID = "00000000-fake-client"
SCOPES = "openid profile"


class FakeOpenID(Loopback):
    def __init__(self):
        from joserfc.jwk import RSAKey

        self.key = RSAKey.generate_key(2048, private=True, parameters={"kid": "fake-hub"})
        self.secret = secrets.token_urlsafe(16)
        self.callback = f"https://{SPACE_HOST}/login/callback"  # the one redirect the Space's OAuth app may use
        self.user: str | None = None  # the Hub user at the provider's sign-in page
        self.forge = False  # sign the next id_tokens with a key the JWKS does not serve
        self.codes: dict[str, dict] = {}  # one-use code -> {"user", "nonce"}
        self.requests: list[str] = []  # "METHOD path" of each request, in order
        self.bearer: dict[str, str] = {}  # access token -> user
        provider = self

        class Handler(JsonHandler):
            def do_GET(self):
                provider.requests.append(f"GET {urlsplit(self.path).path}")
                url = urlsplit(self.path)
                if url.path == "/.well-known/openid-configuration":
                    return self._json(200, provider.discovery())
                if url.path == "/oauth/jwks":
                    return self._json(200, {"keys": [provider.key.as_dict(private=False)]})
                if url.path == "/oauth/authorize":
                    return provider.authorize(self, {k: v[0] for k, v in parse_qs(url.query).items()})
                if url.path == "/oauth/userinfo":
                    user = provider.bearer.get((self.headers.get("Authorization") or "").removeprefix("Bearer "))
                    return self._json(200, provider.claims(user)) if user else self._json(401, {"error": "invalid_token"})
                return self._json(404, {"error": "not found"})

            def do_POST(self):
                provider.requests.append(f"POST {self.path}")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.path != "/oauth/token":
                    return self._json(404, {"error": "not found"})
                return provider.token(self, {k: v[0] for k, v in parse_qs(body).items()})

        self.listen(Handler)

    def space_env(self) -> dict[str, str]:
        """The variables a Space with ``hf_oauth: true`` runs with (``SYSTEM`` makes Gradio's OAuth the real one)."""
        return {"SYSTEM": "spaces", "SPACE_ID": SPACE_ID, "SPACE_HOST": SPACE_HOST, "OAUTH_CLIENT_ID": CLIENT_ID,
                "OAUTH_CLIENT_SECRET": self.secret, "OAUTH_SCOPES": SCOPES, "OPENID_PROVIDER_URL": self.url}

    def discovery(self) -> dict:
        return {"issuer": self.url, "authorization_endpoint": f"{self.url}/oauth/authorize",
                "token_endpoint": f"{self.url}/oauth/token", "userinfo_endpoint": f"{self.url}/oauth/userinfo",
                "jwks_uri": f"{self.url}/oauth/jwks", "response_types_supported": ["code"],
                "scopes_supported": SCOPES.split(), "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"]}

    def claims(self, user: str) -> dict:
        return {"sub": f"id-{user}", "name": user.title(), "preferred_username": user,
                "profile": f"https://huggingface.co/{user}", "picture": "", "website": ""}

    def authorize(self, handler, query: dict) -> None:
        """The sign-in page, answered for ``user``: refused for another client, redirect or response type."""
        redirect = query.get("redirect_uri", "")
        target = urlsplit(redirect)
        if (query.get("client_id") != CLIENT_ID or query.get("response_type") != "code" or self.user is None
                or f"{target.scheme}://{target.netloc}{target.path}" != self.callback
                or "openid" not in query.get("scope", "").split()):
            return handler._json(400, {"error": "invalid_request"})
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"user": self.user, "nonce": query.get("nonce")}
        handler.send_response(302)
        joined = "&" if target.query else "?"
        handler.send_header("Location", f"{redirect}{joined}{urlencode({'code': code, 'state': query.get('state', '')})}")
        handler.end_headers()

    def token(self, handler, form: dict) -> None:
        import base64

        from joserfc import jwt
        from joserfc.jwk import RSAKey

        basic = (handler.headers.get("Authorization") or "").removeprefix("Basic ")
        client = base64.b64decode(basic).decode() if basic else f"{form.get('client_id')}:{form.get('client_secret')}"
        grant = self.codes.pop(form.get("code", ""), None)  # one use
        if client != f"{CLIENT_ID}:{self.secret}" or grant is None or form.get("grant_type") != "authorization_code":
            return handler._json(400, {"error": "invalid_grant"})
        now = int(time.time())
        claims = {**self.claims(grant["user"]), "iss": self.url, "aud": CLIENT_ID, "iat": now, "exp": now + 3600,
                  "auth_time": now, **({"nonce": grant["nonce"]} if grant["nonce"] else {})}
        key = RSAKey.generate_key(2048, private=True, parameters={"kid": "fake-hub"}) if self.forge else self.key
        access = f"hf_oauth_{secrets.token_urlsafe(16)}"
        self.bearer[access] = grant["user"]
        handler._json(200, {"access_token": access, "token_type": "bearer", "expires_in": 3600, "scope": SCOPES,
                            "id_token": jwt.encode({"alg": "RS256", "kid": "fake-hub"}, claims, key)})


class SpaceBrowser:
    """A reviewer's browser on the Space served at ``app_url``: what it asks of ``https://SPACE_HOST`` reaches the app,
    anything else the fake provider; it keeps the cookies each answer sets."""

    def __init__(self, app_url: str):
        import httpx

        self.app_url = app_url.rstrip("/")
        self.cookies: dict[str, str] = {}
        self.http = httpx.Client(timeout=120, follow_redirects=False, trust_env=False, verify=clients.tls())

    def get(self, url: str):
        parts = urlsplit(url)
        if not parts.netloc or parts.netloc == SPACE_HOST:
            url = self.app_url + parts.path + (f"?{parts.query}" if parts.query else "")
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = self.http.get(url, headers={"cookie": cookie} if cookie else {})
        for header in response.headers.get_list("set-cookie"):
            for name, morsel in SimpleCookie(header).items():
                if morsel["max-age"] == "0" or "1970" in morsel["expires"]:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        return response

    def sign_in(self, provider: FakeOpenID, user: str) -> list[str]:
        """"Sign in with Hugging Face" as ``user``; the URL of each step, the last where the Space sent the browser."""
        provider.user = user
        steps, url = [], "/login/huggingface"
        for _ in range(6):
            response = self.get(url)
            steps.append(urlsplit(url).path)
            if response.status_code not in (302, 303, 307):
                steps.append(str(response.status_code))
                return steps
            url = response.headers["location"]
        raise AssertionError(f"too many redirects: {steps}")

    def session(self) -> dict:
        """What the Space's session cookie holds (Starlette's: base64 JSON, then its signature), read unchecked."""
        import base64

        value = self.cookies.get("session", "").split(".")[0]
        return json.loads(base64.b64decode(value + "=" * (-len(value) % 4))) if value else {}

    def client(self):
        """The Space's API as this browser's pages call it: its session cookie sent with every call."""
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return clients.gradio(self.app_url, {"cookie": cookie} if cookie else {}, timeout=300)
