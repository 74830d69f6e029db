"""The operator's study database (``AUGCLIP_STUDY_DB``) as a source of human judgments for the Explore tab
(:class:`~augclip_demo.explore.judgments.JudgmentReader`): the app layer reads it, because the explore package
sits beside the study package, not above it."""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ...explore.judgments import StudyJudgments, judgments_from_export


class StudyReader:
    """The study database read through the study package's own functions (its list of studies, its export),
    one label per study question."""

    def __init__(self, db: Path):
        self.db = db

    def _offered(self) -> dict[str, tuple[str, str]]:
        from ...study.store import list_studies

        if not Path(self.db).is_file():
            return {}
        return {f"study {study.name} ({question})": (study.name, question) for study in list_studies(self.db)
                for question in study.questions}

    def choices(self) -> list[str]:
        return list(self._offered())

    def read(self, label: str) -> StudyJudgments:
        from ...study.exchange import export_lines
        from ...study.store import load_study

        offered = self._offered()
        if label not in offered:
            raise InputError("choose one of the listed sources of human judgments")
        name, question = offered[label]
        data = load_study(self.db, name)
        return judgments_from_export(export_lines(data, question), data.study.kind, label)
