"""The home of a stored result: its type and typed provenance (``result``, ``provenance``), its folder on disk and
its rankings (``folder``, ``rankings``), the trust ladder a leaderboard row is judged on (``trust``), the store, the
one judge, per-query outcomes, intervals and paired tests, per-release scores and ``lookbench compare``. Below the
engine, which writes into it. docs/architecture.md §2."""
