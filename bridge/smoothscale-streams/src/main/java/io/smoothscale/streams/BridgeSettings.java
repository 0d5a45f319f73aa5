package io.smoothscale.streams;

import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The bridge's own settings, each a {@code smoothscale.*} property of the app's Streams configuration (what
 * Spring Boot's or Quarkus' {@code application.properties} can set) or else the environment variable the
 * operator gives every pod. A property the app set wins over the variable.
 *
 * @param pod this pod's name (the operator's client id for it): {@code smoothscale.pod} / {@code SMOOTHSCALE_POD_NAME}
 * @param namespace the app's namespace: {@code smoothscale.namespace} / {@code SMOOTHSCALE_NAMESPACE}
 * @param configMap the assignment ConfigMap: {@code smoothscale.assignment.configmap} /
 *     {@code SMOOTHSCALE_ASSIGNMENT_CONFIGMAP}, else {@code <smoothscale.app>-assignment}
 * @param metricsHost the address the metrics endpoint binds: {@code smoothscale.metrics.host}, default 0.0.0.0
 * @param metricsPort the metrics endpoint's port: {@code smoothscale.metrics.port}, default
 *     {@value #DEFAULT_METRICS_PORT} (0: any free port)
 * @param kubeconfig a JSON kubeconfig to reach the API with instead of the pod's service account:
 *     {@code smoothscale.kubeconfig}
 * @param micrometer whether the metrics go to the app's Micrometer registry when it serves Prometheus through
 *     one (then the bridge opens no port): {@code smoothscale.metrics.micrometer}, default true; false keeps
 *     the bridge's own endpoint
 */
public record BridgeSettings(String pod, String namespace, String configMap, String metricsHost, int metricsPort,
                             Optional<Path> kubeconfig, boolean micrometer) {
    public static final String POD = "smoothscale.pod";
    public static final String NAMESPACE = "smoothscale.namespace";
    public static final String APP = "smoothscale.app";
    public static final String ASSIGNMENT_CONFIGMAP = "smoothscale.assignment.configmap";
    public static final String METRICS_HOST = "smoothscale.metrics.host";
    public static final String METRICS_PORT = "smoothscale.metrics.port";
    public static final String KUBECONFIG = "smoothscale.kubeconfig";
    public static final String METRICS_MICROMETER = "smoothscale.metrics.micrometer";
    /**
     * The metrics endpoint's port unless set: none of the usual defaults (8080 of Spring Boot, Quarkus and
     * Micronaut, 9000 of Quarkus' management interface, 9090 of Prometheus, 9404 of the JMX exporter that Kafka
     * deployments often run, 9464 of OpenTelemetry's Prometheus exporter).
     */
    public static final int DEFAULT_METRICS_PORT = 9494;

    /** The settings in the app's properties {@code app}, else in the environment {@code env}. */
    public static BridgeSettings of(Map<?, ?> app, Map<String, String> env) {
        String pod = required(app, env, POD);
        String namespace = required(app, env, NAMESPACE);
        Optional<String> configMap = value(app, env, ASSIGNMENT_CONFIGMAP);
        String port = value(app, env, METRICS_PORT).orElse(Integer.toString(DEFAULT_METRICS_PORT));
        int metricsPort;
        try {
            metricsPort = Integer.parseInt(port);
        } catch (NumberFormatException error) {
            metricsPort = -1;
        }
        if (metricsPort < 0 || metricsPort > 65535) {
            throw new IllegalArgumentException(METRICS_PORT + " (" + envName(METRICS_PORT) + ") must be a port number"
                + " from 0 to 65535, got '" + port + "'");
        }
        String micrometer = value(app, env, METRICS_MICROMETER).orElse("true").toLowerCase(Locale.ROOT);
        if (!micrometer.equals("true") && !micrometer.equals("false")) {
            throw new IllegalArgumentException(METRICS_MICROMETER + " (" + envName(METRICS_MICROMETER) + ") must be"
                + " true (the app's Micrometer registry serves the metrics when it has a Prometheus one) or false (the"
                + " bridge's own endpoint on " + METRICS_PORT + "), got '" + micrometer + "'");
        }
        return new BridgeSettings(pod, namespace,
            configMap.orElseGet(() -> required(app, env, APP) + "-assignment"),
            value(app, env, METRICS_HOST).orElse("0.0.0.0"), metricsPort,
            value(app, env, KUBECONFIG).map(Path::of), Boolean.parseBoolean(micrometer));
    }

    /** The environment variable that stands in for a property: {@code SMOOTHSCALE_<NAME>}, the pod's name
     * being {@code SMOOTHSCALE_POD_NAME} as the operator sets it. */
    public static String envName(String property) {
        return property.equals(POD) ? "SMOOTHSCALE_POD_NAME"
            : property.toUpperCase(Locale.ROOT).replace('.', '_');
    }

    private static Optional<String> value(Map<?, ?> app, Map<String, String> env, String property) {
        Object set = app.get(property);
        String value = set != null ? set.toString() : env.get(envName(property));
        return Optional.ofNullable(value).map(String::strip).filter(text -> !text.isEmpty());
    }

    private static String required(Map<?, ?> app, Map<String, String> env, String property) {
        return value(app, env, property).orElseThrow(() -> new IllegalArgumentException(property + " is not set (nor "
            + envName(property) + "): the operator sets " + envName(property) + " in every pod it creates; outside"
            + " the operator set the property in the app's Streams configuration"));
    }
}
