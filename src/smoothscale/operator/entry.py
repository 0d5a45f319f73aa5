"""`kopf run -m smoothscale.operator.entry [--standalone] [-A | -n NS]`: the operator under kopf's own CLI.

Importing this module registers every handler in kopf's default registry, with settings read from
`SMOOTHSCALE_*` environment variables (see `config.OperatorConfig`); the peering object is the one
`SMOOTHSCALE_PEERING` names (default `smoothscale`, whatever kopf's `--peering` says), and kopf's
`--standalone` and `--priority` apply. `smoothscale operator` is the usual entry; this one is for
deployments that standardise on `kopf run`.
"""

from __future__ import annotations

import kopf

from .config import OperatorConfig
from .context import OperatorContext
from .main import build_registry

_context = OperatorContext(OperatorConfig.from_env())
kopf.set_default_registry(build_registry(_context))
