package io.smoothscale.streams;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.util.Base64;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/**
 * Reads a publication exactly as the operator writes it (Contract 3): {@code binaryData["assignment.json.gz"]}
 * is gzip'd JSON of the publication, base64'd by the API; {@code data["generation"]} repeats its generation
 * in decimal. The checks are the Python client library's, so that every runtime rejects the same
 * ConfigMaps: a missing key, bad base64 or gzip, JSON that is not a publication, or a generation mismatch.
 *
 * <p>Versioned like the Python side ({@code smoothscale/contract/version.py}): fields this release does not know
 * are ignored (a later operator that adds one does not stop this bridge), a publication that states no
 * {@code version} is version 1 (written before versions existed), and one that states a version above
 * {@link #CONTRACT_VERSION} is refused whole, with a message naming both versions and what to upgrade.
 */
public final class PublicationCodec {
    /** binaryData key of the gzip'd publication. */
    public static final String ASSIGNMENT_KEY = "assignment.json.gz";
    /** data key repeating the publication's generation in decimal. */
    public static final String GENERATION_KEY = "generation";
    /** The contract version this release follows (the highest), the Python side's {@code CONTRACT_VERSION}. */
    public static final int CONTRACT_VERSION = 1;
    static final String VERSION_FIELD = "version";

    private static final ObjectMapper JSON = new ObjectMapper()
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
        .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES);

    private PublicationCodec() {}

    /** The publication in a ConfigMap's {@code data} and {@code binaryData} maps, as the API returns them. */
    public static Publication fromConfigMap(Map<String, String> data, Map<String, String> binaryData)
        throws CorruptPublicationException {
        String encoded = binaryData == null ? null : binaryData.get(ASSIGNMENT_KEY);
        if (encoded == null) {
            throw new CorruptPublicationException("binaryData has no '" + ASSIGNMENT_KEY + "'");
        }
        byte[] raw;
        try {
            raw = Base64.getDecoder().decode(encoded);
        } catch (IllegalArgumentException error) {
            throw new CorruptPublicationException(
                "binaryData['" + ASSIGNMENT_KEY + "'] is not base64: " + error.getMessage(), error);
        }
        Publication publication = decode(raw);
        String generation = data == null ? null : data.get(GENERATION_KEY);
        if (generation != null && !generation.strip().equals(Long.toString(publication.generation()))) {
            throw new CorruptPublicationException("data['" + GENERATION_KEY + "']='" + generation
                + "' but the assignment is generation " + publication.generation());
        }
        return publication;
    }

    /** The publication in the gzip'd JSON bytes of {@code binaryData["assignment.json.gz"]}. */
    public static Publication decode(byte[] gzipped) throws CorruptPublicationException {
        byte[] json;
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(gzipped))) {
            json = in.readAllBytes();
        } catch (IOException error) {
            throw new CorruptPublicationException("assignment is not gzip data: " + error.getMessage(), error);
        }
        try {
            JsonNode tree = JSON.readTree(json);
            if (tree == null || tree.isNull() || tree.isMissingNode()) {
                throw new CorruptPublicationException("assignment is JSON null, not a publication");
            }
            requireFollowable(tree.get(VERSION_FIELD));
            return JSON.treeToValue(tree, Publication.class);
        } catch (JacksonException error) {
            throw new CorruptPublicationException(
                "assignment is not a publication: " + error.getOriginalMessage(), error);
        } catch (IOException | IllegalArgumentException error) {
            throw new CorruptPublicationException("assignment is not a publication: " + error.getMessage(), error);
        }
    }

    /**
     * Refuses a publication of a newer contract version before its fields are read: a newer contract may have
     * changed what a field means, and its version explains a failure better than the field would.
     */
    private static void requireFollowable(JsonNode version) throws CorruptPublicationException {
        if (version == null || version.isNull()) {
            return; // written before versions existed: version 1, followed
        }
        if (!version.isIntegralNumber()) {
            throw new CorruptPublicationException(
                "assignment is not a publication: its version is " + version + ", not a whole number");
        }
        BigInteger stated = version.bigIntegerValue();
        if (stated.compareTo(BigInteger.valueOf(CONTRACT_VERSION)) > 0) {
            throw new CorruptPublicationException("the assignment's publication follows contract version " + stated
                + ", but this bridge follows versions up to " + CONTRACT_VERSION + ": upgrade the smoothscale-streams"
                + " bridge in the app's image (or the broker-assignor plugin on the brokers) to the operator's release");
        }
        if (stated.signum() <= 0) {
            throw new CorruptPublicationException(
                "assignment is not a publication: its version is " + stated + ", expected 1 or more");
        }
    }
}
