package io.smoothscale.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * How this pod reaches the Kubernetes API for its one ConfigMap watch, with the JDK's own HTTP client (no
 * Kubernetes client library on the app's classpath): the API server's URL, the CA it trusts, and the bearer
 * token it sends. In a pod that is the service account Kubernetes mounts ({@code KUBERNETES_SERVICE_HOST},
 * {@code /var/run/secrets/kubernetes.io/serviceaccount/token} and {@code ca.crt}); the token file is read again
 * for every request, since projected tokens are rotated. Outside a cluster (tests, the sandbox) a kubeconfig
 * written as JSON (what {@code kubectl config view --raw -o json} prints) names the same three things.
 */
final class KubernetesAccess {
    static final Path SERVICE_ACCOUNT = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final URI server;
    private final Optional<String> token;
    private final Optional<Path> tokenFile;
    private final HttpClient client;

    private KubernetesAccess(URI server, Optional<String> token, Optional<Path> tokenFile, SSLContext tls) {
        this.server = server;
        this.token = token;
        this.tokenFile = tokenFile;
        HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1);
        if (tls != null) {
            builder.sslContext(tls);
        }
        this.client = builder.build();
    }

    /** The pod's service account, from the environment and files Kubernetes gives every pod. */
    static KubernetesAccess inCluster(Map<String, String> env, Path serviceAccount) {
        String host = env.get("KUBERNETES_SERVICE_HOST");
        String port = env.getOrDefault("KUBERNETES_SERVICE_PORT", "443");
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("KUBERNETES_SERVICE_HOST is not set: outside a pod, set "
                + BridgeSettings.KUBECONFIG + " (or " + BridgeSettings.envName(BridgeSettings.KUBECONFIG)
                + ") to a kubeconfig written as JSON");
        }
        String authority = host.contains(":") ? "[" + host + "]" : host;
        return new KubernetesAccess(URI.create("https://" + authority + ":" + port.strip()), Optional.empty(),
            Optional.of(serviceAccount.resolve("token")), trusting(read(serviceAccount.resolve("ca.crt"))));
    }

    /** The current context of a kubeconfig written as JSON: its cluster's server and CA, its user's token. */
    static KubernetesAccess fromKubeconfig(Path path) {
        JsonNode config;
        try {
            config = JSON.readTree(read(path));
        } catch (IOException error) {
            throw new IllegalArgumentException("kubeconfig " + path + " is not JSON (" + error.getMessage()
                + "): write it with `kubectl config view --raw --minify -o json`", error);
        }
        String current = config.path("current-context").asText("");
        JsonNode context = named(config, "contexts", current, path).path("context");
        JsonNode cluster = named(config, "clusters", context.path("cluster").asText(""), path).path("cluster");
        JsonNode user = named(config, "users", context.path("user").asText(""), path).path("user");
        if (user.has("client-certificate") || user.has("client-certificate-data")) {
            throw new IllegalArgumentException("kubeconfig " + path + ": user '" + context.path("user").asText()
                + "' logs in with a client certificate; the bridge sends a bearer token (token or tokenFile)");
        }
        URI server = URI.create(cluster.path("server").asText(""));
        SSLContext tls = null;
        if (cluster.hasNonNull("certificate-authority-data")) {
            tls = trusting(Base64.getDecoder().decode(cluster.get("certificate-authority-data").asText()));
        } else if (cluster.hasNonNull("certificate-authority")) {
            tls = trusting(read(path.resolveSibling(cluster.get("certificate-authority").asText())));
        }
        Optional<String> token = Optional.ofNullable(user.path("token").textValue());
        Optional<Path> tokenFile = Optional.ofNullable(user.path("tokenFile").textValue()).map(path::resolveSibling);
        return new KubernetesAccess(server, token, tokenFile, tls);
    }

    private static JsonNode named(JsonNode config, String list, String name, Path path) {
        for (JsonNode entry : config.path(list)) {
            if (name.equals(entry.path("name").asText())) {
                return entry;
            }
        }
        throw new IllegalArgumentException("kubeconfig " + path + " has no entry '" + name + "' in " + list);
    }

    /** A GET of {@code pathAndQuery} (e.g. {@code /api/v1/namespaces/x/configmaps?...}) with the bearer token. */
    HttpRequest get(String pathAndQuery, Duration timeout) {
        HttpRequest.Builder request = HttpRequest.newBuilder(server.resolve(pathAndQuery)).timeout(timeout)
            .header("Accept", "application/json").GET();
        bearer().ifPresent(value -> request.header("Authorization", "Bearer " + value));
        return request.build();
    }

    HttpClient client() {
        return client;
    }

    URI server() {
        return server;
    }

    private Optional<String> bearer() {
        if (tokenFile.isPresent()) {
            return Optional.of(new String(read(tokenFile.get()), StandardCharsets.UTF_8).strip());
        }
        return token;
    }

    private static byte[] read(Path path) {
        try {
            return Files.readAllBytes(path);
        } catch (IOException error) {
            throw new UncheckedIOException("cannot read " + path, error);
        }
    }

    /** A TLS context that trusts exactly the PEM certificates given (the cluster's CA). */
    private static SSLContext trusting(byte[] pem) {
        try (InputStream in = new ByteArrayInputStream(pem)) {
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            int index = 0;
            for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("ca-" + index++, certificate);
            }
            if (index == 0) {
                throw new IllegalArgumentException("the cluster's CA holds no PEM certificate");
            }
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException | IOException error) {
            throw new IllegalArgumentException("cannot trust the cluster's CA: " + error.getMessage(), error);
        }
    }
}
