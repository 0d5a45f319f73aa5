"""The client library for the pods of a StreamsApp, for apps written in Python (Contract 3, see
docs/architecture.md).

    class Tasks(TaskListener):
        def on_assigned(self, task): ...      # start processing
        def on_revoked(self, task): ...       # stop processing; return once stopped

    with StreamsClient(ClientConfig(pod=..., namespace=..., app=..., kubeconfig=...), Tasks()) as client:
        client.metrics.set_task("0_3", lag=120, end_offset=5000)
        if client.may_process():             # with a lease (spec.failover): only while the pod holds it
            ...                               # process the next batch of the active tasks

It stands on `smoothscale.contract` alone (the names, the publication and its ConfigMap codec): neither the
planner (numpy, OR-Tools) nor the operator.
"""

from smoothscale.contract.configmap import CorruptAssignment, from_configmap

from .applier import AssignmentApplier, TaskListener
from .client import ClientConfig, StreamsClient, api_client
from .metrics import TaskMetrics
from .publication import from_mounted_dir
from .roles import Role, RoleChange, role_changes, roles_of

__all__ = [
    "AssignmentApplier",
    "ClientConfig",
    "CorruptAssignment",
    "Role",
    "RoleChange",
    "StreamsClient",
    "TaskListener",
    "TaskMetrics",
    "api_client",
    "from_configmap",
    "from_mounted_dir",
    "role_changes",
    "roles_of",
]
