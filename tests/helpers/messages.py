"""What a command told the user, read as one message: ``lookbench.errors.tell`` wraps an error to the terminal's width
(``COLUMNS``) at spaces, so a test that checks the words of a long message joins its lines again first."""


def unwrapped(text: str) -> str:
    """``text`` with every run of whitespace (a wrap and its indent among them) one space."""
    return " ".join(text.split())
