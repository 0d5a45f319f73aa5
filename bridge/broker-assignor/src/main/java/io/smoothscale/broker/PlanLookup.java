package io.smoothscale.broker;

import io.smoothscale.streams.Publication;

/** The plan a {@link PlanSource} holds for one app: a publication, or why there is none to follow. */
public record PlanLookup(Publication plan, FallbackReason reason, String detail) {

    public PlanLookup {
        if ((plan == null) == (reason == null)) {
            throw new IllegalArgumentException("a lookup is either a plan or a reason");
        }
    }

    public static PlanLookup found(Publication plan) {
        return new PlanLookup(plan, null, "");
    }

    public static PlanLookup none(FallbackReason reason, String detail) {
        return new PlanLookup(null, reason, detail);
    }
}
