"""The operator reads the app's Kafka cluster (`spec.kafka`), off its reconcile loop.

- `settings`: the client's configuration from `spec.kafka` and the referenced Secret's data (pure);
- `secret`: reading that Secret through the operator's API client;
- `reader`: one read of the cluster with confluent-kafka's AdminClient (blocking: run in a thread);
- `view`: from what was read to the planner's inputs and the status (pure): input partitions' racks,
  changelog end offsets per task, the consumer group;
- `observer`: per app, reads in the background every `refreshInterval`, keeps the last good view, and says
  whether Kafka is unavailable and why (the `KafkaUnavailable` condition and its Events).
"""
