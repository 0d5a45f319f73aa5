"""Balanced, min-cost placement of task copies on clients as one OR-Tools min-cost flow (KIP-925).

Why this shape: a dense task x client graph does not scale to 50,000 x 1,000. Inside a rack, clients that
neither hold a task nor have state for it are interchangeable for that task, so a copy enters a rack through
one *entry* arc into the rack's hub, which fans out to the rack's clients; only clients with a reason to be
preferred (they hold the task, or have state for it) get a *direct* arc. A copy that must avoid one client of
its rack (a standby never sits with its active) enters an *exclusion* node shared by every copy that avoids
the same client; that node reaches the rest of the rack through square-root blocks, so the exclusion stays
exact with O(clients x sqrt(rack size)) arcs, and every path stays short (push-relabel hates long chains).

Balance is exact: per-client (and per group-and-client) lower and upper bounds are lower-bounded arcs,
rewritten as node supplies. When the bounds cannot all hold together (exclusions can make them infeasible),
the solve relaxes them step by step instead of failing.

The flow says how many copies enter each hub or exclusion node and how many leave at each client; a small
exact matching per rack then decides which entry feeds which client, and copies of one task never share a
client.

One concept per module, as Kafka Streams' assignment package keeps them:

- `problem`: what to place (items, entry and direct arcs, costs) and the bounds to respect;
- `graph`: arcs as arrays, lower-bounded arcs, and the OR-Tools solve;
- `layout`: node numbering of the graph and the balance arcs toward the sink;
- `dense`: the exact item x client graph, for small problems;
- `aggregated`: the hub-and-exclusion graph, for large ones;
- `rack_fill`: which copy entering a rack goes to which of its clients;
- `solve`: the entry point, choosing the graph and relaxing bounds that cannot hold together.
"""
