"""Thin kopf handlers: each reads kopf's kwargs, calls into the operator's modules, and returns.

Every module has a `register(registry, context)` that adds its handlers to a registry as closures over one
`OperatorContext`; `smoothscale.operator.main.build_registry` wires them all in one place.
"""
