"""Credentials for the operator: an explicit kubeconfig file, or kopf's usual discovery.

`smoothscale operator --kubeconfig PATH` (the sandbox, tests, a developer's laptop) reads exactly that file
with the official client's loader, which understands every auth method a kubeconfig can name. Without it,
kopf's login through the official client applies: the in-cluster service account, then `$KUBECONFIG` or
`~/.kube/config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kopf
import kubernetes


def connection_from_kubeconfig(path: Path, context: str | None = None) -> kopf.ConnectionInfo:
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(path), context=context, client_configuration=config)
    # The client keeps the token under "BearerToken" since 36.x and under "authorization" before.
    header = config.get_api_key_with_prefix("BearerToken") or config.get_api_key_with_prefix("authorization")
    scheme, _, token = (header or "").partition(" ")
    if not token:
        scheme, token = "", scheme
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert or None,
        insecure=not config.verify_ssl,
        username=config.username or None,
        password=config.password or None,
        scheme=scheme or None,
        token=token or None,
        certificate_path=config.cert_file or None,
        private_key_path=config.key_file or None,
        default_namespace="default",
    )


def discover_connection(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """The in-cluster service account, else `$KUBECONFIG` / `~/.kube/config` (kopf's login through the
    official client); raises kopf.LoginError when neither works."""
    return kopf.login_via_client(**kwargs)
