"""The embedded sandbox: what stands in for a cluster's apps and nodes when there is no cluster.

- `worker`: the sample Streams-style app, built on `smoothscale.client`, run by `smoothscale worker`;
- `changelog`, `state`, `records`: its simulated changelog, its per-task state directories, and the record
  file in which it writes every interval it processed a task (what the end-to-end tests check);
- `kubelet`: the kubelet stand-in that binds the emulator's pods to zone nodes and runs a worker per pod.

It sits beside the operator, never inside it: the operator must work the same against a real cluster.
"""
