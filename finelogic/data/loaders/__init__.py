"""One module per published format (``book/data-formats.md``), each ending in a
:class:`~finelogic.data.loaders.records.Format` that a record of :mod:`finelogic.data.datasets` names."""
