"""The contract between the operator and an app's pods (Contract 3, docs/architecture.md), at the bottom of
the layers: the names both sides use (`shared_names`), the publication a generation carries
(`publication`), and its one ConfigMap codec (`configmap`).

It needs neither numpy nor OR-Tools (import-linter checks it): the client library, which runs in the app's
pods, stands on it alone, and installs without the planner.
"""
