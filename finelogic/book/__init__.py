"""Book helpers: the papermill runner, provenance captions, table and figure helpers."""
