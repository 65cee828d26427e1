"""eventlake.orchestration: topics, params and spark-submit arguments, no Airflow run."""

from __future__ import annotations

import json

import pytest

from eventlake.orchestration import (
    IngestParams,
    OrchestrationError,
    configured_topics,
    job_env,
    plan_ingest,
    submit_conf,
    submit_kwargs,
    topic_offsets,
)
from eventlake.settings import Settings
from eventlake.spark import spark_jars


def test_topics_default_to_demo_orders() -> None:
    assert configured_topics({}) == ["demo.orders"]


def test_topics_env_is_split_trimmed_and_deduplicated() -> None:
    assert configured_topics({"EVENTLAKE_TOPICS": " a, b.c ,a,"}) == ["a", "b.c"]


@pytest.mark.parametrize("raw", ["bad topic!", " , ", "..", "x" * 250])
def test_topics_env_with_no_or_illegal_names_is_refused(raw: str) -> None:
    with pytest.raises(OrchestrationError):
        configured_topics({"EVENTLAKE_TOPICS": raw})


def test_incremental_run_reads_available_now() -> None:
    assert IngestParams(("a",)).application_args("a") == [
        "--topic",
        "a",
        "--starting-offsets",
        "earliest",
        "--trigger",
        "available-now",
    ]


def test_ending_offsets_make_a_bounded_run() -> None:
    assert IngestParams(("a",), ending_offsets="latest").application_args("a") == [
        "--topic",
        "a",
        "--starting-offsets",
        "earliest",
        "--ending-offsets",
        "latest",
    ]


def test_per_partition_offsets_are_cut_down_to_each_topics_job() -> None:
    ending = json.dumps({"a": {"0": 5}})
    params = IngestParams(("a", "b"), ending_offsets=ending)
    assert params.application_args("a")[-1] == '{"a": {"0": 5}}'
    assert params.application_args("b")[-1] == "latest"


def test_offsets_of_a_topic_not_in_the_run_are_refused() -> None:
    with pytest.raises(OrchestrationError, match="does not read"):
        IngestParams(("a",), starting_offsets='{"zz": {"0": 1}}')


@pytest.mark.parametrize(
    "params",
    [
        {"topics": []},
        {"topics": ["a", "a"]},
        {"topics": "a"},
        {"topics": ["a"], "starting_offsets": "yesterday"},
        {"topics": ["a"], "ending_offsets": "earliest"},
        {"topics": ["a"], "ending_offsets": '{"a": {"0": "x"}}'},
        {"topics": ["a"], "dry_run": "yes"},
    ],
)
def test_bad_params_are_refused(params: dict[str, object]) -> None:
    with pytest.raises(OrchestrationError):
        IngestParams.from_params(params)


def test_topic_offsets_keep_keywords_as_they_are() -> None:
    assert topic_offsets("latest", "a", default="earliest") == "latest"


def test_submit_conf_leaves_jars_to_the_jars_argument(settings: Settings) -> None:
    kwargs = submit_kwargs(settings, ["--topic", "a"])
    assert "spark.jars" not in submit_conf(settings)
    assert kwargs["jars"].split(",") == [str(jar) for jar in spark_jars(settings)]


def test_job_env_carries_bootstrap_servers_and_warehouse(settings: Settings) -> None:
    assert job_env(settings) == {
        "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
    }


def test_plan_has_one_submit_per_topic(settings: Settings) -> None:
    plan = plan_ingest({"topics": ["a", "b"]}, settings)
    assert [submit["application_args"][1] for submit in plan] == ["a", "b"]
