package io.smoothscale.broker;

import static io.smoothscale.broker.Groups.actives;
import static io.smoothscale.broker.Groups.group;
import static io.smoothscale.broker.Groups.member;
import static io.smoothscale.broker.Groups.orders;
import static io.smoothscale.broker.Groups.plan;
import static io.smoothscale.broker.Groups.pod;
import static io.smoothscale.broker.Groups.source;
import static io.smoothscale.broker.Groups.standbys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.smoothscale.streams.Publication;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PlanFollowerTest {
    private static final Publication TWO_PODS = plan(7, Map.of(
        "orders-0", pod(List.of("0_0", "1_0"), List.of("1_1"), List.of()),
        "orders-1", pod(List.of("0_1", "1_1"), List.of(), List.of("1_0"))));

    @Test
    void eachMemberGetsItsPodsTasksAndAWarmupAsAStandby() {
        Groups.Group group = group(1,
            member("m0", "orders", "orders-0", List.of("0_0", "0_1", "1_0", "1_1")),
            member("m1", "orders", "orders-1", List.of()));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", TWO_PODS));
        assertTrue(decision.followed(), decision.detail());
        assertEquals(7, decision.generation());
        assertEquals(Map.of("m0", Set.of("0_0", "1_0"), "m1", Set.of("0_1", "1_1")), actives(decision.assignment()));
        assertEquals(Map.of("m0", Set.of("1_1"), "m1", Set.of("1_0")), standbys(decision.assignment()));
    }

    @Test
    void aPodsMembersShareItsTasksAndATaskStaysWithTheMemberThatRunsIt() {
        Publication plan = plan(3, Map.of("orders-0", pod(List.of("0_0", "0_1", "1_0", "1_1"), List.of(), List.of())));
        Groups.Group group = group(0,
            member("a", "orders", "orders-0", List.of()),
            member("b", "orders", "orders-0", List.of("1_1")));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", plan));
        Map<String, Set<String>> actives = actives(decision.assignment());
        assertTrue(actives.get("b").contains("1_1"), actives.toString());
        assertEquals(2, actives.get("a").size(), actives.toString());
        assertEquals(2, actives.get("b").size(), actives.toString());
    }

    @Test
    void aPodThePlanDoesNotNameYetGetsNothing() {
        Groups.Group group = group(1,
            member("m0", "orders", "orders-0", List.of()),
            member("m1", "orders", "orders-1", List.of()),
            member("m2", "orders", "orders-2", List.of()));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", TWO_PODS));
        assertTrue(decision.followed(), decision.detail());
        assertEquals(Set.of(), actives(decision.assignment()).get("m2"));
        assertEquals(Set.of(), standbys(decision.assignment()).get("m2"));
    }

    @Test
    void aCopyOfAStatelessTaskIsLeftOut() {
        Publication plan = plan(2, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0", "1_1"), List.of(), List.of()),
            "orders-1", pod(List.of(), List.of("0_0", "1_0"), List.of())));
        Groups.Group group = group(1, member("m0", "orders", "orders-0", List.of()),
            member("m1", "orders", "orders-1", List.of()));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", plan));
        assertEquals(Set.of("1_0"), standbys(decision.assignment()).get("m1"));
    }

    @Test
    void aGroupWithoutTheTagsIsNotManaged() {
        Groups.Group group = group(0, member("m0", null, null, List.of()));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", TWO_PODS));
        assertEquals(FallbackReason.NOT_MANAGED, decision.reason());
    }

    @Test
    void aMemberWithoutItsPodTagStopsThePlan() {
        Groups.Group group = group(0, member("m0", "orders", "orders-0", List.of()),
            member("m1", "orders", null, List.of()));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", TWO_PODS));
        assertEquals(FallbackReason.UNMAPPED_MEMBER, decision.reason());
        assertTrue(decision.detail().contains("m1"), decision.detail());
    }

    @Test
    void noPlanForTheAppFallsBackAndSaysWhy() {
        Groups.Group group = group(0, member("m0", "payments", "payments-0", List.of()));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", TWO_PODS));
        assertEquals(FallbackReason.NO_PLAN, decision.reason());
        assertEquals("payments", decision.app());
        assertTrue(decision.detail().contains("payments"), decision.detail());
    }

    @Test
    void aPlanThatWouldLoseOrDuplicateATaskIsNotFollowed() {
        Groups.Group group = group(0, member("m0", "orders", "orders-0", List.of()),
            member("m1", "orders", "orders-1", List.of()));
        assertFallback(FallbackReason.UNKNOWN_TASK, group, plan(1, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0", "1_1", "1_2"), List.of(), List.of()))));
        assertFallback(FallbackReason.MISSING_TASK, group, plan(1, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0"), List.of(), List.of()))));
        assertFallback(FallbackReason.INVALID_PLAN, group, plan(1, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0", "1_1"), List.of(), List.of()),
            "orders-1", pod(List.of("1_1"), List.of(), List.of()))));
        assertFallback(FallbackReason.INVALID_PLAN, group, plan(1, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0", "1_1"), List.of(), List.of("1_1")))));
        assertFallback(FallbackReason.POD_NOT_IN_GROUP, group, plan(1, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0"), List.of(), List.of()),
            "orders-9", pod(List.of("1_1"), List.of(), List.of()))));
    }

    @Test
    void aCopyOnAPodThatLeftTheGroupIsNoReasonToFallBack() {
        Groups.Group group = group(0, member("m0", "orders", "orders-0", List.of()));
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", plan(1, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0", "1_1"), List.of(), List.of()),
            "orders-9", pod(List.of(), List.of("1_1"), List.of())))));
        assertTrue(decision.followed(), decision.detail());
        assertFalse(decision.assignment().members().containsKey("orders-9"));
    }

    private static void assertFallback(FallbackReason expected, Groups.Group group, Publication plan) {
        Decision decision = PlanFollower.decide(group, orders(2), source("orders", plan));
        assertEquals(expected, decision.reason(), decision.detail());
        assertFalse(decision.detail().isBlank());
    }
}
