"""A Hub endpoint on loopback answering what `create_repo`, `create_branch`, `upload_folder` and `create_tag` ask, and the
downloads of ``served`` files (the tree at a revision, HEAD and GET of ``resolve``): it records each
request (method, path, repo ids, uploaded paths, whether a token came) and answers "regular" upload mode, so no LFS
or xet transfer is attempted. `refuse` makes every request answer that HTTP status; `on_preupload`, if set, is called with
"type/owner/name" at each preupload request (after a client has listed its files, before its commit). It keeps what each
commit sent (``contents``) and which repos are private: a repo that exists (``existing``: created, or there before, its
visibility as the Hub keeps it) answers a second create 409 and keeps its visibility, as the Hub does; PUT
``/api/<type>s/<owner>/<name>/settings`` changes it (``HfApi.update_repo_settings``). GET ``/api/<type>s/<owner>/<name>/revision/<rev>``
(``HfApi.repo_info``, the first request of a download; the revision optional) answers a private repo's 401 without a token, as the Hub does.
A repo that commits (or ``hold``) filled is downloaded as it stands (``snapshot_download``: its tree and files at its
last commit). With ``known_oids`` a preupload names the git oid of each file the repo already holds, as the Hub does,
so a client leaves an unchanged file out of its commit (``CommitScheduler``, which offers every file of its folder
again after a restart); without it every file offered is committed again."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import yaml


class JsonHandler(BaseHTTPRequestHandler):
    """A loopback handler that keeps the test output clean and answers JSON."""

    def log_message(self, *args):
        pass

    def _json(self, status: int, payload) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Loopback:
    """A server on a free loopback port (``url``), answering from a thread while its ``with`` lasts."""

    def listen(self, handler) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeHub(Loopback):
    def __init__(self, refuse: int | None = None, known_oids: bool = False):
        self.refuse = refuse
        self.known_oids = known_oids
        self.requests: list[dict] = []
        self.created: list[dict] = []
        self.commits: dict[str, dict] = {}  # "type/owner/name" -> {"paths": [...], "summary": ..., "revision": ...}
        self.commit_log: list[dict] = []  # every commit in order, with its repo and oid
        self.branches: list[str] = []
        self.tags: dict[str, dict] = {}  # "type/owner/name@tag" -> {"revision": ..., "message": ...}; a second one is 409
        self.validated: list[str] = []  # repo types whose README YAML was checked
        self.private: set[str] = set()  # "type/owner/name" of the private repos
        self.existing: set[str] = set()  # "type/owner/name" of the repos that exist (a test may add one made before)
        self.contents: dict[str, dict[str, bytes]] = {}  # "type/owner/name" -> path -> bytes, as the last commit left them
        self.on_preupload = None
        self.served: dict[str, dict] = {}  # "type/owner/name" -> {"revision": sha, "files": {path: bytes}}: downloads
        hub = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hub.requests.append({"method": "POST", "path": self.path, "authorization": self.headers.get("Authorization")})
                if hub.refuse:
                    return self._json(hub.refuse, {"error": "refused by the fake hub"})
                if self.path == "/api/repos/create":
                    payload = json.loads(body)
                    hub.created.append(payload)
                    kind = payload.get("type") or "model"
                    repo_id = f"{payload['organization']}/{payload['name']}"
                    if f"{kind}/{repo_id}" in hub.existing:  # its visibility stays what it was
                        return self._json(409, {"error": "You already created this repo", "url": f"{hub.url}/{kind}s/{repo_id}"})
                    hub.existing.add(f"{kind}/{repo_id}")
                    if payload.get("visibility") == "private":
                        hub.private.add(f"{kind}/{repo_id}")
                    return self._json(200, {"url": f"{hub.url}/{kind}s/{repo_id}", "name": repo_id})
                if self.path == "/api/validate-yaml":  # the Hub checks a README's YAML header before a commit
                    payload = json.loads(body)
                    header = re.match(r"\A---\n(.*?)\n---\n", payload["content"], re.S)
                    try:
                        yaml.safe_load(header[1] if header else "")
                    except yaml.YAMLError as err:
                        return self._json(400, {"error": f"invalid YAML: {err}"})
                    hub.validated.append(payload["repoType"])
                    return self._json(200, {"warnings": []})
                if m := re.fullmatch(r"/api/(\w+)s/([^/]+/[^/]+)/preupload/(.+)", self.path):
                    files = json.loads(body)["files"]
                    if hub.on_preupload is not None:
                        hub.on_preupload(f"{m[1]}/{m[2]}")
                    held = hub.contents.get(f"{m[1]}/{m[2]}", {}) if hub.known_oids else {}
                    return self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                                       **({"oid": git_oid(held[f["path"]])} if f["path"] in held else {})}
                                                      for f in files]})
                if m := re.fullmatch(r"/api/(\w+)s/([^/]+/[^/]+)/commit/(.+)", self.path):
                    lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
                    sent = {line["value"]["path"]: base64.b64decode(line["value"]["content"])  # each decoded once
                            for line in lines if line["key"] == "file"}
                    hub.commits[f"{m[1]}/{m[2]}"] = {
                        "paths": sorted(sent), "revision": m[3],
                        "bytes": {path: len(content) for path, content in sent.items()},
                        "sha256": {path: hashlib.sha256(content).hexdigest() for path, content in sent.items()},
                        "summary": next(line["value"]["summary"] for line in lines if line["key"] == "header"),
                    }
                    hub.contents.setdefault(f"{m[1]}/{m[2]}", {}).update(sent)
                    # one oid per commit (as a tag must name one), from its content: two fakes never give one oid to two
                    oid = "abc123" + hashlib.sha1(body + str(len(hub.commit_log)).encode()).hexdigest()[:34]
                    hub.commit_log.append({"repo": f"{m[1]}/{m[2]}", "oid": oid, **hub.commits[f"{m[1]}/{m[2]}"]})
                    return self._json(200, {"commitUrl": f"{hub.url}/{m[1]}s/{m[2]}/commit/{oid}", "commitOid": oid})
                if m := re.fullmatch(r"/api/(\w+)s/([^/]+/[^/]+)/tag/(.+)", self.path):
                    payload = json.loads(body)
                    key = f"{m[1]}/{m[2]}@{payload['tag']}"
                    if key in hub.tags:
                        return self._json(409, {"error": f"tag {payload['tag']} already exists"})
                    hub.tags[key] = {"revision": m[3], "message": payload.get("message")}
                    return self._json(200, {})
                if m := re.fullmatch(r"/api/(\w+)s/([^/]+/[^/]+)/branch/(.+)", self.path):
                    hub.branches.append(f"{m[1]}/{m[2]}@{m[3]}")
                    return self._json(200, {})
                return self._json(404, {"error": f"the fake hub does not serve POST {self.path}"})

            def do_PUT(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hub.requests.append({"method": "PUT", "path": self.path, "authorization": self.headers.get("Authorization")})
                m = re.fullmatch(r"/api/(\w+)s/([^/]+/[^/]+)/settings", self.path)
                if hub.refuse or not m or f"{m[1]}/{m[2]}" not in hub.existing:
                    return self._json(hub.refuse or 404, {"error": "refused by the fake hub"})
                visibility = json.loads(body).get("visibility")
                if visibility == "private":
                    hub.private.add(f"{m[1]}/{m[2]}")
                elif visibility == "public":
                    hub.private.discard(f"{m[1]}/{m[2]}")
                return self._json(200, {})

            def do_GET(self):
                hub.requests.append({"method": "GET", "path": self.path, "authorization": self.headers.get("Authorization")})
                m = re.fullmatch(r"/api/(\w+)s/([^/?]+/[^/?]+)(?:/revision/[^?]+)?(?:\?.*)?", self.path)
                if m and not hub.refuse and f"{m[1]}/{m[2]}" in hub.contents:
                    if f"{m[1]}/{m[2]}" in hub.private and not self.headers.get("Authorization"):
                        return self._json(401, {"error": "Invalid username or password."})
                    oid = next(c["oid"] for c in reversed(hub.commit_log) if c["repo"] == f"{m[1]}/{m[2]}")
                    return self._json(200, {"id": m[2], "sha": oid, "private": f"{m[1]}/{m[2]}" in hub.private,
                                            "siblings": [{"rfilename": p} for p in sorted(hub.contents[f"{m[1]}/{m[2]}"])]})
                if not hub.refuse and (m := re.fullmatch(r"/api/(\w+)s/([^/]+/[^/]+)/tree/([^/?]+)(?:\?.*)?", self.path)):
                    held = hub.held(f"{m[1]}/{m[2]}")
                    if held is None or m[3] not in ("main", held["revision"]):
                        return self._json(404, {"error": f"{m[2]}: no revision {m[3]}"})
                    return self._json(200, [{"type": "file", "path": path, "size": len(data),
                                             "oid": hashlib.sha1(data).hexdigest()} for path, data in sorted(held["files"].items())])
                if not hub.refuse and self._file() is not None:
                    return self._file(body=True)
                return self._json(hub.refuse or 404, {"error": f"the fake hub does not serve GET {self.path}"})

            def do_HEAD(self):
                hub.requests.append({"method": "HEAD", "path": self.path, "authorization": self.headers.get("Authorization")})
                if hub.refuse or self._file() is None:
                    self.send_response(hub.refuse or 404)
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                return self._file(body=False)

            def _file(self, body=None):
                """A file of ``hub.served`` at ``/<type>s/<owner>/<name>/resolve/<revision>/<path>`` (None: no such
                file); with ``body`` given, answered with the headers huggingface_hub reads (and the bytes)."""
                path = unquote(self.path.split("?")[0])
                m = (re.fullmatch(r"/(\w+)s/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)  # a model's has no type
                     or re.fullmatch(r"/()([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path))
                held = hub.held(f"{m[1] or 'model'}/{m[2]}") if m else None
                if held is None or m[3] not in ("main", held["revision"]) or m[4] not in held["files"]:
                    return None
                if body is None:
                    return True
                data = held["files"][m[4]]
                self.send_response(200)
                self.send_header("X-Repo-Commit", held["revision"])
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

        self.listen(Handler)

    def held(self, repo: str) -> dict | None:
        """What a download of ``repo`` ("type/owner/name") finds: ``served``, else what its commits left."""
        if repo in self.served:
            return self.served[repo]
        if repo not in self.contents:
            return None
        return {"revision": next(c["oid"] for c in reversed(self.commit_log) if c["repo"] == repo),
                "files": self.contents[repo]}

    def hold(self, repo: str, files: dict[str, bytes], private: bool = True) -> None:
        """``repo`` made before the test, holding ``files`` from one earlier commit."""
        self.existing.add(repo)
        if private:
            self.private.add(repo)
        self.contents[repo] = dict(files)
        self.commit_log.append({"repo": repo, "oid": "abc123" + hashlib.sha1(repo.encode()).hexdigest()[:34],
                                "paths": sorted(files), "summary": "made before"})


def git_oid(data: bytes) -> str:
    """A regular file's oid as the Hub names it (git's blob hash), which a client compares with its own file's."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
