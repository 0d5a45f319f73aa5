"""SASL/OAUTHBEARER (OIDC client credentials) in `spec.kafka`: the spec's checks, the librdkafka settings, the
messages of a refused login and the sandbox broker's listener. The pure parts; a real broker and token
endpoint are in tests/operator/test_op_kafka_oauthbearer.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from smoothscale.operator.kafka.reader import _explain
from smoothscale.operator.kafka.settings import KafkaSettingsError, client_config
from smoothscale.resource import KafkaSpec, load_spec, spec_problems
from smoothscale.sandbox.kafka.config import NodeConfig, NodePorts, server_properties

TOKEN_URL = "https://login.example.com/oauth2/token"
SECRET = {"clientId": b"orders-app", "clientSecret": b"s3cret"}


def app_spec(**kafka: Any) -> dict[str, Any]:
    return {
        "template": {"spec": {"containers": [{"name": "app", "image": "x"}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": 3, "inputTopics": ["clicks"]}]},
        "kafka": {"bootstrapServers": "k-0:9093", **kafka},
    }


def oauth(**settings: Any) -> dict[str, Any]:
    return {
        "securityProtocol": "SASL_SSL",
        "saslMechanism": "OAUTHBEARER",
        "secretRef": {"name": "orders-oauth"},
        "oauthbearer": {"tokenEndpointUrl": TOKEN_URL, **settings},
    }


def test_oidc_client_credentials_become_librdkafkas_settings() -> None:
    spec = load_spec(
        app_spec(**oauth(scope="kafka orders.read", extensions={"logicalCluster": "lkc-1", "x": "y=z"}))
    )
    assert spec.kafka is not None
    config = client_config(spec.kafka, {**SECRET, "ca.crt": b"PEM"})
    assert config == {
        "bootstrap.servers": "k-0:9093",
        "security.protocol": "SASL_SSL",
        "client.id": "smoothscale-operator",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "orders-app",
        "sasl.oauthbearer.client.secret": "s3cret",
        "sasl.oauthbearer.token.endpoint.url": TOKEN_URL,
        "sasl.oauthbearer.scope": "kafka orders.read",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1,x=y=z",
        "ssl.ca.pem": "PEM",
    }


def test_renamed_secret_keys_and_a_missing_one_are_named() -> None:
    settings = oauth()
    settings["secretRef"] = {"name": "idp", "clientIdKey": "id", "clientSecretKey": "secret"}
    kafka = KafkaSpec.model_validate(app_spec(**settings)["kafka"])
    config = client_config(kafka, {"id": b"a", "secret": b"b"})
    assert (config["sasl.oauthbearer.client.id"], config["sasl.oauthbearer.client.secret"]) == ("a", "b")
    assert "sasl.oauthbearer.scope" not in config and "sasl.oauthbearer.extensions" not in config
    with pytest.raises(
        KafkaSettingsError,
        match=r"^Secret idp has no key 'secret' \(spec.kafka.secretRef.clientSecretKey\); it has: id$",
    ):
        client_config(kafka, {"id": b"a"})


@pytest.mark.parametrize(
    ("kafka", "problem"),
    [
        (
            {**oauth(), "oauthbearer": None},
            "spec.kafka.oauthbearer: is required with saslMechanism OAUTHBEARER (at least its "
            "tokenEndpointUrl)",
        ),
        (
            {**oauth(), "saslMechanism": "SCRAM-SHA-512"},
            "spec.kafka.oauthbearer: needs saslMechanism OAUTHBEARER (got SCRAM-SHA-512)",
        ),
        (
            {"oauthbearer": {"tokenEndpointUrl": TOKEN_URL}},
            "spec.kafka.oauthbearer: needs saslMechanism OAUTHBEARER (got none)",
        ),
        (
            oauth(tokenEndpointUrl="login.example.com/token"),
            "spec.kafka.oauthbearer.tokenEndpointUrl: 'login.example.com/token' is not the URL of the "
            "identity provider's OAuth 2.0 token endpoint, such as https://login.example.com/oauth2/token",
        ),
        (
            oauth(scope="kafka  read"),
            "spec.kafka.oauthbearer.scope: 'kafka  read' is not OAuth 2.0 scopes separated by single "
            "spaces (RFC 6749 3.3: printable ASCII but '\"' and '\\')",
        ),
        (
            oauth(extensions={"pool": "a,b"}),
            "spec.kafka.oauthbearer.extensions.pool: 'a,b' is not a SASL extension value (printable ASCII "
            "without spaces or commas)",
        ),
        (
            oauth(extensions={"pool-id": "a"}),
            "spec.kafka.oauthbearer.extensions: 'pool-id' is not an extension name (letters only, RFC 7628 "
            "3.1)",
        ),
        (
            oauth(extensions={"auth": "a"}),
            "spec.kafka.oauthbearer.extensions: 'auth' is reserved by SASL/OAUTHBEARER for the token itself",
        ),
        (
            oauth(clientSecret="s3cret"),
            "spec.kafka.oauthbearer.clientSecret: is not a field here (misspelt?)",
        ),
    ],
)
def test_a_wrong_oauthbearer_setting_is_an_invalid_spec_naming_the_field(
    kafka: dict[str, Any], problem: str
) -> None:
    raw = app_spec(**kafka)
    raw["kafka"] = {key: value for key, value in raw["kafka"].items() if value is not None}
    assert spec_problems(raw) == [problem]


def test_a_refused_token_names_the_endpoint_and_client_and_a_refused_login_names_kafka() -> None:
    kafka = KafkaSpec.model_validate(app_spec(**oauth())["kafka"])
    config = client_config(kafka, SECRET)
    timeout = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for controller"))
    no_token = KafkaError(
        KafkaError._AUTHENTICATION,
        'Failed to acquire SASL OAUTHBEARER token: {"error": "invalid_client"}',
    )
    refused = _explain(timeout, [no_token], config)
    assert (refused.reason, refused.message) == (
        "KafkaAuthenticationFailed",
        f"no OAUTHBEARER token for OAuth client 'orders-app' from {TOKEN_URL}: Failed to acquire SASL "
        'OAUTHBEARER token: {"error": "invalid_client"}',
    )
    bad_token = KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED, "invalid_token")
    refused = _explain(timeout, [bad_token], config)
    assert refused.message == (
        "Kafka at k-0:9093 refused the token of OAuth client 'orders-app' (OAUTHBEARER): invalid_token"
    )
    assert "s3cret" not in refused.message


def test_a_sandbox_broker_takes_oauthbearer_beside_plain_on_its_sasl_listener() -> None:
    node = NodeConfig(1, None, Path("/data"), NodePorts(client=9092, controller=9093, sasl=9094))
    both = server_properties(node, [node], {"alice": "pw"}, oauthbearer=True)
    assert both["sasl.enabled.mechanisms"] == "PLAIN,OAUTHBEARER"
    assert "SASL_PLAINTEXT://127.0.0.1:9094" in both["listeners"]
    assert both["listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
    )
    alone = server_properties(node, [node], oauthbearer=True)
    assert alone["sasl.enabled.mechanisms"] == "OAUTHBEARER"
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config" not in alone
    assert "sasl.enabled.mechanisms" not in server_properties(node, [node])
