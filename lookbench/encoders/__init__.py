"""Image encoders: one interface over torch, transformers and user objects (``base``), each registered model declared
as data (``meta``, ``entries``), a Hub entry's snapshot at its pinned commit and the conversion of published
checkpoints (``convert``, ``open_clip``), and ``load_encoder``, the one way in from a name (``registry``).
docs/architecture.md §2."""
