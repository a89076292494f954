"""What a hostile checkpoint holds, for the tests that tamper with one (tests/gr_lite*/): an object whose unpickling
creates a marker file, so a test sees whether a reader ran it."""


class WritesMarker:
    """Unpickling it opens (creates) the marker file: harmless, and visible afterwards."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")
