"""The review app (``lookbench review``): people accept or correct the proposals of an annotated raw release."""
