"""The orchestration tests import Airflow (Param, Asset): they get the private
AIRFLOW_HOME of the DAG tests, set before any test module imports airflow."""

from tests.airflow_home import _airflow_home  # noqa: F401
