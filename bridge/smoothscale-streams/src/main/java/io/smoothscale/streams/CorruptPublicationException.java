package io.smoothscale.streams;

/**
 * The assignment ConfigMap holds no valid publication (a missing key, bad base64 or gzip, JSON that is not a
 * publication, or a {@code generation} key that disagrees with the assignment): the app keeps its current
 * work and the assignor falls back to Kafka's own assignment.
 */
public class CorruptPublicationException extends Exception {
    private static final long serialVersionUID = 1L;

    public CorruptPublicationException(String message) {
        super(message);
    }

    public CorruptPublicationException(String message, Throwable cause) {
        super(message, cause);
    }
}
