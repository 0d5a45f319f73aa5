package io.smoothscale.streams;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the app's assignment ConfigMap through the Kubernetes API and feeds every version into
 * {@link LatestPublication}. A watch sees a new generation as soon as the API server has it; a mounted
 * ConfigMap volume would see it only when the kubelet next syncs the volume, about a minute later.
 *
 * <p>It lists and watches with a {@code metadata.name} field selector, as client-go's informers do for one
 * object, so the pod's Role needs only {@code get}, {@code list} and {@code watch} on {@code configmaps}
 * restricted by {@code resourceNames} to this one ConfigMap. The watch is a plain HTTP stream of JSON lines
 * (the JDK's HTTP client: nothing on the app's classpath); it resumes from the last resourceVersion seen when
 * the server ends it, lists again when that version has expired (410 Gone), and retries with a growing pause
 * (at most 5 s) while the API server is away. Events for any other object are ignored, in case an API server
 * does not honour the field selector.
 *
 * <p>The access itself (the service account's CA and token, or the kubeconfig) is opened in the same loop, so
 * that files not readable yet (a projected volume not written yet, a token being rotated) are tried again with
 * the same pause instead of leaving the pod on Kafka's own assignment for good; until they are, the reading
 * is that error (the assignor falls back and says why).
 */
public final class PublicationWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PublicationWatch.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<Map<String, String>> STRINGS = new TypeReference<>() {};
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
    private static final int WATCH_SECONDS = 240;
    private static final long FIRST_RETRY_MILLIS = 200;
    private static final long MAX_RETRY_MILLIS = 5_000;

    private final Supplier<KubernetesAccess> access;
    private KubernetesAccess api;
    /** Whether the access could not be opened since the last list: the reading is that error. */
    private boolean accessFailed;
    private final String namespace;
    private final String name;
    private final LatestPublication latest;
    private final Thread thread;
    private volatile boolean closed;
    private volatile InputStream stream;
    /** Whether the last list or watch event showed the ConfigMap present. */
    private boolean present;

    PublicationWatch(KubernetesAccess api, String namespace, String name, LatestPublication latest) {
        this(() -> api, namespace, name, latest);
    }

    /** {@code access} is asked again after every failure to open it, until it gives one. */
    PublicationWatch(Supplier<KubernetesAccess> access, String namespace, String name, LatestPublication latest) {
        this.access = access;
        this.namespace = namespace;
        this.name = name;
        this.latest = latest;
        // Not waited for: an API server that is slow or away must not keep the app from processing. Until
        // the first publication arrives, rebalances fall back to Kafka's own assignment.
        thread = new Thread(this::run, "smoothscale-publication-watch");
        thread.setDaemon(true);
        thread.start();
    }

    private void run() {
        long retry = FIRST_RETRY_MILLIS;
        while (!closed) {
            try {
                open();
                String version = list();
                retry = FIRST_RETRY_MILLIS;
                while (!closed && version != null) {
                    version = watch(version);
                }
            } catch (IOException | RuntimeException error) {
                if (closed) {
                    return;
                }
                LOG.warn("Cannot watch ConfigMap {}/{} (retrying in {} ms): {}", namespace, name, retry,
                    error.toString());
                try {
                    Thread.sleep(retry);
                } catch (InterruptedException interrupted) {
                    return;
                }
                retry = Math.min(2 * retry, MAX_RETRY_MILLIS);
            } catch (InterruptedException interrupted) {
                return;
            }
        }
    }

    /** The API's access, opened once: a failure is the reading (the assignor falls back on it) and is retried. */
    private void open() {
        if (api != null) {
            return;
        }
        try {
            api = access.get();
        } catch (RuntimeException error) {
            accessFailed = true;
            latest.reject("cannot reach the Kubernetes API for ConfigMap " + namespace + "/" + name + ": " + error);
            throw error;
        }
    }

    private String path(String extra) {
        return "/api/v1/namespaces/" + encode(namespace) + "/configmaps?fieldSelector="
            + encode("metadata.name=" + name) + extra;
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }

    /** Read the ConfigMap as it is now; the list's resourceVersion, to watch from. */
    private String list() throws IOException, InterruptedException {
        HttpResponse<InputStream> response = api.client().send(api.get(path(""), REQUEST_TIMEOUT),
            HttpResponse.BodyHandlers.ofInputStream());
        JsonNode body;
        try (InputStream in = response.body()) {
            body = JSON.readTree(in);
        }
        if (response.statusCode() != 200) {
            throw new IOException(failure("list", response.statusCode(), body));
        }
        boolean found = false;
        for (JsonNode item : body.path("items")) {
            if (name.equals(item.path("metadata").path("name").asText())) {
                found = true;
                read(item);
            }
        }
        if (!found) {
            gone();
        }
        accessFailed = false;
        return body.path("metadata").path("resourceVersion").asText("");
    }

    /** Follow the watch stream from {@code version}; the version to resume from, or null to list again. */
    private String watch(String version) throws IOException, InterruptedException {
        String query = "&watch=true&allowWatchBookmarks=true&timeoutSeconds=" + WATCH_SECONDS
            + (version.isEmpty() ? "" : "&resourceVersion=" + encode(version));
        HttpResponse<InputStream> response = api.client().send(api.get(path(query), REQUEST_TIMEOUT),
            HttpResponse.BodyHandlers.ofInputStream());
        stream = response.body();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
            if (response.statusCode() == 410) {
                return null;
            }
            if (response.statusCode() != 200) {
                throw new IOException(failure("watch", response.statusCode(), JSON.readTree(lines)));
            }
            String line;
            while (!closed && (line = lines.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode event = JSON.readTree(line);
                JsonNode object = event.path("object");
                String type = event.path("type").asText();
                if (type.equals("ERROR")) {
                    if (object.path("code").asInt() == 410) {
                        return null;
                    }
                    throw new IOException(failure("watch", object.path("code").asInt(), object));
                }
                version = object.path("metadata").path("resourceVersion").asText(version);
                if (type.equals("BOOKMARK") || !name.equals(object.path("metadata").path("name").asText())) {
                    continue;
                }
                if (type.equals("DELETED")) {
                    gone();
                } else {
                    read(object);
                }
            }
            return version;
        } finally {
            stream = null;
        }
    }

    private String failure(String verb, int status, JsonNode body) {
        return "cannot " + verb + " ConfigMap " + namespace + "/" + name + " at " + api.server() + ": HTTP " + status
            + " " + body.path("message").asText(body.toString())
            + (status == 403 ? " (the pod's Role needs get, list and watch on this ConfigMap)" : "");
    }

    /** Nothing published yet is a publication of nothing (generation 0, as the Python client follows);
     * a ConfigMap that was there and is gone is an error the assignor falls back on. */
    private void gone() {
        if (present) {
            LOG.warn("Assignment ConfigMap {}/{} was deleted", namespace, name);
            latest.reject("ConfigMap " + namespace + "/" + name + " was deleted");
        } else if (accessFailed) {
            latest.accept(Publication.NOTHING);  // the API answers at last: the access error no longer holds
        } else {
            latest.acceptIfNone(Publication.NOTHING);
        }
        present = false;
    }

    private void read(JsonNode configMap) {
        present = true;
        read(configMap, latest);
    }

    /** The publication in a ConfigMap (JSON as the API returns it), or its error, into {@code latest}. */
    static void read(JsonNode configMap, LatestPublication latest) {
        JsonNode metadata = configMap.path("metadata");
        String name = metadata.path("name").asText();
        try {
            Publication publication = PublicationCodec.fromConfigMap(strings(configMap.get("data")),
                strings(configMap.get("binaryData")));
            LOG.info("Read generation {} from ConfigMap {} (resourceVersion {})", publication.generation(),
                name, metadata.path("resourceVersion").asText());
            latest.accept(publication);
        } catch (CorruptPublicationException | IllegalArgumentException error) {
            LOG.warn("ConfigMap {} holds no valid publication: {}", name, error.getMessage());
            latest.reject(error.getMessage());
        }
    }

    private static Map<String, String> strings(JsonNode node) {
        return node == null || node.isNull() ? null : JSON.convertValue(node, STRINGS);
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        InputStream open = stream;
        if (open != null) {
            try {
                open.close();
            } catch (IOException error) {
                LOG.debug("Closing the watch stream: {}", error.toString());
            }
        }
    }
}
