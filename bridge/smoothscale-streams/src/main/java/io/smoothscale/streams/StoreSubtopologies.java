package io.smoothscale.streams;

import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.streams.TopologyDescription;

/**
 * Which subtopology each state store of the app belongs to: a store's partition {@code p} is task
 * {@code <subtopology>_p}'s, which is what the operator plans with. Global stores belong to no task and are
 * left out.
 *
 * <p>Read either from the {@link TopologyDescription} an app hands the bridge in code, or, when the app adopts
 * smoothscale by configuration alone, from the text of that description, which Kafka Streams publishes as its
 * client-level metric {@code topology-description} ({@code stream-metrics}, recording level INFO, every version
 * since 2.5). The text's form ({@code Sub-topology: <id>}, then processors with {@code (stores: [a, b])}) has
 * not changed since Kafka Streams 1.0; a global store's subtopology reads {@code Sub-topology: <id> for global
 * store (will not generate tasks)}.
 */
final class StoreSubtopologies {
    private static final Pattern SUBTOPOLOGY = Pattern.compile("^\\s*Sub-topology: (\\d+)(.*)$");
    private static final Pattern STORES = Pattern.compile("\\(stores: \\[([^\\]]*)\\]\\)");

    private StoreSubtopologies() {}

    static Map<String, Integer> of(TopologyDescription topology) {
        Map<String, Integer> stores = new TreeMap<>();
        for (TopologyDescription.Subtopology subtopology : topology.subtopologies()) {
            for (TopologyDescription.Node node : subtopology.nodes()) {
                if (node instanceof TopologyDescription.Processor processor) {
                    processor.stores().forEach(store -> stores.put(store, subtopology.id()));
                }
            }
        }
        return Map.copyOf(stores);
    }

    /** The same map read from {@code TopologyDescription.toString()}. */
    static Map<String, Integer> parse(String description) {
        Map<String, Integer> stores = new TreeMap<>();
        Integer current = null;
        for (String line : description.split("\n")) {
            Matcher subtopology = SUBTOPOLOGY.matcher(line);
            if (subtopology.matches()) {
                current = subtopology.group(2).contains("global store") ? null : Integer.valueOf(subtopology.group(1));
                continue;
            }
            Matcher names = STORES.matcher(line);
            if (current != null && line.strip().startsWith("Processor:") && names.find()) {
                for (String store : names.group(1).split(",")) {
                    if (!store.isBlank()) {
                        stores.put(store.strip(), current);
                    }
                }
            }
        }
        return Map.copyOf(stores);
    }
}
