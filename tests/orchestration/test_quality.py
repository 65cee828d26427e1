"""eventlake.orchestration.quality: the quality DAG's params and its spark-submit."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import ParamValidationError

from eventlake.core.settings import Settings
from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.quality import QualityParams, plan_quality, quality_params


def test_quality_params_map_to_check_arguments() -> None:
    params = QualityParams.from_params({"full": True, "topic": "orders"})
    assert params.application_args() == ["--table", "events", "--full", "--topic", "orders"]


def test_an_empty_topic_means_every_topic() -> None:
    assert QualityParams.from_params({"topic": ""}).application_args() == ["--table", "events"]


@pytest.mark.parametrize("params", [{"full": "yes"}, {"topic": "bad topic"}, {"topic": 3}], ids=str)
def test_bad_quality_params_are_refused(params: dict[str, object]) -> None:
    with pytest.raises(OrchestrationError):
        QualityParams.from_params(params)


def test_params_form_lists_full_topic_and_dry_run() -> None:
    params = quality_params()
    assert list(params) == ["full", "topic", "dry_run"]
    assert params["topic"].schema["type"] == ["null", "string"]


def test_the_quality_job_is_submitted_with_the_quality_checks_driver_memory(
    settings: Settings,
) -> None:
    sized = settings.model_copy(update={"driver_memory": "2g", "quality_driver_memory": "640m"})

    assert plan_quality({}, sized)["conf"]["spark.driver.memory"] == "640m"


def test_the_forms_topic_refuses_a_name_kafka_refuses_and_takes_none() -> None:
    """Airflow checks a run's params against the schema before the run starts."""
    topic = quality_params()["topic"]
    assert topic.resolve(None) is None
    assert topic.resolve("orders") == "orders"
    with pytest.raises(ParamValidationError):
        topic.resolve("..")
