"""Building the driver's class archive (eventlake.local.class_archive)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlake.core.settings import Settings
from eventlake.local.class_archive import ClassArchiveError, build_archive


def test_a_failed_build_says_why_and_leaves_no_archive(settings: Settings, tmp_path: Path) -> None:
    no_jars = settings.model_copy(
        update={"class_archive": tmp_path / "driver.jsa", "jars_dir": tmp_path / "no-jars"}
    )

    with pytest.raises(ClassArchiveError, match="make jars"):
        build_archive(no_jars)
    assert not (tmp_path / "driver.jsa").exists()
