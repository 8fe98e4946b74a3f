package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docker-compose.yml, deploy/prometheus.yml and the Dockerfile agree with the services. */
class ComposeConsistencyTest {
  private static final String LIVENESS = "/actuator/health/liveness";

  private final Map<String, Object> compose = RepoFiles.yaml("docker-compose.yml");

  /** The paramserver services of the compose file, by name, with their role. */
  private Map<String, ServiceRole> paramserverServices() {
    Map<String, ServiceRole> out = new LinkedHashMap<>();
    services()
        .forEach(
            (name, svc) -> {
              ServiceRole role = ServiceRole.ofImage((String) svc.get("image"));
              if (role != null) {
                out.put(name, role);
              }
            });
    return out;
  }

  @SuppressWarnings("unchecked")
  private Map<String, Map<String, Object>> services() {
    return (Map<String, Map<String, Object>>) compose.get("services");
  }

  @SuppressWarnings("unchecked")
  private Map<String, String> environment(String service) {
    Object env = services().get(service).get("environment");
    Map<String, String> out = new LinkedHashMap<>();
    if (env instanceof Map<?, ?> m) {
      m.forEach((k, v) -> out.put(k.toString(), String.valueOf(v)));
    } else if (env instanceof List<?> l) {
      for (Object o : l) {
        String[] kv = o.toString().split("=", 2);
        out.put(kv[0], kv.length > 1 ? kv[1] : "");
      }
    }
    return out;
  }

  /** The HTTP port a compose service listens on: SERVER_PORT if set, else the packaged default. */
  private int httpPort(String service, ServiceRole role) {
    String set = environment(service).get("SERVER_PORT");
    return set != null ? Integer.parseInt(set) : role.httpPort();
  }

  @Test
  void composeRunsTwoMastersTwoPserversTwoTrainersAndAServingReplica() {
    Map<ServiceRole, Integer> counts = new LinkedHashMap<>();
    paramserverServices().values().forEach(r -> counts.merge(r, 1, Integer::sum));
    assertThat(counts)
        .containsEntry(ServiceRole.MASTER, 2)
        .containsEntry(ServiceRole.PSERVER, 2)
        .containsEntry(ServiceRole.TRAINER, 2)
        .containsEntry(ServiceRole.SERVING, 1);
  }

  @Test
  void everyParamserverEnvironmentVariable_bindsAPropertyOfItsService() {
    List<String> unknown = new ArrayList<>();
    paramserverServices()
        .forEach(
            (name, role) -> {
              for (String variable : environment(name).keySet()) {
                if (variable.startsWith("PARAMSERVER_") && !role.bindsEnv(variable)) {
                  unknown.add(name + ": " + variable);
                }
              }
            });
    assertThat(unknown)
        .as("environment variables that bind no @ConfigurationProperties component")
        .isEmpty();
  }

  @Test
  void everyService_getsEtcdEndpointsJobAdminTokenAndItsOwnAdvertiseHost() {
    paramserverServices()
        .forEach(
            (name, role) -> {
              Map<String, String> env = environment(name);
              assertThat(env)
                  .as(name)
                  .containsKeys(
                      "PARAMSERVER_ETCD_ENDPOINTS", "PARAMSERVER_JOB", "PARAMSERVER_ADMIN_TOKEN");
              assertThat(env.get("PARAMSERVER_ADVERTISE_HOST"))
                  .as(name + " advertise host")
                  .isEqualTo(name);
              assertThat(env.get("PARAMSERVER_ETCD_ENDPOINTS"))
                  .as(name)
                  .isEqualTo("http://etcd:2379");
            });
  }

  @Test
  @SuppressWarnings("unchecked")
  void healthchecks_probeActuatorLivenessOnTheServicePort() {
    paramserverServices()
        .forEach(
            (name, role) -> {
              Map<String, Object> hc =
                  (Map<String, Object>) services().get(name).get("healthcheck");
              assertThat(hc).as(name + " healthcheck").isNotNull();
              String test = String.join(" ", (List<String>) hc.get("test"));
              assertThat(test)
                  .as(name + " healthcheck")
                  .contains("http://127.0.0.1:" + httpPort(name, role) + LIVENESS);
            });
  }

  @Test
  @SuppressWarnings("unchecked")
  void trainers_waitForPserverLivenessNotReadiness_andForTheDemoData() {
    paramserverServices()
        .forEach(
            (name, role) -> {
              if (role != ServiceRole.TRAINER) {
                return;
              }
              Map<String, Map<String, String>> deps =
                  (Map<String, Map<String, String>>) services().get(name).get("depends_on");
              assertThat(deps).as(name).containsKey("demo-data");
              assertThat(deps.get("demo-data").get("condition"))
                  .isEqualTo("service_completed_successfully");
              paramserverServices()
                  .forEach(
                      (other, otherRole) -> {
                        if (otherRole == ServiceRole.PSERVER) {
                          assertThat(deps).as(name + " depends on " + other).containsKey(other);
                          // service_healthy is the container healthcheck, which is liveness
                          // (checked above):
                          // readiness would deadlock, the trainers are the ones that initialise the
                          // pservers
                          assertThat(deps.get(other).get("condition")).isEqualTo("service_healthy");
                        }
                      });
            });
  }

  @Test
  @SuppressWarnings("unchecked")
  void publishedPorts_targetTheServiceHttpPort_orTheServingReplicasGrpcPort() {
    paramserverServices()
        .forEach(
            (name, role) -> {
              List<Object> ports =
                  (List<Object>) services().get(name).getOrDefault("ports", List.of());
              for (Object p : ports) {
                String[] parts = p.toString().split(":");
                int target = Integer.parseInt(parts[parts.length - 1]);
                if (role == ServiceRole.SERVING && target == role.grpcPort().orElseThrow()) {
                  // clients on the host call the serving replica's gRPC Lookup
                  continue;
                }
                assertThat(target)
                    .as(name + " published port " + p)
                    .isEqualTo(httpPort(name, role));
              }
            });
  }

  @Test
  @SuppressWarnings("unchecked")
  void prometheus_scrapesEveryServiceOnItsActuatorPrometheusEndpoint() {
    Map<String, Object> prometheus = RepoFiles.yaml("deploy/prometheus.yml");
    Set<String> scraped = new TreeSet<>();
    for (Map<String, Object> job : (List<Map<String, Object>>) prometheus.get("scrape_configs")) {
      for (Map<String, Object> sc : (List<Map<String, Object>>) job.get("static_configs")) {
        for (String target : (List<String>) sc.get("targets")) {
          String host = target.substring(0, target.indexOf(':'));
          ServiceRole role = paramserverServices().get(host);
          if (role != null) {
            assertThat(job.get("metrics_path")).as(target).isEqualTo("/actuator/prometheus");
            assertThat(target).isEqualTo(host + ":" + httpPort(host, role));
            scraped.add(host);
          }
        }
      }
    }
    assertThat(scraped).containsExactlyInAnyOrderElementsOf(paramserverServices().keySet());
  }

  @Test
  void dockerfileHealthcheck_usesLivenessAndEachServicesDefaultHttpPort() {
    String dockerfile = RepoFiles.read("docker/Dockerfile");
    assertThat(dockerfile).contains("HEALTHCHECK").contains(LIVENESS);
    Matcher m = Pattern.compile("([a-z-]+)\\) echo (\\d+) ;;").matcher(dockerfile);
    Map<String, Integer> ports = new LinkedHashMap<>();
    while (m.find()) {
      ports.put(m.group(1), Integer.parseInt(m.group(2)));
    }
    for (ServiceRole role : ServiceRole.values()) {
      assertThat(ports)
          .as("Dockerfile default HTTP port of " + role.module)
          .containsEntry(role.module, role.httpPort());
    }
  }
}
