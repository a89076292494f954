"""The loopback fake Hub (tests/helpers/fake_hub.py) with pull requests, as `lookbench submit` meets them: a commit
sent with `?create_pr=1` opens one (its title is the commit summary, its description the commit's), and GET
`/api/<type>s/<owner>/<name>/discussions` lists them the way `HfApi.get_repo_discussions` pages through them.

It also answers the Hub's own leaderboard of a Benchmark dataset, GET `/api/datasets/<owner>/<name>/leaderboard`
(`HfApi.get_dataset_leaderboard`): ``leaderboards[dataset]`` when a test sets one (any JSON, a malformed answer too),
else a row per entry of every model repo's `.eval_results/*.yaml` (committed or in an open pull request, the
`community` badge) that names the dataset, best first, in the JSON shape huggingface_hub parses. `serve_eval_results`
puts such a file in a model repo, downloadable as any served file."""
from __future__ import annotations

import io
import json
import re
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.helpers.fake_hub import FakeHub


class FakeResultsHub(FakeHub):
    def __init__(self, refuse: int | None = None):
        super().__init__(refuse)
        self.pulls: list[dict] = []  # {"num", "repo", "title", "description", "status", "paths"}, in order
        self.leaderboards: dict[str, object] = {}  # dataset id -> the answer of its leaderboard, as given
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
                board = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/leaderboard", url.path)
                if board and not hub.refuse:
                    hub.requests.append({"method": "GET", "path": self.path,
                                         "authorization": self.headers.get("Authorization")})
                    given = hub.leaderboards.get(board[1])
                    return self._json(200, hub.leaderboard(board[1]) if given is None else given)
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

    def serve_eval_results(self, model: str, text: str, name: str = "lookbench.yaml") -> None:
        """``.eval_results/<name>`` in the model repo ``model``, served for download and read by its leaderboard."""
        held = self.served.setdefault(f"model/{model}", {"revision": "e" * 40, "files": {}})
        held["files"][f".eval_results/{name}"] = text.encode()

    def leaderboard(self, dataset: str) -> list[dict]:
        """The rows of ``dataset``'s leaderboard, from every model repo's ``.eval_results`` files (served, committed,
        or added by an open pull request), best first."""
        files = {}  # (model, path) -> (bytes, pull request number or None)
        for key, held in self.served.items():
            files.update({(key, path): (data, None) for path, data in held["files"].items()})
        for key, held in self.contents.items():
            files.update({(key, path): (data, None) for path, data in held.items()})
        for pull in self.pulls:
            for path in pull["paths"]:
                if (pull["repo"], path) in files and pull["status"] == "open":
                    files[(pull["repo"], path)] = (files[(pull["repo"], path)][0], pull["num"])
        rows = []
        for (key, path), (data, pull) in sorted(files.items()):
            kind, model = key.split("/", 1)
            if kind != "model" or not path.startswith(".eval_results/") or not path.endswith(".yaml"):
                continue
            for entry in yaml.safe_load(data) or []:
                if entry["dataset"]["id"] != dataset:
                    continue
                rows.append({"modelId": model, "value": entry["value"], "filename": path, "verified": False,
                             "source": {**entry.get("source", {}), "isExternal": False},
                             "author": {"name": model.split("/")[0], "type": "user", "avatarUrl": "",
                                        "fullname": model.split("/")[0], "isPro": False},
                             "pullRequest": pull, "notes": entry.get("notes")})
        rows.sort(key=lambda row: -row["value"])
        return [{"rank": rank, **row} for rank, row in enumerate(rows, 1)]
