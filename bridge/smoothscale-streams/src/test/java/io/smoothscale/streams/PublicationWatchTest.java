package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The watch against an API server that answers as Kubernetes does, over real HTTP: a list, then a stream of
 * watch events (one JSON object a line), the bearer token of a token file on every request.
 */
class PublicationWatchTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String END = "end";

    private HttpServer server;
    private final List<String> requests = new CopyOnWriteArrayList<>();
    private final BlockingQueue<String> events = new LinkedBlockingQueue<>();
    private volatile String listed = "{\"metadata\": {\"resourceVersion\": \"10\"}, \"items\": []}";
    private Path kubeconfig;

    @BeforeEach
    void serve(@TempDir Path dir) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/api/v1/namespaces/shop/configmaps", this::answer);
        server.setExecutor(Executors.newCachedThreadPool());  // a watch stream holds its thread
        server.start();
        Path token = Files.writeString(dir.resolve("token"), "secret-1\n");
        kubeconfig = Files.writeString(dir.resolve("kubeconfig"), """
            {"apiVersion": "v1", "kind": "Config", "current-context": "c",
             "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:%d"}}],
             "users": [{"name": "u", "user": {"tokenFile": "%s"}}],
             "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
            """.formatted(server.getAddress().getPort(), token.getFileName()));
    }

    @AfterEach
    void stop() {
        events.add(END);
        server.stop(0);
    }

    private void answer(HttpExchange exchange) throws IOException {
        String query = exchange.getRequestURI().getRawQuery();
        requests.add(exchange.getRequestHeaders().getFirst("Authorization") + " " + query);
        if (!query.contains("watch=true")) {
            byte[] body = listed.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
            return;
        }
        exchange.sendResponseHeaders(200, 0);
        try (OutputStream out = exchange.getResponseBody()) {
            while (true) {
                String event = events.poll(10, TimeUnit.SECONDS);
                if (event == null || event.equals(END)) {
                    return;
                }
                out.write((event + "\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private static ObjectNode configMap(long generation, String resourceVersion) throws IOException {
        ObjectNode configMap = PublicationCodecTest.operatorConfigMap();
        ((ObjectNode) configMap.get("metadata")).put("resourceVersion", resourceVersion);
        ((ObjectNode) configMap.get("data")).put("generation", Long.toString(generation));
        ((ObjectNode) configMap.get("binaryData")).put("assignment.json.gz",
            PublicationCodecTest.gzipBase64("{\"generation\": " + generation + ", \"assignment\": {}, \"revoking\": {}}"));
        return configMap;
    }

    private static String event(String type, Object object) throws IOException {
        return JSON.writeValueAsString(Map.of("type", type, "object", object));
    }

    private static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
            Thread.sleep(10);
        }
    }

    private PublicationWatch watch(LatestPublication latest) {
        return new PublicationWatch(KubernetesAccess.fromKubeconfig(kubeconfig), "shop", "orders-assignment", latest);
    }

    private static long generation(LatestPublication latest) {
        return latest.publication().map(Publication::generation).orElse(-1L);
    }

    @Test
    void followsEveryVersionOfItsConfigMapAndListsAgainWhenItsVersionExpired() throws Exception {
        listed = "{\"metadata\": {\"resourceVersion\": \"10\"}, \"items\": [" + configMap(7, "9") + "]}";
        LatestPublication latest = new LatestPublication();
        PublicationWatch watch = watch(latest);
        try {
            waitFor(() -> generation(latest) == 7, "the listed generation");
            events.add(event("MODIFIED", configMap(8, "11")));
            waitFor(() -> generation(latest) == 8, "the watched generation");
            events.add(event("ADDED", Map.of("metadata", Map.of("name", "other", "resourceVersion", "12"))));
            events.add(event("DELETED", configMap(8, "13")));
            waitFor(() -> latest.reading().error().isPresent(), "the deletion");
            assertTrue(latest.reading().error().get().contains("shop/orders-assignment was deleted"));
            events.add(END);  // the server ends the stream (its timeout): the watch resumes from the last version
            waitFor(() -> requests.stream().anyMatch(request -> request.endsWith("resourceVersion=13")),
                "a watch from version 13");

            listed = "{\"metadata\": {\"resourceVersion\": \"20\"}, \"items\": [" + configMap(9, "19") + "]}";
            events.add(event("ERROR", Map.of("kind", "Status", "code", 410, "message", "too old resource version")));
            waitFor(() -> generation(latest) == 9, "the generation listed again after 410 Gone");
        } finally {
            watch.close();
        }
        assertTrue(requests.stream().allMatch(request -> request.startsWith("Bearer secret-1 ")), requests.toString());
        assertTrue(requests.stream().allMatch(request -> request.contains("fieldSelector=metadata.name%3Dorders-assignment")),
            requests.toString());
        assertTrue(requests.get(1).contains("watch=true") && requests.get(1).contains("resourceVersion=10"), requests.get(1));
        assertEquals(2, requests.stream().filter(request -> !request.contains("watch=true")).count(), requests.toString());
    }

    @Test
    void nothingPublishedYetIsFollowedAsGenerationZero() throws Exception {
        LatestPublication latest = new LatestPublication();
        PublicationWatch watch = watch(latest);
        try {
            waitFor(() -> latest.publication().isPresent(), "a reading");
            assertEquals(0, generation(latest));
        } finally {
            watch.close();
        }
    }

    @Test
    void anAccessNotReadableYetIsTriedAgainUntilItIs(@TempDir Path later) throws Exception {
        // the pod's files are not readable at first (a projected volume not written yet, a token being rotated):
        // the reading is that error, the assignor falls back meanwhile, and the watch starts once they are
        Path pending = later.resolve("kubeconfig");
        Path token = kubeconfig.resolveSibling("token");
        Files.delete(token);
        LatestPublication latest = new LatestPublication();
        PublicationWatch watch = new PublicationWatch(() -> KubernetesAccess.fromKubeconfig(pending), "shop",
            "orders-assignment", latest);
        try {
            waitFor(() -> latest.reading().error().isPresent(), "the access error");
            assertTrue(latest.reading().error().get().startsWith(
                "cannot reach the Kubernetes API for ConfigMap shop/orders-assignment"), latest.reading().error().get());
            Files.writeString(pending, Files.readString(kubeconfig).replace("\"token\"", "\"" + token + "\""));
            Thread.sleep(300);  // the kubeconfig opens; every request fails on the token file
            assertTrue(requests.isEmpty(), requests.toString());
            Files.writeString(token, "secret-1\n");
            waitFor(() -> latest.publication().isPresent(), "the publication once the token is readable");
            assertEquals(0, generation(latest));
        } finally {
            watch.close();
        }
        assertTrue(requests.stream().allMatch(request -> request.startsWith("Bearer secret-1 ")), requests.toString());
    }

    @Test
    void aBridgeWhoseAccessIsNotReadableAtItsStartFollowsOnceItIs(@TempDir Path later) throws Exception {
        // the same through the bridge's own start, as a pod starts it: before issue 34's fix its one try to open
        // the access failed and the pod stayed on Kafka's own assignment for good
        Path pending = later.resolve("kubeconfig");
        SmoothscaleBridge bridge = new SmoothscaleBridge(new BridgeSettings("orders-0", "shop", "orders-assignment",
            "127.0.0.1", 0, Optional.of(pending), false));
        try {
            bridge.start(new TaskSource() {
                public Optional<RunningTasks> running() {
                    return Optional.empty();
                }

                public Map<String, TaskStates.TaskState> states() {
                    return Map.of();
                }

                public Map<String, Double> processRates() {
                    return Map.of();
                }

                public Set<Integer> statefulSubtopologies() {
                    return Set.of();
                }
            });
            LatestPublication latest = bridge.publications();
            waitFor(() -> latest.reading().error().isPresent(), "the access error");
            Path token = kubeconfig.resolveSibling("token");
            Files.writeString(pending, Files.readString(kubeconfig).replace("\"token\"", "\"" + token + "\""));
            waitFor(() -> latest.publication().isPresent(), "the publication once the access is readable");
            assertEquals(0, generation(latest));
        } finally {
            bridge.close();
        }
    }
}
