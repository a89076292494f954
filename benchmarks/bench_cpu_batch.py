"""Images per forward pass on a CPU (``Encoder.cpu_batch_size``): each registered torch model's time per image at
batch sizes from 1 to 32, side by side in this one run, and the ratio of the model's own batch size to 32.

    python benchmarks/bench_cpu_batch.py --threads 1 2 --repeat 3

The same images, already preprocessed, for every batch size (only the forward pass is timed); best of --repeat
interleaved rounds. Each model's embeddings at its own batch size are compared with those at 32 (largest absolute
difference, and the largest value for scale).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

SIZES = (1, 2, 4, 8, 16, 32)


def per_image_ms(encoder, inputs, size: int) -> float:
    started = time.perf_counter()
    for i in range(0, len(inputs), size):
        encoder.encode_batch(inputs[i:i + size])
    return (time.perf_counter() - started) / len(inputs) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["efficientnet-lite0", "gr-lite-mini"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import torch
    from PIL import Image

    from lookbench.encoders.registry import load_encoder

    rng = np.random.default_rng(0)
    photos = [Image.fromarray(rng.integers(0, 256, (256, 192, 3), dtype=np.uint8)) for _ in range(args.images)]
    print(f"{args.images} drawn images; best of {args.repeat}; {os.cpu_count()} cores; torch {torch.__version__}")
    for name in args.models:
        encoder = load_encoder(name)
        inputs = [encoder.preprocess(photo) for photo in photos]
        own = encoder.cpu_batch_size
        for threads in args.threads:
            torch.set_num_threads(threads)
            encoder.encode_batch(inputs[:2])  # weights loaded, first-call set-up done
            best = {size: min(per_image_ms(encoder, inputs, size) for _ in range(args.repeat)) for size in SIZES}
            ours = np.concatenate([encoder.encode_batch(inputs[i:i + own]) for i in range(0, len(inputs), own)])
            at_32 = np.concatenate([encoder.encode_batch(inputs[i:i + 32]) for i in range(0, len(inputs), 32)])
            cells = "  ".join(f"{size:>2}: {ms:5.1f}" for size, ms in best.items())
            print(f"{name:<20} {threads} thread(s)  ms/image at batch  {cells}  | its own {own}: "
                  f"{best[32] / best[own]:.2f}x faster than 32; embeddings differ by at most "
                  f"{np.abs(ours - at_32).max():.1e} (largest value {np.abs(at_32).max():.1f})")


if __name__ == "__main__":
    main()
