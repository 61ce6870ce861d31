"""One module per published format (``book/data-formats.md``), each ending in a
:class:`~finelogic.data.loaders.records.Format`; the datasets that read them are the records of
:mod:`finelogic.data.datasets`, which loads them (:func:`~finelogic.data.datasets.load_dataset`)."""
