package dev.paramserver.pserver.k8s;

import jakarta.validation.constraints.NotNull;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * A pserver run by a Kubernetes StatefulSet whose replica count is the job's pserver count ({@code
 * paramserver.pserver.kubernetes.*}; the Helm chart sets them with {@code
 * pserver.elastic.enabled}). See docs/deploy.md, "Scaling pservers on Kubernetes".
 *
 * @param growJob a pserver whose {@code paramserver.pserver.index} K is at or above the job's
 *     {@code ps_desired} asks the leader master to grow the job to K+1 pservers ({@code POST
 *     /admin/job/scale?grow-only=true}), so that adding StatefulSet replicas adds pservers
 * @param statefulSet name of the pserver StatefulSet; when set, {@code GET /k8s/pre-stop} (the
 *     container's preStop hook) shrinks the job when the StatefulSet asks for fewer replicas than
 *     this pod's ordinal. Empty (default): no such endpoint
 * @param namespace namespace of the StatefulSet; empty: the pod's own, from the service account's
 *     {@code namespace} file
 * @param apiUrl the Kubernetes API server; empty: the one of the pod's environment, {@code
 *     https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT}
 * @param serviceAccountDir where the pod's service-account {@code token}, {@code ca.crt} and {@code
 *     namespace} are mounted
 * @param growTimeout how long a pserver keeps asking the master to grow the job before it gives up
 *     (logged; registration keeps waiting for a free index)
 * @param preStopTimeout the longest the preStop hook waits for this pserver to be emptied (keep it
 *     under the pod's {@code terminationGracePeriodSeconds}, leaving the time the pserver needs to
 *     drain and write its last checkpoint after SIGTERM)
 * @param shutdownWait once the placement no longer gives this pserver anything, how long the hook
 *     still waits for the master's {@code POST /admin/shutdown} (which also forgets the index's
 *     checkpoint key) before it lets Kubernetes stop the pod
 * @param callTimeout the timeout of each call to the master and to the Kubernetes API
 */
@Validated
@ConfigurationProperties("paramserver.pserver.kubernetes")
public record KubernetesProperties(
    @DefaultValue("false") boolean growJob,
    @DefaultValue("") @NotNull String statefulSet,
    @DefaultValue("") @NotNull String namespace,
    @DefaultValue("") @NotNull String apiUrl,
    @DefaultValue("/var/run/secrets/kubernetes.io/serviceaccount") @NotNull Path serviceAccountDir,
    @DefaultValue("10m") @NotNull Duration growTimeout,
    @DefaultValue("540s") @NotNull Duration preStopTimeout,
    @DefaultValue("30s") @NotNull Duration shutdownWait,
    @DefaultValue("10s") @NotNull Duration callTimeout) {}
