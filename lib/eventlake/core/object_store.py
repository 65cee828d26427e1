"""How eventlake reaches an object store (S3 or an S3-compatible server): endpoint,
region, addressing and credentials, as settings fields that :class:`Settings
<eventlake.core.settings.Settings>` inherits (``EVENTLAKE_S3_*``).

Unset, each falls back to what every AWS client does: credentials and region from the
AWS environment (``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``, an instance role), the
endpoint AWS's own. The keys are secrets: never on a command line, in a log or a UI.

Example:
    >>> fields = ObjectStoreSettings(s3_endpoint="http://127.0.0.1:9000", s3_path_style=True)
    >>> fields.s3_client_options()["endpoint_url"]
    'http://127.0.0.1:9000'
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, Field, SecretStr, ValidationInfo, field_validator

#: The Airflow connection the DAGs read the object store from (the Amazon provider's
#: default), and its type; read by :mod:`eventlake.orchestration.object_store_connection`.
AWS_CONN_ID: Final = "aws_default"
AWS_CONN_TYPE: Final = "aws"


class ObjectStoreSettings(BaseModel):
    """The object store's connection; see the module docstring."""

    s3_endpoint: str | None = Field(
        default=None,
        description="URL of the S3 API of a warehouse on s3a:// (e.g. http://127.0.0.1:9000 "
        "for a local server). Unset: AWS's endpoint for s3_region.",
    )
    s3_region: str = Field(default="us-east-1", description="The S3 region of the bucket.")
    s3_path_style: bool = Field(
        default=False,
        description="Address a bucket as <endpoint>/<bucket> (S3-compatible servers) instead "
        "of <bucket>.<endpoint> (AWS).",
    )
    s3_access_key_id: SecretStr | None = Field(
        default=None,
        description="Access key of the S3 credentials; unset: the AWS environment's "
        "(AWS_ACCESS_KEY_ID, a profile, an instance role). Never on a command line or in a UI.",
    )
    s3_secret_access_key: SecretStr | None = Field(
        default=None,
        description="Secret key of the S3 credentials, with s3_access_key_id.",
    )

    @field_validator(
        "s3_endpoint",
        "s3_region",
        "s3_path_style",
        "s3_access_key_id",
        "s3_secret_access_key",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object, info: ValidationInfo) -> object:
        # An empty variable (as environment() hands an unset field on) means unset.
        if value == "" and info.field_name in ObjectStoreSettings.model_fields:
            return ObjectStoreSettings.model_fields[str(info.field_name)].default
        return value

    def s3_client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``boto3.client("s3", ...)`` for these settings (the
        secrets revealed: pass them on, never print them).

        Example:
            >>> ObjectStoreSettings().s3_client_options()
            {'region_name': 'us-east-1'}
        """
        options: dict[str, Any] = {"region_name": self.s3_region}
        if self.s3_endpoint:
            options["endpoint_url"] = self.s3_endpoint
        if self.s3_access_key_id and self.s3_secret_access_key:
            options["aws_access_key_id"] = self.s3_access_key_id.get_secret_value()
            options["aws_secret_access_key"] = self.s3_secret_access_key.get_secret_value()
        return options

    def environment(self) -> dict[str, str]:
        """These settings as the ``EVENTLAKE_S3_*`` variables that hand them to a child
        process (the secrets revealed: for its environment only, never a command line).
        Every field is given, unset ones empty, so none of the parent's stays behind.

        Example:
            >>> ObjectStoreSettings(s3_path_style=True).environment()["EVENTLAKE_S3_PATH_STYLE"]
            'true'
        """
        keys = self.s3_access_key_id, self.s3_secret_access_key
        return {
            "EVENTLAKE_S3_ENDPOINT": self.s3_endpoint or "",
            "EVENTLAKE_S3_REGION": self.s3_region,
            "EVENTLAKE_S3_PATH_STYLE": "true" if self.s3_path_style else "false",
            "EVENTLAKE_S3_ACCESS_KEY_ID": keys[0].get_secret_value() if keys[0] else "",
            "EVENTLAKE_S3_SECRET_ACCESS_KEY": keys[1].get_secret_value() if keys[1] else "",
        }

    def airflow_connection(self) -> dict[str, Any]:
        """These settings as an ``aws`` Airflow connection (``AIRFLOW_CONN_AWS_DEFAULT``'s
        JSON), the keys its login and password: what
        :func:`eventlake.orchestration.object_store_connection.parse_aws_connection` reads.

        Example:
            >>> ObjectStoreSettings(s3_path_style=True).airflow_connection()["extra"]
            {'region_name': 'us-east-1', 'config_kwargs': {'s3': {'addressing_style': 'path'}}}
        """
        extra: dict[str, Any] = {"region_name": self.s3_region}
        if self.s3_endpoint:
            extra["endpoint_url"] = self.s3_endpoint
        if self.s3_path_style:
            extra["config_kwargs"] = {"s3": {"addressing_style": "path"}}
        connection: dict[str, Any] = {"conn_type": AWS_CONN_TYPE, "extra": extra}
        if self.s3_access_key_id and self.s3_secret_access_key:
            connection["login"] = self.s3_access_key_id.get_secret_value()
            connection["password"] = self.s3_secret_access_key.get_secret_value()
        return connection

    def delta_rs_options(self) -> dict[str, str]:
        """delta-rs' ``storage_options`` (the object_store crate's AWS keys) for these
        settings; Delta commits there are put-if-absent (``If-None-Match``).

        Example:
            >>> options = ObjectStoreSettings(s3_endpoint="http://127.0.0.1:9000").delta_rs_options()
            >>> options["AWS_ALLOW_HTTP"], options["AWS_CONDITIONAL_PUT"]
            ('true', 'etag')
        """
        options = {"AWS_REGION": self.s3_region}
        if self.s3_endpoint:
            options["AWS_ENDPOINT_URL"] = self.s3_endpoint
            if self.s3_endpoint.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if self.s3_path_style else "true"
        if self.s3_access_key_id and self.s3_secret_access_key:
            options["AWS_ACCESS_KEY_ID"] = self.s3_access_key_id.get_secret_value()
            options["AWS_SECRET_ACCESS_KEY"] = self.s3_secret_access_key.get_secret_value()
        # The object_store crate's put-if-absent on S3: If-None-Match (and If-Match).
        options["AWS_CONDITIONAL_PUT"] = "etag"
        return options
