"""The loopback fake Hub (tests/helpers/fake_hub.py) with Hugging Face Jobs, as `HfApi.run_job` meets them: GET
`/api/whoami-v2` names the token's user, and POST `/api/jobs/<namespace>` records the job spec and answers the job as
the Hub does (id, owner, status)."""
from __future__ import annotations

import json
import re

from tests.helpers.fake_hub import FakeHub

USER = "reproducer"


class FakeJobsHub(FakeHub):
    def __init__(self, refuse: int | None = None):
        super().__init__(refuse)
        self.jobs: list[dict] = []  # {"namespace", "spec", "authorization"}, in order
        hub = self
        base = self.server.RequestHandlerClass

        class Handler(base):
            def do_GET(self):
                if self.path != "/api/whoami-v2" or hub.refuse:
                    return super().do_GET()
                hub.requests.append({"method": "GET", "path": self.path, "authorization": self.headers.get("Authorization")})
                return self._json(200, {"type": "user", "name": USER, "id": "u1", "orgs": []})

            def do_POST(self):
                m = re.fullmatch(r"/api/jobs/([^/]+)", self.path)
                if m is None or hub.refuse:
                    return super().do_POST()
                spec = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                hub.requests.append({"method": "POST", "path": self.path, "authorization": self.headers.get("Authorization")})
                hub.jobs.append({"namespace": m[1], "spec": spec, "authorization": self.headers.get("Authorization")})
                return self._json(200, {"id": f"job{len(hub.jobs)}", "owner": {"id": "u1", "name": m[1], "type": "user"},
                                        "status": {"stage": "RUNNING"}, "flavor": spec.get("flavor"),
                                        "command": spec.get("command"), "dockerImage": spec.get("dockerImage")})

        self.server.RequestHandlerClass = Handler
