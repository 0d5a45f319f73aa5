"""The operator's hands in the simulation: the control core's pod-set decisions carried out on the cluster.

The operator's round decides (`control.step.step`, run by `operator_loop.Operator`); this module does what
`operator/podactions.py` does through the API: marks pods leaving with the round's time and the core's
reason, takes marks back, removes
retired pods and pods to restart (`updateStrategy: RollingRestart`: the pod set creates the ordinal again,
of the new template, once no generation names it), and creates the pods of the ordinals the core chose
(`events.Script` schedules them in a zone and boots them). Two of the core's decisions never arise here:
leaving times to stamp (a simulated drain always carries its time) and stopped pods (a simulated pod never
ends Succeeded or Failed).
"""

from __future__ import annotations

from smoothscale.control.scaling import PodSetPlan
from smoothscale.simulation import invariants
from smoothscale.simulation.events import Script
from smoothscale.simulation.state import Cluster, Pod


def carry_out(
    decided: PodSetPlan, script: Script, now: float, *, timeout: float | None, check: bool
) -> list[Pod]:
    """Every step of `decided` at `now`; returns the pods created. With `check`, a retirement must respect
    the hand-over (`invariants.check_retirement`, given the scale-down `timeout`)."""
    cluster: Cluster = script.cluster
    for name, reason in decided.mark_leaving:
        pod = cluster.pods[cluster.by_name[name]]
        pod.leaving_since, pod.leaving_reason = now, reason
    for name in decided.unmark_leaving:
        pod = cluster.pods[cluster.by_name[name]]
        pod.leaving_since, pod.leaving_reason = None, None
    for retired in decided.retire:
        pod = cluster.pods[cluster.by_name[retired.pod]]
        if check:
            invariants.check_retirement(pod, now, timeout)
        cluster.remove(pod)
    for name in decided.restart:
        cluster.remove(cluster.pods[cluster.by_name[name]])
    return [script.create_pod(ordinal, now) for ordinal in decided.create]
