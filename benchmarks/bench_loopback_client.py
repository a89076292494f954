"""The tests' gradio_client calls to a loopback app with httpx's default TLS setting against one shared TLS context
(``tests/helpers/clients.py``): gradio_client opens a new httpx client per call, and httpx builds a TLS context for
each (reading the CA bundle) unless it is given one. A one-line app served in this process, the same calls both ways,
interleaved rounds; CPU seconds of this process (client and server), best of --repeat.

    python benchmarks/bench_loopback_client.py [--calls 30] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import ssl
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import gradio as gr
    from gradio_client import Client

    with gr.Blocks() as app:
        text, out = gr.Textbox(), gr.Textbox()
        gr.Button().click(lambda x: x + "!", text, out, api_name="echo")
    _, url, _ = app.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True)
    shared = ssl.create_default_context()
    best = {"default": float("inf"), "one context": float("inf")}
    try:
        for _ in range(args.repeat):
            for name, verify in (("default", True), ("one context", shared)):
                client = Client(url, verbose=False, ssl_verify=verify)
                start = time.process_time()
                for _ in range(args.calls):
                    assert client.predict("a", api_name="/echo") == "a!"
                best[name] = min(best[name], time.process_time() - start)
    finally:
        app.close()
    print(f"{args.calls} calls, best of {args.repeat}; CPU-s of client and server")
    for name, seconds in best.items():
        print(f"{name:12s} {seconds:6.2f} CPU-s  {seconds / args.calls * 1000:6.1f} ms a call")
    print(f"one context / default = {best['one context'] / best['default']:.2f}x")


if __name__ == "__main__":
    main()
