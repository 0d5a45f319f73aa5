package io.smoothscale.streams;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Base64;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/**
 * Reads a publication exactly as the operator writes it (Contract 3): {@code binaryData["assignment.json.gz"]}
 * is gzip'd JSON of the publication, base64'd by the API; {@code data["generation"]} repeats its generation
 * in decimal. The checks are the Python client library's, so that every runtime rejects the same
 * ConfigMaps: unknown fields, a missing key, bad base64 or gzip, or a generation mismatch.
 */
public final class PublicationCodec {
    /** binaryData key of the gzip'd publication. */
    public static final String ASSIGNMENT_KEY = "assignment.json.gz";
    /** data key repeating the publication's generation in decimal. */
    public static final String GENERATION_KEY = "generation";

    private static final ObjectMapper JSON = new ObjectMapper()
        .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
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
            Publication publication = JSON.readValue(json, Publication.class);
            if (publication == null) {
                throw new CorruptPublicationException("assignment is JSON null, not a publication");
            }
            return publication;
        } catch (JacksonException error) {
            throw new CorruptPublicationException(
                "assignment is not a publication: " + error.getOriginalMessage(), error);
        } catch (IOException | IllegalArgumentException error) {
            throw new CorruptPublicationException("assignment is not a publication: " + error.getMessage(), error);
        }
    }
}
