"""docker-compose's metastore container (eventlake.local.metastore_container): where its
PostgreSQL is, and a sentence instead of a start without its database settings."""

from __future__ import annotations

import pytest

from eventlake.local import metastore_container
from eventlake.local.metastore import database_properties, schema_properties
from eventlake.local.settings import load_local_settings


def test_the_database_is_read_from_the_jdbc_url() -> None:
    assert metastore_container.postgres_address("jdbc:postgresql://postgres:5432/metastore") == (
        "postgres",
        5432,
        "metastore",
    )
    assert metastore_container.postgres_address("jdbc:postgresql://pg/ms")[1] == 5432
    with pytest.raises(ValueError, match="jdbc:postgresql"):
        metastore_container.postgres_address("jdbc:mysql://db/ms")


def test_without_its_database_settings_it_says_which_and_does_not_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("URL", "USER", "PASSWORD"):
        monkeypatch.delenv(f"EVENTLAKE_METASTORE_DATABASE_{name}", raising=False)
    monkeypatch.setenv("EVENTLAKE_METASTORE_DATABASE_URL", "jdbc:postgresql://pg/ms")

    assert metastore_container.main() == 2
    assert "EVENTLAKE_METASTORE_DATABASE_PASSWORD" in capsys.readouterr().err


def test_postgresql_gets_its_driver_credentials_and_every_table_at_the_start() -> None:
    settings = load_local_settings(
        metastore_database_url="jdbc:postgresql://127.0.0.1:5433/metastore",
        metastore_database_user="metastore",
        metastore_database_password="s3cret",
    )
    properties = database_properties(settings)
    assert properties["javax.jdo.option.ConnectionDriverName"] == "org.postgresql.Driver"
    assert properties["javax.jdo.option.ConnectionPassword"] == "s3cret"
    schema = schema_properties(settings)
    assert schema["datanucleus.schema.autoCreateConstraints"] == "false"
    assert "org.apache.hadoop.hive.metastore.model.MTable" in (
        schema["datanucleus.autoStartClassNames"].split(",")
    )
    # Derby, by default: as before.
    derby = load_local_settings()
    assert database_properties(derby)["javax.jdo.option.ConnectionURL"].startswith("jdbc:derby:")
    assert schema_properties(derby) == {"datanucleus.schema.autoCreateAll": "true"}
