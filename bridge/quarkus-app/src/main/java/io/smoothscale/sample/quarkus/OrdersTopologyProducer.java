package io.smoothscale.sample.quarkus;

import io.smoothscale.sample.OrdersTopology;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Produces;
import org.apache.kafka.streams.Topology;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The orders topology as a Quarkus app: the quarkus-kafka-streams extension builds and runs the
 * {@code KafkaStreams} from this {@link Topology} and the {@code kafka-streams.*} settings. It adopts smoothscale
 * through {@code application.properties} alone.
 */
@ApplicationScoped
public class OrdersTopologyProducer {
    @Produces
    Topology topology(@ConfigProperty(name = "orders.topic") String orders,
                      @ConfigProperty(name = "totals.topic") String totals) {
        return OrdersTopology.topology(orders, totals);
    }
}
