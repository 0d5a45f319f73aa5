"""`spec.kafka`: where the app's Kafka cluster is and how to log in, so that the operator can read it.

With this section the operator asks Kafka itself (instead of `spec.racks` and the pods' reports) for the
racks of the input partitions' replicas, the end offsets of the app's changelog topics and the state of the
app's consumer group. Changelog topics are found by their names, `<applicationId>-<store>-changelog`, and
belong to the subtopology that lists the store (`stores`). Credentials never sit in the StreamsApp: they
come from a Secret in the app's namespace, named here, with the keys of `KafkaSecretRef` (`username` and
`password` for SASL PLAIN and SCRAM; `clientId` and `clientSecret` for OAUTHBEARER; `ca.crt`, and
`tls.crt`/`tls.key` for mutual TLS, as cert-manager writes them).

OAUTHBEARER is the login of managed Kafka services: the operator fetches a token from the identity provider
with the OIDC client-credentials grant (librdkafka's `sasl.oauthbearer.method=oidc`) and presents it to the
brokers; `oauthbearer` says where the token endpoint is, which scope to ask for and which SASL extensions
the service wants (Confluent Cloud's `logicalCluster` and `identityPoolId`, for one).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from .base import SpecModel
from .fields import Duration, Matching

__all__ = [
    "GroupProtocol",
    "KafkaSecretRef",
    "KafkaSpec",
    "OAuthBearerSpec",
    "SaslMechanism",
    "SecurityProtocol",
]

BootstrapServers = Annotated[
    str,
    Matching(
        r"^[A-Za-z0-9.\[\]:_-]+:[0-9]{1,5}(,[A-Za-z0-9.\[\]:_-]+:[0-9]{1,5})*$",
        4096,
        "comma-separated host:port pairs such as kafka-0.kafka:9092,kafka-1.kafka:9092",
    ),
]
SecretName = Annotated[
    str,
    Matching(
        r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", 253, "a Secret name (lower-case letters, digits, '-', '.')"
    ),
]
SecretKey = Annotated[
    str, Matching(r"^[-._a-zA-Z0-9]+$", 253, "a Secret key (letters, digits, '-', '_', '.')")
]
TokenEndpointUrl = Annotated[
    str,
    Matching(
        r"^https?://[^\s,]+$",
        2048,
        "the URL of the identity provider's OAuth 2.0 token endpoint, such as "
        "https://login.example.com/oauth2/token",
    ),
]
OAuthScope = Annotated[
    str,
    Matching(
        r"^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$",
        1024,
        "OAuth 2.0 scopes separated by single spaces (RFC 6749 3.3: printable ASCII but '\"' and '\\')",
    ),
]
ExtensionValue = Annotated[
    str,
    Matching(
        r"^[\x21-\x2B\x2D-\x7E]+$",
        1024,
        "a SASL extension value (printable ASCII without spaces or commas)",
    ),
]
ApplicationId = Annotated[
    str,
    Matching(r"^[A-Za-z0-9._-]+$", 249, "a Kafka Streams application.id (letters, digits, '.', '_', '-')"),
]


class SecurityProtocol(StrEnum):
    """Kafka's `security.protocol`."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)


class GroupProtocol(StrEnum):
    """The rebalance protocol the app's Kafka Streams instances run (their `group.protocol`), which decides
    who assigns the tasks: the app's own group leader (classic, with the smoothscale-streams bridge) or the
    group coordinator on the broker (streams, KIP-1071, with smoothscale's broker plugin)."""

    CLASSIC = "classic"
    STREAMS = "streams"


class SaslMechanism(StrEnum):
    """Kafka's `sasl.mechanism`: username and password mechanisms, and OAUTHBEARER (OIDC tokens)."""

    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"
    OAUTHBEARER = "OAUTHBEARER"


class KafkaSecretRef(SpecModel):
    """A Secret in the app's namespace holding Kafka credentials; the keys may be renamed."""

    name: SecretName = Field(description="Name of the Secret (in the StreamsApp's namespace).")
    username_key: SecretKey = Field("username", description="Key of the SASL username.")
    password_key: SecretKey = Field("password", description="Key of the SASL password.")
    client_id_key: SecretKey = Field("clientId", description="Key of the OAuth client id (OAUTHBEARER).")
    client_secret_key: SecretKey = Field(
        "clientSecret", description="Key of the OAuth client secret (OAUTHBEARER)."
    )
    ca_key: SecretKey = Field("ca.crt", description="Key of the PEM CA certificate(s) trusted for TLS.")
    certificate_key: SecretKey = Field(
        "tls.crt", description="Key of the PEM client certificate for mutual TLS (used when present)."
    )
    private_key_key: SecretKey = Field(
        "tls.key", description="Key of the PEM client private key for mutual TLS (used when present)."
    )


class OAuthBearerSpec(SpecModel):
    """Where and how the operator gets its OAUTHBEARER tokens: the OIDC client-credentials grant, with the
    client id and secret from `secretRef` (librdkafka's `sasl.oauthbearer.method=oidc`)."""

    token_endpoint_url: TokenEndpointUrl = Field(
        description="The identity provider's token endpoint (sasl.oauthbearer.token.endpoint.url); use "
        "https: the client secret travels in the request."
    )
    scope: OAuthScope | None = Field(
        None, description="Scopes to ask for, space-separated (sasl.oauthbearer.scope). Absent: none asked."
    )
    extensions: dict[str, ExtensionValue] = Field(
        default_factory=dict,
        description="SASL extensions sent with the token, name -> value (sasl.oauthbearer.extensions), such "
        "as logicalCluster and identityPoolId for Confluent Cloud. Names are letters only; 'auth' is "
        "reserved.",
    )


class KafkaSpec(SpecModel):
    """The app's Kafka cluster, read by the operator for racks, changelog sizes and group state."""

    bootstrap_servers: BootstrapServers = Field(
        description="Brokers to connect to first, host:port,host:port (bootstrap.servers)."
    )
    application_id: ApplicationId | None = Field(
        None,
        description="The app's application.id: its consumer group and the prefix of its internal topics. "
        "Absent: the StreamsApp's name.",
    )
    security_protocol: SecurityProtocol = Field(
        SecurityProtocol.PLAINTEXT,
        description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (security.protocol).",
    )
    sasl_mechanism: SaslMechanism | None = Field(
        None,
        description="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER; required with SASL_PLAINTEXT and "
        "SASL_SSL.",
    )
    oauthbearer: OAuthBearerSpec | None = Field(
        None, description="The token endpoint, scope and extensions; required with saslMechanism OAUTHBEARER."
    )
    secret_ref: KafkaSecretRef | None = Field(
        None,
        description="The Secret with the credentials; required with SASL and with SSL (for the CA). The "
        "operator only ever reads the Secret named here (RBAC: get on Secrets, no list or watch).",
    )
    group_protocol: GroupProtocol = Field(
        GroupProtocol.CLASSIC,
        description="The app's group.protocol: classic (the smoothscale-streams bridge in the app assigns "
        "the tasks) or streams (KIP-1071: the brokers assign them, so every broker must load smoothscale's "
        "broker-side assignor; the operator checks and sets the StreamsAssignorMissing condition when one "
        "does not).",
    )
    refresh_interval: Duration = Field(
        "30s", description="How often the operator reads Kafka again (racks, offsets, group), e.g. 30s."
    )
    timeout: Duration = Field("10s", description="How long one read of Kafka may take before it fails.")
