package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
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
        assertTrue(corruption(Map.of("assignment.json.gz", gzipBase64("{\"version\": \"one\", \"generation\": 1}")))
            .contains("not a whole number"));
        assertTrue(corruption(Map.of("assignment.json.gz", gzipBase64("{\"version\": 0, \"generation\": 1}")))
            .contains("expected 1 or more"));
        assertTrue(corruption(Map.of("assignment.json.gz", gzipBase64("{\"extra\": 2}")))
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

    /** The fixture's publication as JSON, to change as a later (or earlier) operator would write it. */
    private static ObjectNode fixturePublication() throws Exception {
        byte[] raw = Base64.getDecoder().decode(operatorConfigMap().get("binaryData").get("assignment.json.gz").asText());
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(raw))) {
            return (ObjectNode) new ObjectMapper().readTree(in);
        }
    }

    private static Publication decodeJson(JsonNode publication) throws Exception {
        return PublicationCodec.fromConfigMap(Map.of(), Map.of("assignment.json.gz", gzipBase64(publication.toString())));
    }

    @Test
    void theOperatorStatesTheContractVersionTheBridgeFollows() throws Exception {
        assertEquals(PublicationCodec.CONTRACT_VERSION, fixturePublication().get("version").asInt());
    }

    @Test
    void fieldsTheBridgeDoesNotKnowAreIgnoredAtEveryLevel() throws Exception {
        Publication expected = decodeJson(fixturePublication());
        ObjectNode later = fixturePublication();
        later.put("nextRelease", "a field a later operator adds");
        later.putObject("hints").put("zone", "a");
        ((ObjectNode) later.get("assignment").get("orders-0")).putArray("paused").add("0_0");
        ((ObjectNode) later.get("revoking").get("0_2")).put("reason", "scale-out");

        assertEquals(expected, decodeJson(later));
        assertEquals(new PodTasks(List.of("0_0", "0_1", "1_0"), List.of("0_3"), List.of()),
            decodeJson(later).tasksOf("orders-0"));
    }

    @Test
    void aPublicationWithoutAVersionIsVersionOneAndFollowed() throws Exception {
        ObjectNode unversioned = fixturePublication();
        unversioned.remove("version");
        assertEquals(decodeJson(fixturePublication()), decodeJson(unversioned));
    }

    @Test
    void aNewerVersionIsRefusedNamingBothVersionsAndWhatToUpgrade() throws Exception {
        for (String version : List.of("2", "17", "123456789012345678901234567890")) {
            ObjectNode newer = fixturePublication();
            newer.set("version", new ObjectMapper().readTree(version));
            String message = assertThrows(CorruptPublicationException.class, () -> decodeJson(newer)).getMessage();
            assertTrue(message.contains("contract version " + version), message);
            assertTrue(message.contains("versions up to 1"), message);
            assertTrue(message.contains("upgrade the smoothscale-streams bridge"), message);
        }
    }

    @Test
    void aNewerVersionThatChangedAFieldIsRefusedForItsVersion() throws Exception {
        ObjectNode newer = fixturePublication();
        newer.put("version", 2);
        newer.put("generation", "7.a");
        String message = assertThrows(CorruptPublicationException.class, () -> decodeJson(newer)).getMessage();
        assertTrue(message.contains("contract version 2"), message);
    }

    @Test
    void whatProtectsATaskStaysStrictWithUnknownFields() throws Exception {
        ObjectNode negative = fixturePublication();
        negative.put("generation", -1);
        negative.put("unknown", true);
        assertTrue(assertThrows(CorruptPublicationException.class, () -> decodeJson(negative)).getMessage()
            .contains("not a publication"));
        ObjectNode notAList = fixturePublication();
        ((ObjectNode) notAList.get("assignment").get("orders-0")).put("active", 3);
        assertTrue(assertThrows(CorruptPublicationException.class, () -> decodeJson(notAList)).getMessage()
            .contains("not a publication"));
    }
}
