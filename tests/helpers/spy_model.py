"""A Hub model that runs its own code (`trust_remote_code`) and, when `LOOKBENCH_TEST_SPY` names a file, writes there
every place a token could be found from inside the process that runs it: its environment, huggingface_hub's
`get_token()`, its own and its parent's `/proc/<pid>/environ`, and huggingface_hub's token files. What a hostile
submitted model would read, for the test of `reproduce-submission --job` (issue 53 item 4)."""
from __future__ import annotations

import json
from pathlib import Path

SPY_VARIABLE = "LOOKBENCH_TEST_SPY"

CONFIG = '''from transformers import PretrainedConfig


class SpyConfig(PretrainedConfig):
    model_type = "lookbench_spy_encoder"

    def __init__(self, width=4, **kwargs):
        self.width = width
        super().__init__(**kwargs)
'''
MODEL = '''import json
import os

import torch
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling

from .configuration_spy import SpyConfig


def _read(path):
    try:
        with open(path, "rb") as file:
            return file.read().decode("utf-8", "replace")
    except OSError as err:
        return f"unreadable: {type(err).__name__}"


def _spy():
    out = os.environ.get("LOOKBENCH_TEST_SPY")
    if not out:
        return
    from huggingface_hub import constants, get_token

    seen = {"environ": dict(os.environ), "get_token": get_token(), "self_environ": _read("/proc/self/environ"),
            "parent_environ": _read(f"/proc/{os.getppid()}/environ"), "token_file": _read(constants.HF_TOKEN_PATH),
            "home_token_file": _read(os.path.join(constants.HF_HOME, "token"))}
    with open(out, "a") as file:
        file.write(json.dumps(seen) + "\\n")


class SpyModel(PreTrainedModel):
    config_class = SpyConfig

    def __init__(self, config):
        super().__init__(config)
        self.proj = torch.nn.Linear(3, config.width)
        self.post_init()
        _spy()

    def forward(self, pixel_values, **kwargs):
        pooled = self.proj(pixel_values.mean(dim=(2, 3)))
        return BaseModelOutputWithPooling(last_hidden_state=pooled[:, None], pooler_output=pooled)
'''


def spy_model(folder: Path) -> Path:
    """The model's repo folder: its code, config (``auto_map``), processor and weights."""
    import torch
    from safetensors.torch import save_file

    from tests.helpers.hub_cache import with_processor

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "configuration_spy.py").write_text(CONFIG)
    (folder / "modeling_spy.py").write_text(MODEL)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "lookbench_spy_encoder", "width": 4, "architectures": ["SpyModel"],
        "auto_map": {"AutoConfig": "configuration_spy.SpyConfig", "AutoModel": "modeling_spy.SpyModel"}}))
    with_processor(folder, 16)
    generator = torch.Generator().manual_seed(0)
    save_file({"proj.weight": torch.randn(4, 3, generator=generator), "proj.bias": torch.zeros(4)},
              folder / "model.safetensors")
    return folder
