package io.smoothscale.sample.spring;

import io.smoothscale.sample.OrdersTopology;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.EnableKafkaStreams;

/**
 * The orders topology as a Spring Boot app: Spring Kafka builds and runs the {@code KafkaStreams} from
 * {@code spring.kafka.streams.*}. It adopts smoothscale through {@code application.properties} alone.
 */
@SpringBootApplication
@EnableKafkaStreams
public class SpringOrdersApp {
    @Bean
    KStream<String, String> totals(StreamsBuilder builder, @Value("${orders.topic}") String orders,
                                   @Value("${totals.topic}") String totals) {
        return OrdersTopology.build(builder, orders, totals, order -> { });
    }

    public static void main(String[] args) {
        SpringApplication.run(SpringOrdersApp.class, args);
    }
}
