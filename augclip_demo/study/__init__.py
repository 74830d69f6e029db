"""Rating studies: people judge edits (2AFC pairs or 1-5 ratings) and the tool compares the metrics with them.

``questions`` (the versioned wording), ``design`` (units, per-rater task lists, attention checks),
``store`` (the SQLite database: studies, raters, tasks, one row per judgment), ``agreement`` (the live
statistics, through the same functions as ``protocol``), ``exchange`` (manifest and CSV export,
CSV import) and ``report`` (the statistics as tables and text). No web framework here: the rater page and the operator tab are in ``augclip_demo.ui``.
"""
