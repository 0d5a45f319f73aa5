package io.smoothscale.streams;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the app's assignment ConfigMap through the Kubernetes API and feeds every version into
 * {@link LatestPublication}. A watch sees a new generation as soon as the API server has it; a mounted
 * ConfigMap volume would see it only when the kubelet next syncs the volume, about a minute later.
 *
 * <p>fabric8's informer lists and watches with a {@code metadata.name} field selector, so the pod's Role
 * needs only {@code get}, {@code list} and {@code watch} on {@code configmaps} restricted by
 * {@code resourceNames} to this one ConfigMap; it re-lists and re-watches by itself after a dropped
 * connection or an expired resourceVersion. Events for any other object are ignored, in case an API server
 * does not honour the field selector.
 */
public final class PublicationWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PublicationWatch.class);

    private final SharedIndexInformer<ConfigMap> informer;

    public PublicationWatch(KubernetesClient client, String namespace, String name, LatestPublication latest) {
        informer = client.configMaps().inNamespace(namespace).withName(name).runnableInformer(0);
        informer.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(ConfigMap configMap) {
                if (name.equals(configMap.getMetadata().getName())) {
                    read(configMap, latest);
                }
            }

            @Override
            public void onUpdate(ConfigMap before, ConfigMap after) {
                if (name.equals(after.getMetadata().getName())) {
                    read(after, latest);
                }
            }

            @Override
            public void onDelete(ConfigMap configMap, boolean finalStateUnknown) {
                LOG.warn("Assignment ConfigMap {}/{} was deleted", namespace, name);
                latest.reject("ConfigMap " + namespace + "/" + name + " was deleted");
            }
        });
        // Not waited for: an API server that is slow or away must not keep the app from processing. Until
        // the first publication arrives, rebalances fall back to Kafka's own assignment.
        informer.start().whenComplete((started, error) -> {
            if (error != null) {
                LOG.warn("Cannot watch ConfigMap {}/{} yet (the informer keeps retrying): {}", namespace, name,
                    error.toString());
            } else if (informer.getStore().list().isEmpty()) {
                // Read, and nothing is published yet: the pod follows "nothing" (generation 0), as the
                // Python client does, so that the operator, which plans for pods that follow, plans for it.
                latest.acceptIfNone(Publication.NOTHING);
            }
        });
    }

    static void read(ConfigMap configMap, LatestPublication latest) {
        try {
            Publication publication = PublicationCodec.fromConfigMap(configMap.getData(), configMap.getBinaryData());
            LOG.info("Read generation {} from ConfigMap {} (resourceVersion {})", publication.generation(),
                configMap.getMetadata().getName(), configMap.getMetadata().getResourceVersion());
            latest.accept(publication);
        } catch (CorruptPublicationException error) {
            LOG.warn("ConfigMap {} holds no valid publication: {}", configMap.getMetadata().getName(),
                error.getMessage());
            latest.reject(error.getMessage());
        }
    }

    @Override
    public void close() {
        informer.close();
    }
}
