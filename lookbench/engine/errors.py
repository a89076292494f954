"""The engine's one error type (a ``ValueError``, so the CLI shows it as one line)."""


class EvaluationError(ValueError):
    """Bad input or unusable model output; the message names the subset, row, item id or model at fault."""
