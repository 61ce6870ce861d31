"""Metrics of the FineLogic framework (Section 3), each a plain function over ``Problem`` records and a backend,
returning tidy records: accuracy (``extraction``, ``accuracy``, ``forced_choice``, ``cues``; §3.1, Tables 2 and 5),
stepwise soundness (``steps``, ``relevance``, ``judges``, ``soundness``, ``judge_quality``; §3.2, Table 3), probing
(``probing_data``, ``probing``; §3.3, Table 4), LogicMark (``logicmark``), the claims (``claims``).
"""
