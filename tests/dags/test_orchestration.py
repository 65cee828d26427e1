"""eventlake.orchestration: topics, params and spark-submit arguments, no Airflow run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlake.checkpoint import claim_checkpoint, hold_checkpoint
from eventlake.orchestration import (
    IngestParams,
    OrchestrationError,
    QualityParams,
    RepublishParams,
    configured_topics,
    job_env,
    plan_ingest,
    plan_reconcile,
    plan_republish,
    route_application_args,
    submit_conf,
    submit_kwargs,
    topic_offsets,
)
from eventlake.settings import RepublishRoute, Settings
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


def test_a_topic_that_a_running_stream_reads_is_skipped_with_a_message(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path})
    checkpoint = own.checkpoints / "ingest-pattern_clicks"
    claim_checkpoint(checkpoint, source=r"pattern:clicks\..*", targets=["events", "rejects"])

    with hold_checkpoint(checkpoint, job="ingest", trigger="processing-time=5 seconds"):
        plan = plan_ingest({"topics": ["clicks.web", "orders"]}, own)

    assert [submit["application_args"][1] for submit in plan] == ["orders"]
    assert "skipping topic 'clicks.web': the running stream ingest-pattern_clicks" in (
        capsys.readouterr().out
    )


def test_a_stopped_stream_does_not_hold_its_topics(settings: Settings, tmp_path: Path) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path})
    checkpoint = own.checkpoints / "ingest-pattern_clicks"
    claim_checkpoint(checkpoint, source=r"pattern:clicks\..*", targets=["events", "rejects"])
    with hold_checkpoint(checkpoint, job="ingest", trigger="processing-time=5 seconds"):
        pass

    plan = plan_ingest({"topics": ["clicks.web"]}, own)

    assert [submit["application_args"][1] for submit in plan] == ["clicks.web"]


def test_state_topics_stream_with_state(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    plan = plan_ingest({"topics": ["customers", "orders"]}, with_state)
    assert [("--state" in submit["application_args"]) for submit in plan] == [True, False]


def test_state_topics_reconcile_on_risk_by_default(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    plan = plan_ingest({"topics": ["customers", "orders"]}, with_state)
    assert [("--auto-reconcile" in s["application_args"]) for s in plan] == [True, False]


def test_bounded_run_of_a_state_topic_does_not_pass_state(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    plan = plan_ingest({"topics": ["customers"], "ending_offsets": "latest"}, with_state)
    assert "--state" not in plan[0]["application_args"]


def test_full_refresh_replays_earliest_to_latest_and_rebuilds_state(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    params = {"topics": ["customers", "orders"], "full_refresh": True}

    ingest_args = [submit["application_args"] for submit in plan_ingest(params, with_state)]
    rebuild_args = [submit["application_args"] for submit in plan_reconcile(params, with_state)]

    assert [args[3:] for args in ingest_args] == [["earliest", "--ending-offsets", "latest"]] * 2
    assert rebuild_args == [["--topic", "customers"]]


def test_incremental_run_rebuilds_nothing(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    assert plan_reconcile({"topics": ["customers"]}, with_state) == []


def test_full_refresh_with_explicit_offsets_is_refused() -> None:
    with pytest.raises(OrchestrationError, match="full_refresh"):
        IngestParams.from_params(
            {"topics": ["a"], "full_refresh": True, "ending_offsets": "latest"}
        )


def test_quality_params_map_to_check_arguments() -> None:
    params = QualityParams.from_params({"full": True, "topic": "orders"})
    assert params.application_args() == ["--table", "events", "--full", "--topic", "orders"]


@pytest.mark.parametrize("params", [{"full": "yes"}, {"topic": "bad topic"}, {"topic": 3}], ids=str)
def test_bad_quality_params_are_refused(params: dict[str, object]) -> None:
    with pytest.raises(OrchestrationError):
        QualityParams.from_params(params)


ROUTES = [
    RepublishRoute(source="raw", target="orders", cleanup_policy="compact"),
    RepublishRoute(source="raw", target="audit", key_mapper="keep", to_mode="structured"),
]


def test_route_maps_to_republish_arguments() -> None:
    assert route_application_args(ROUTES[0]) == [
        "--source", "raw", "--target", "orders", "--key-mapper", "partitionkey",
        "--on-missing", "keep-key", "--to-mode", "keep", "--cleanup-policy", "compact",
    ]  # fmt: skip


def test_republish_plan_has_one_submit_per_configured_route(settings: Settings) -> None:
    with_routes = settings.model_copy(update={"republish_routes": ROUTES})
    plan = plan_republish({}, with_routes)
    assert [submit["application_args"][3] for submit in plan] == ["orders", "audit"]


def test_republish_routes_param_selects_routes(settings: Settings) -> None:
    with_routes = settings.model_copy(update={"republish_routes": ROUTES})
    plan = plan_republish({"routes": ["raw>audit"]}, with_routes)
    assert [submit["application_args"][3] for submit in plan] == ["audit"]


def test_unconfigured_route_is_refused() -> None:
    with pytest.raises(OrchestrationError, match="not configured"):
        RepublishParams.from_params({"routes": ["raw>nowhere"]}, ROUTES)


def test_routes_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from eventlake.settings import load_settings

    monkeypatch.setenv(
        "EVENTLAKE_REPUBLISH_ROUTES", json.dumps([{"source": "raw", "target": "orders"}])
    )
    assert [route.name for route in load_settings().republish_routes] == ["raw>orders"]
