"""The embedded sandbox: a cluster around the operator when there is no cluster (`smoothscale demo`, tests).

- `worker`: the sample Streams-style app, built on `smoothscale.client`, run by `smoothscale worker`
  (`environment` names its variables); `changelog`, `state`, `records`: its simulated changelog, its per-task
  state directories, and the record file of every interval it processed a task;
- `kubelet`: the kubelet stand-in, which binds the emulator's pods to zone nodes (`scheduling`) and runs a
  worker per pod on a loopback IP of its own (`addresses`), as the pod says (`podspec`);
- `harness`: the API emulator, the kubelet stand-in and the operator together (`Sandbox`);
- `observe`, `invariants`: what a running app looks like, and what must hold, judged from the records;
- `demo`, `report`, `demo_main`, `demo_kafka`: `smoothscale demo` (`--kafka`: Kafka Streams pods, brokers);
- `background`: a loop in a thread of its own for the length of a `with` block;
- `kafka`: real Apache Kafka brokers (jars from Maven Central) on loopback, for tests and the demo.

It sits above the operator and drives it only through the API, as a cluster would.
"""
