"""eventlake.local.settings_reference: docs/settings.md is generated from the settings."""

from __future__ import annotations

from eventlake.local.settings import LocalSettings
from eventlake.local.settings_reference import REFERENCE_PATH, settings_reference


def test_docs_settings_is_what_the_settings_generate() -> None:
    assert REFERENCE_PATH.read_text(encoding="utf-8") == settings_reference(), (
        "docs/settings.md is stale: run `make docs`"
    )


def test_every_setting_has_a_row_with_its_description() -> None:
    text = settings_reference()
    for name, field in LocalSettings.model_fields.items():
        assert field.description, f"setting {name} has no description"
        (row,) = [r for r in text.splitlines() if r.startswith(f"| `EVENTLAKE_{name.upper()}` |")]
        assert " ".join(field.description.split()).split(" (")[0] in row


def test_a_secret_has_no_default_shown() -> None:
    rows = [line for line in settings_reference().splitlines() if "SecretStr" in line]
    assert rows and all(row.split(" | ")[2] == "none" for row in rows)
