package io.smoothscale.broker;

import static io.smoothscale.broker.Groups.actives;
import static io.smoothscale.broker.Groups.group;
import static io.smoothscale.broker.Groups.member;
import static io.smoothscale.broker.Groups.orders;
import static io.smoothscale.broker.Groups.plan;
import static io.smoothscale.broker.Groups.pod;
import static io.smoothscale.broker.Groups.source;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SmoothscaleTaskAssignorTest {
    private final AssignorMetrics metrics = new AssignorMetrics(false);

    private final Groups.Group group = group(1,
        member("m0", "orders", "orders-0", List.of("0_0", "0_1", "0_2", "1_0", "1_1", "1_2")),
        member("m1", "orders", "orders-1", List.of()),
        member("m2", "orders", "orders-2", List.of()));

    @Test
    void aManagedGroupRunsThePlanAndTheMetricSaysSo() {
        var plan = plan(4, Map.of(
            "orders-0", pod(List.of("0_0", "1_0"), List.of("1_1"), List.of()),
            "orders-1", pod(List.of("0_1", "1_1"), List.of("1_2"), List.of()),
            "orders-2", pod(List.of("0_2", "1_2"), List.of(), List.of("1_0"))));
        var assignor = new SmoothscaleTaskAssignor(source("orders", plan), new StickyTaskAssignor(), metrics);
        GroupAssignment assignment = assignor.assign(group, orders(3));
        assertEquals(Map.of("m0", Set.of("0_0", "1_0"), "m1", Set.of("0_1", "1_1"), "m2", Set.of("0_2", "1_2")),
            actives(assignment));
        assertEquals(1, metrics.followedCount());
        assertEquals("smoothscale", assignor.name());
    }

    @Test
    void withoutAPlanTheGroupGetsExactlyKafkasStickyAssignment() {
        var assignor = new SmoothscaleTaskAssignor(app -> PlanLookup.none(FallbackReason.NO_PLAN, "none read"),
            new StickyTaskAssignor(), metrics);
        assertEquals(new StickyTaskAssignor().assign(group, orders(3)), assignor.assign(group, orders(3)));
        assertEquals(1, metrics.fallbackCount(FallbackReason.NO_PLAN));
        assertEquals(0, metrics.followedCount());
    }

    @Test
    void aFailingPlanSourceFallsBackInsteadOfThrowing() {
        PlanSource broken = app -> {
            throw new IllegalStateException("boom");
        };
        var assignor = new SmoothscaleTaskAssignor(broken, new StickyTaskAssignor(), metrics);
        assertEquals(new StickyTaskAssignor().assign(group, orders(3)), assignor.assign(group, orders(3)));
        assertEquals(1, metrics.fallbackCount(FallbackReason.ERROR));
    }

    @Test
    void settingsComeFromSystemPropertyNamesAndAnUnreadableClientConfigIsNamed(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("client.properties");
        Files.writeString(config, "security.protocol=SASL_SSL\n");
        Map<String, String> values = Map.of("smoothscale.plans.bootstrap.servers", "k:9092",
            "smoothscale.plans.client.config", config.toString());
        PluginSettings settings = PluginSettings.from(values::get);
        assertEquals("k:9092", settings.bootstrapServers());
        assertEquals(PluginSettings.DEFAULT_TOPIC, settings.topic());
        assertEquals("SASL_SSL", settings.clientConfig().getProperty("security.protocol"));
        var error = assertThrows(IllegalArgumentException.class, () -> PluginSettings.from(
            Map.of("smoothscale.plans.client.config", dir.resolve("missing").toString())::get));
        assertTrue(error.getMessage().contains("smoothscale.plans.client.config"), error.getMessage());
        assertEquals(GroupViewPublisher.DEFAULT_TOPIC, settings.groupsTopic());
        assertEquals(PluginSettings.DEFAULT_GROUPS_INTERVAL_MS, settings.groupsIntervalMs());
        var interval = assertThrows(IllegalArgumentException.class, () -> PluginSettings.from(
            Map.of("smoothscale.groups.interval.ms", "soon")::get));
        assertTrue(interval.getMessage().contains("smoothscale.groups.interval.ms=soon"), interval.getMessage());
    }

    @Test
    void everyTaggedGroupAssignedHereIsHandedToTheGroupViewPublisherFollowedOrNot() {
        List<String> published = new java.util.ArrayList<>();
        var following = new SmoothscaleTaskAssignor(source("orders", plan(1, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "0_2", "1_0", "1_1", "1_2"), List.of(), List.of())))),
            new StickyTaskAssignor(), metrics, published::add);
        following.assign(group, orders(3));
        var without = new SmoothscaleTaskAssignor(app -> PlanLookup.none(FallbackReason.NO_PLAN, "none read"),
            new StickyTaskAssignor(), metrics, published::add);
        without.assign(group, orders(3));
        without.assign(group(1, member("u0", null, null, List.of())), orders(3));
        assertEquals(List.of("orders", "orders"), published);
    }
}
