"""Reading the Secret `spec.kafka.secretRef` names, through the operator's own API client.

One GET of one named Secret in the app's namespace: the chart grants `get` on Secrets and nothing more (no
list, no watch), so the operator can read a Secret only by knowing its name from a StreamsApp.
"""

from __future__ import annotations

import base64
import binascii

from ..appref import AppRef
from ..kube import KubeClient, KubeError, core_path
from .settings import KafkaSettingsError


async def read_secret(api: KubeClient, app: AppRef, name: str) -> dict[str, bytes]:
    """The Secret's data, decoded; KafkaSettingsError naming the Secret when it cannot be read."""
    try:
        body = await api.get(core_path(app.namespace, "secrets", name))
    except KubeError as error:
        if error.not_found:
            raise KafkaSettingsError(
                f"Secret {app.namespace}/{name} (spec.kafka.secretRef) does not exist"
            ) from error
        raise KafkaSettingsError(f"Secret {app.namespace}/{name} cannot be read: {error}") from error
    try:
        return {
            key: base64.b64decode(value, validate=True) for key, value in (body.get("data") or {}).items()
        }
    except (binascii.Error, TypeError) as error:
        raise KafkaSettingsError(f"Secret {app.namespace}/{name} holds data that is not base64") from error
