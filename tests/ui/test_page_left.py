"""A stage still running when its page is reloaded finds its session folder gone: that is no error to log."""

from __future__ import annotations

import errno
import logging
import os
import shutil

import gradio as gr
import pytest

from augclip_demo.ui.guard import page_was_left, user_facing


def _missing(path) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))


def test_a_file_of_a_deleted_session_folder_means_the_page_was_left(tmp_path):
    folder = tmp_path / "augclip-app-abc123"
    (folder / "figures").mkdir(parents=True)
    target = folder / "figures" / "E1_relevancy.png"
    assert not page_was_left(_missing(target))  # the folder is there: a real missing file
    shutil.rmtree(folder)
    assert page_was_left(_missing(target))
    assert not page_was_left(_missing(tmp_path / "other" / "x.png"))  # not a session folder
    assert not page_was_left(ValueError("x"))


def test_the_handler_wrapper_logs_nothing_for_it_but_still_logs_other_errors(tmp_path):
    gone = tmp_path / "augclip-app-gone" / "report.json"

    @user_facing
    def stage():
        raise _missing(gone)

    @user_facing
    def broken():
        raise _missing(tmp_path / "elsewhere.png")

    class Records(logging.Handler):  # on the guard's own logger: other tests may change the root's set-up
        def __init__(self) -> None:
            super().__init__(logging.ERROR)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    logger = logging.getLogger("augclip_demo.ui.guard")
    records, level, disabled = Records(), logger.level, logger.disabled
    logger.addHandler(records)
    logger.setLevel(logging.ERROR)
    logger.disabled = False
    try:
        with pytest.raises(gr.Error):
            stage()
        assert records.messages == []
        with pytest.raises(gr.Error):
            broken()
        assert records.messages == ["unexpected error in broken"]
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)
        logger.disabled = disabled
