"""A stored result made visible: its worst queries as plain records (``records``) and those drawn as one
self-contained HTML page (``html``). The demo's "Your results" tab reads the same records. docs/architecture.md §5."""
