"""The loopback fake Hub (tests/helpers/fake_hub.py) with pull requests, as `lookbench submit` meets them: a commit
sent with `?create_pr=1` opens one (its title is the commit summary, its description the commit's), and GET
`/api/<type>s/<owner>/<name>/discussions` lists them the way `HfApi.get_repo_discussions` pages through them."""
from __future__ import annotations

import io
import json
import re
from urllib.parse import parse_qs, urlsplit

from tests.helpers.fake_hub import FakeHub


class FakeResultsHub(FakeHub):
    def __init__(self, refuse: int | None = None):
        super().__init__(refuse)
        self.pulls: list[dict] = []  # {"num", "repo", "title", "description", "status", "paths"}, in order
        hub = self
        base = self.server.RequestHandlerClass

        class Handler(base):
            def do_POST(self):
                url = urlsplit(self.path)
                self.pull_request = "/commit/" in url.path and parse_qs(url.query).get("create_pr") == ["1"]
                if self.pull_request:  # read the header line for the description, then let the fake read it all again
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    self.rfile = io.BytesIO(body)
                    lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
                    self.description = next(line["value"].get("description") for line in lines if line["key"] == "header")
                super().do_POST()

            def do_GET(self):
                url = urlsplit(self.path)
                m = re.fullmatch(r"/api/(\w+)s/([^/]+/[^/]+)/discussions", url.path)
                if m is None or hub.refuse:
                    return super().do_GET()
                hub.requests.append({"method": "GET", "path": self.path, "authorization": self.headers.get("Authorization")})
                listed = [p for p in hub.pulls if p["repo"] == f"{m[1]}/{m[2]}"]
                return self._json(200, {"count": len(listed), "start": 0, "discussions": [{
                    "title": p["title"], "num": p["num"], "author": {"name": "submitter"},
                    "createdAt": "2026-01-01T00:00:00.000Z", "status": p["status"],
                    "repo": {"name": m[2], "type": m[1]}, "isPullRequest": True} for p in listed]})

            def _json(self, status: int, payload) -> None:
                if getattr(self, "pull_request", False) and status == 200 and "commitOid" in payload:
                    commit = hub.commit_log[-1]
                    kind, repo_id = commit["repo"].split("/", 1)
                    hub.pulls.append({"num": len(hub.pulls) + 1, "repo": commit["repo"], "title": commit["summary"],
                                      "description": self.description, "status": "open", "paths": commit["paths"]})
                    payload = {**payload, "pullRequestUrl": f"{hub.url}/{kind}s/{repo_id}/discussions/{len(hub.pulls)}"}
                super()._json(status, payload)

        self.server.RequestHandlerClass = Handler
