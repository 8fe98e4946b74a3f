package dev.paramserver.pserver.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.paramserver.pserver.k8s.KubernetesApi.KubernetesApiException;
import dev.paramserver.testsupport.SelfSignedCertificates;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Kubernetes API client against a local server standing in for the API server. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class KubernetesApiTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(5);
  private static final String PATH =
      "/apis/apps/v1/namespaces/ml/statefulsets/ps-paramserver-pserver";

  private final List<String> seen = new CopyOnWriteArrayList<>();
  private volatile int status = 200;
  private volatile String body = "";
  private HttpServer server;
  private Path dir;

  @BeforeEach
  void setUp() {
    dir = TempDirs.create("k8s-sa");
  }

  @AfterEach
  void tearDown() {
    if (server != null) {
      server.stop(0);
    }
    TempDirs.deleteRecursively(dir);
  }

  private void handle(HttpExchange ex) throws IOException {
    seen.add(
        ex.getRequestMethod()
            + " "
            + ex.getRequestURI().getPath()
            + " "
            + ex.getRequestHeaders().getFirst("Authorization"));
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }

  private KubernetesApi plainApi() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", this::handle);
    server.start();
    return new KubernetesApi(
        HttpClient.newHttpClient(),
        URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/"),
        () -> "sa-token",
        TIMEOUT);
  }

  @Test
  void readsSpecReplicas_sendingTheServiceAccountToken() throws Exception {
    KubernetesApi api = plainApi();
    body = "{\"kind\":\"StatefulSet\",\"spec\":{\"replicas\":3},\"status\":{\"replicas\":4}}";

    assertThat(api.statefulSetReplicas("ml", "ps-paramserver-pserver")).isEqualTo(3);
    assertThat(seen).containsExactly("GET " + PATH + " Bearer sa-token");
  }

  @Test
  void specWithoutReplicas_isOne_zeroIsZero() throws Exception {
    KubernetesApi api = plainApi();
    body = "{\"spec\":{\"serviceName\":\"x\"}}";
    assertThat(api.statefulSetReplicas("ml", "ps-paramserver-pserver")).isEqualTo(1);
    body = "{\"spec\":{\"replicas\":0}}";
    assertThat(api.statefulSetReplicas("ml", "ps-paramserver-pserver")).isZero();
  }

  @Test
  void aRefusal_namesTheStatefulSetAndTheRoleItNeeds() throws Exception {
    KubernetesApi api = plainApi();
    status = 403;
    body =
        "{\"kind\":\"Status\",\"message\":\"statefulsets.apps \\\"ps-paramserver-pserver\\\" is"
            + " forbidden: User \\\"system:serviceaccount:ml:default\\\" cannot get\"}";

    assertThatThrownBy(() -> api.statefulSetReplicas("ml", "ps-paramserver-pserver"))
        .isInstanceOf(KubernetesApiException.class)
        .hasMessageContaining("refused to read statefulset ml/ps-paramserver-pserver (403")
        .hasMessageContaining("cannot get")
        .hasMessageContaining("Role allowing get on statefulsets/ps-paramserver-pserver");
  }

  @Test
  void notFound_unexpectedAnswers_andNoServer_areNamed() throws Exception {
    KubernetesApi api = plainApi();
    status = 404;
    body = "{\"kind\":\"Status\",\"message\":\"not found\"}";
    assertThatThrownBy(() -> api.statefulSetReplicas("ml", "ps-paramserver-pserver"))
        .hasMessageContaining("statefulset ml/ps-paramserver-pserver does not exist");
    status = 200;
    body = "<html>proxy</html>";
    assertThatThrownBy(() -> api.statefulSetReplicas("ml", "ps-paramserver-pserver"))
        .hasMessageContaining("not JSON");
    body = "{\"spec\":{\"replicas\":\"three\"}}";
    assertThatThrownBy(() -> api.statefulSetReplicas("ml", "ps-paramserver-pserver"))
        .hasMessageContaining("has spec.replicas \"three\", not a count");
    status = 500;
    body = "etcdserver: request timed out";
    assertThatThrownBy(() -> api.statefulSetReplicas("ml", "ps-paramserver-pserver"))
        .hasMessageContaining("answered 500")
        .hasMessageContaining("request timed out");

    int port = server.getAddress().getPort();
    server.stop(0);
    server = null;
    KubernetesApi gone =
        new KubernetesApi(
            HttpClient.newHttpClient(), URI.create("http://127.0.0.1:" + port), () -> "", TIMEOUT);
    assertThatThrownBy(() -> gone.statefulSetReplicas("ml", "ps-paramserver-pserver"))
        .isInstanceOf(KubernetesApiException.class)
        .hasMessageContaining("cannot read statefulset ml/ps-paramserver-pserver")
        .hasMessageContaining("http://127.0.0.1:" + port);
  }

  @Test
  void inCluster_withoutTheServiceAccount_saysWhatToMount() throws Exception {
    assertThatThrownBy(() -> KubernetesApi.inCluster("", dir, Map.of(), TIMEOUT))
        .hasMessageContaining("KUBERNETES_SERVICE_HOST is not set");
    assertThatThrownBy(() -> KubernetesApi.podNamespace(dir))
        .hasMessageContaining(dir.resolve("namespace").toString())
        .hasMessageContaining("automountServiceAccountToken");

    KubernetesApi api =
        KubernetesApi.inCluster(
            "",
            dir,
            Map.of("KUBERNETES_SERVICE_HOST", "127.0.0.1", "KUBERNETES_SERVICE_PORT", "1"),
            TIMEOUT);
    assertThatThrownBy(() -> api.statefulSetReplicas("ml", "x"))
        .hasMessageContaining("no service-account token at " + dir.resolve("token"));
  }

  /** The in-cluster client over https: trusts ca.crt, reads the token file on each call. */
  @Test
  void inCluster_overHttps_trustsTheClustersCa_andReadsTheTokenEachCall() throws Exception {
    char[] pass = SelfSignedCertificates.PASSWORD.toCharArray();
    // the API server's certificate is its own CA: ca.crt, as a pod finds it
    KeyStore ks = SelfSignedCertificates.make(dir, "ca", "CN=kubernetes");
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, pass);
    SSLContext ssl = SSLContext.getInstance("TLS");
    ssl.init(kmf.getKeyManagers(), null, null);
    HttpsServer https = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    https.setHttpsConfigurator(new HttpsConfigurator(ssl));
    https.createContext("/", this::handle);
    https.start();
    server = https;
    Files.writeString(dir.resolve("token"), "first\n");
    Files.writeString(dir.resolve("namespace"), "ml\n");
    body = "{\"spec\":{\"replicas\":2}}";

    KubernetesApi api =
        KubernetesApi.inCluster(
            "",
            dir,
            Map.of(
                "KUBERNETES_SERVICE_HOST",
                "127.0.0.1",
                "KUBERNETES_SERVICE_PORT",
                Integer.toString(https.getAddress().getPort())),
            TIMEOUT);
    String ns = KubernetesApi.podNamespace(dir);
    assertThat(api.statefulSetReplicas(ns, "ps-paramserver-pserver")).isEqualTo(2);
    Files.writeString(dir.resolve("token"), "rotated\n");
    assertThat(api.statefulSetReplicas(ns, "ps-paramserver-pserver")).isEqualTo(2);

    assertThat(seen)
        .containsExactly("GET " + PATH + " Bearer first", "GET " + PATH + " Bearer rotated");
  }
}
