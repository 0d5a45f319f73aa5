package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;

/** Decoding the ConfigMap the operator writes; `tests/bridge/test_bridge_contract.py` keeps the fixture true. */
class PublicationCodecTest {
    private static final String LONG_POD = "orders-enrichment-with-a-very-long-statefulset-name-1234567-0";

    static ObjectNode operatorConfigMap() throws IOException {
        try (InputStream in = PublicationCodecTest.class.getResourceAsStream("/operator-configmap.json")) {
            return (ObjectNode) new ObjectMapper().readTree(in);
        }
    }

    private static Map<String, String> strings(JsonNode node) {
        Map<String, String> values = new HashMap<>();
        node.properties().forEach(entry -> values.put(entry.getKey(), entry.getValue().asText()));
        return values;
    }

    static String gzipBase64(String json) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gzip = new GZIPOutputStream(bytes)) {
            gzip.write(json.getBytes(StandardCharsets.UTF_8));
        }
        return Base64.getEncoder().encodeToString(bytes.toByteArray());
    }

    @Test
    void readsTheConfigMapTheOperatorWrites() throws Exception {
        ObjectNode configMap = operatorConfigMap();
        Publication publication = PublicationCodec.fromConfigMap(strings(configMap.get("data")),
            strings(configMap.get("binaryData")));

        assertEquals(7, publication.generation());
        assertEquals(new PodTasks(List.of("0_0", "0_1", "1_0"), List.of("0_3"), List.of()), publication.tasksOf("orders-0"));
        assertEquals(new PodTasks(List.of("0_3", "1_1"), List.of("0_0"), List.of("0_1")), publication.tasksOf(LONG_POD));
        assertEquals(Map.of("0_2", new Revocation("orders-0", 7)), publication.revoking());
        assertEquals(PodTasks.NONE, publication.tasksOf("orders-9"));
    }

    @Test
    void aGenerationKeyThatDisagreesIsCorrupt() throws Exception {
        Map<String, String> binaryData = strings(operatorConfigMap().get("binaryData"));
        CorruptPublicationException error = assertThrows(CorruptPublicationException.class,
            () -> PublicationCodec.fromConfigMap(Map.of("generation", "8"), binaryData));
        assertTrue(error.getMessage().contains("generation 7"), error.getMessage());
    }

    private static String corruption(Map<String, String> binaryData) {
        return assertThrows(CorruptPublicationException.class,
            () -> PublicationCodec.fromConfigMap(Map.of(), binaryData)).getMessage();
    }

    @Test
    void whatIsNotAPublicationIsCorruptAndSaysWhy() throws Exception {
        assertTrue(corruption(Map.of()).contains("binaryData has no 'assignment.json.gz'"));
        assertTrue(corruption(Map.of("assignment.json.gz", "not base64!")).contains("not base64"));
        assertTrue(corruption(Map.of("assignment.json.gz", Base64.getEncoder().encodeToString("{}".getBytes(StandardCharsets.UTF_8))))
            .contains("not gzip"));
        assertTrue(corruption(Map.of("assignment.json.gz", gzipBase64("{\"generation\": 1, \"extra\": 2}")))
            .contains("not a publication"));
        assertTrue(corruption(Map.of("assignment.json.gz", gzipBase64("{\"generation\": -1}")))
            .contains("not a publication"));
        assertTrue(corruption(Map.of("assignment.json.gz", gzipBase64("null"))).contains("null"));
        assertTrue(corruption(Map.of("assignment.json.gz", gzipBase64("{\"generation\": 2, \"assignment\": {\"p\": {\"active\": 3}}}")))
            .contains("not a publication"));
    }

    @Test
    void theWatchReplacesThePublicationWithTheErrorOfACorruptVersion() throws Exception {
        LatestPublication latest = new LatestPublication();
        PublicationWatch.read(operatorConfigMap(), latest);
        assertEquals(7, latest.publication().orElseThrow().generation());

        ObjectNode corrupt = operatorConfigMap();
        ((ObjectNode) corrupt.get("binaryData")).put("assignment.json.gz", "AAAA");
        PublicationWatch.read(corrupt, latest);

        assertTrue(latest.publication().isEmpty());
        assertTrue(latest.reading().error().orElseThrow().contains("not gzip"));
    }
}
