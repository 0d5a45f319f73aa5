"""The Kafka client's configuration (librdkafka's property names) from `spec.kafka` and its Secret.

Pure: the Secret's data comes in decoded. A missing key is an error naming the Secret, the key and the spec
field that chose it, so a person can fix the right thing; nothing secret is ever part of a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from smoothscale.resource import KafkaSecretRef, KafkaSpec, SaslMechanism

CLIENT_ID: Final = "smoothscale-operator"


class KafkaSettingsError(ValueError):
    """The credentials cannot be assembled (a missing Secret or key); the message names it."""


def client_config(kafka: KafkaSpec, secret: Mapping[str, bytes] | None) -> dict[str, str]:
    """librdkafka properties to reach the cluster; `secret` is the data of `kafka.secretRef` (or None when
    no Secret is referenced)."""
    config = {
        "bootstrap.servers": kafka.bootstrap_servers,
        "security.protocol": str(kafka.security_protocol),
        "client.id": CLIENT_ID,
    }
    ref = kafka.secret_ref
    protocol = kafka.security_protocol
    if ref is None or secret is None:
        if protocol.uses_sasl:
            raise KafkaSettingsError(
                f"spec.kafka.secretRef: {protocol} needs a Secret with the SASL credentials"
            )
        return config
    if protocol.uses_sasl:
        if kafka.sasl_mechanism is None:
            raise KafkaSettingsError(f"spec.kafka.saslMechanism: is required with {protocol}")
        config["sasl.mechanism"] = str(kafka.sasl_mechanism)
        if kafka.sasl_mechanism is SaslMechanism.OAUTHBEARER:
            config.update(_oidc(kafka, secret, ref))
        else:
            config["sasl.username"] = _text(secret, ref, ref.username_key, "usernameKey")
            config["sasl.password"] = _text(secret, ref, ref.password_key, "passwordKey")
    if protocol.uses_tls:
        if ref.ca_key in secret:
            config["ssl.ca.pem"] = _text(secret, ref, ref.ca_key, "caKey")
        has_cert, has_key = ref.certificate_key in secret, ref.private_key_key in secret
        if has_cert != has_key:
            present, absent = ref.certificate_key, ref.private_key_key
            if has_key:
                present, absent = absent, present
            raise KafkaSettingsError(
                f"Secret {ref.name} has {present!r} but not {absent!r}: a client certificate needs its key"
            )
        if has_cert:
            config["ssl.certificate.pem"] = _text(secret, ref, ref.certificate_key, "certificateKey")
            config["ssl.key.pem"] = _text(secret, ref, ref.private_key_key, "privateKeyKey")
    return config


def _oidc(kafka: KafkaSpec, secret: Mapping[str, bytes], ref: KafkaSecretRef) -> dict[str, str]:
    """OAUTHBEARER through librdkafka's own OIDC client-credentials grant: it fetches the token (HTTP Basic
    with the client id and secret, `grant_type=client_credentials`) and refreshes it before it expires."""
    oauth = kafka.oauthbearer
    if oauth is None:
        raise KafkaSettingsError("spec.kafka.oauthbearer: is required with saslMechanism OAUTHBEARER")
    config = {
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": _text(secret, ref, ref.client_id_key, "clientIdKey"),
        "sasl.oauthbearer.client.secret": _text(secret, ref, ref.client_secret_key, "clientSecretKey"),
        "sasl.oauthbearer.token.endpoint.url": oauth.token_endpoint_url,
    }
    if oauth.scope is not None:
        config["sasl.oauthbearer.scope"] = oauth.scope
    if oauth.extensions:
        config["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in oauth.extensions.items())
    return config


def _text(secret: Mapping[str, bytes], ref: KafkaSecretRef, key: str, field: str) -> str:
    if key not in secret:
        raise KafkaSettingsError(
            f"Secret {ref.name} has no key {key!r} (spec.kafka.secretRef.{field}); it has: "
            f"{', '.join(sorted(secret)) or 'no keys'}"
        )
    try:
        return secret[key].decode()
    except UnicodeDecodeError as error:
        raise KafkaSettingsError(f"Secret {ref.name}: key {key!r} is not UTF-8 text") from error
