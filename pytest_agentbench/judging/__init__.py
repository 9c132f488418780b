"""Model judges as diagnostics: rubrics with their panels, panel votes, a content cache.

A judged check never decides a case's outcome, a gate or a headline metric; it
is reported beside them. A gate may read a judged metric only when the judge
is calibrated against human labels (``scoring.kappa``).
"""
