"""EfficientNet-Lite0's forward pass as the encoder runs it (``lookbench.encoders.base._for_inference``: padding
by the convolutions, ReLU6 in place) against the module as its package builds it, side by side in this one run.

    python benchmarks/bench_efficientnet.py --threads 1 2 --repeat 5

The same 32 drawn images for both, inside the engine's ``reuse_freed_memory`` as ``encode_images`` runs them; best of
--repeat interleaved rounds; the two outputs must be equal bit for bit.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import torch
    from efficientnet_lite_pytorch import EfficientNet

    from lookbench.encoders.registry import load_encoder
    from lookbench.engine.runtime import reuse_freed_memory

    encoder = load_encoder("efficientnet-lite0")
    package = EfficientNet.from_name("efficientnet-lite0")
    package.load_state_dict(torch.load(encoder.weights, map_location="cpu", weights_only=True))
    modules = {"package": package.eval(), "encoder": encoder.module}
    pixels = np.random.default_rng(0).integers(0, 256, (args.images, 224, 224, 3), dtype=np.uint8)
    x = (torch.from_numpy(pixels).permute(0, 3, 1, 2).float() - 127.0) / 128.0
    print(f"{args.images} drawn images at 224 px; best of {args.repeat}; {os.cpu_count()} cores; torch {torch.__version__}")
    with reuse_freed_memory(), torch.inference_mode():
        for threads in args.threads:
            torch.set_num_threads(threads)
            best = {name: float("inf") for name in modules}
            out = {name: module.extract_features(x) for name, module in modules.items()}  # first-call set-up
            for _ in range(args.repeat):
                for name, module in modules.items():
                    started = time.perf_counter()
                    out[name] = module.extract_features(x)
                    best[name] = min(best[name], time.perf_counter() - started)
            same = torch.equal(out["package"], out["encoder"])
            print(f"{threads} thread(s): package {best['package'] / args.images * 1000:.1f} ms/image, encoder "
                  f"{best['encoder'] / args.images * 1000:.1f} ms/image: {best['package'] / best['encoder']:.2f}x; "
                  f"outputs {'equal bit for bit' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
