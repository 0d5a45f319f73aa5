"""Real Apache Kafka for tests and the demo: the broker's jars from Maven Central (`jars`, pinned in
`pom.xml`), each node's `server.properties` (`config`), a throwaway CA for its TLS listener (`certs`),
`KafkaCluster`, which starts and stops brokers on loopback (`broker`), and topics and records (`topics`).
`python -m smoothscale.sandbox.kafka install` fills the jar cache (CI does); `... run` starts a cluster in
the foreground."""
