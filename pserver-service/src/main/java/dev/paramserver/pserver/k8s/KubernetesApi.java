package dev.paramserver.pserver.k8s;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The one call the pserver makes to the Kubernetes API: {@code GET
 * /apis/apps/v1/namespaces/<ns>/statefulsets/<name>}, to read the StatefulSet's {@code
 * spec.replicas}. Inside a pod it authenticates with the pod's service-account token (read again
 * for each call: Kubernetes rotates it) and trusts the cluster's CA ({@code ca.crt}); it needs a
 * Role allowing {@code get} on that StatefulSet.
 */
public final class KubernetesApi {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient http;
  private final URI base;
  private final Supplier<String> token;
  private final Duration timeout;

  /**
   * @param http the client (with the cluster's CA for https)
   * @param base the API server, e.g. {@code https://10.96.0.1:443}
   * @param token the bearer token of each call (empty: none is sent)
   */
  public KubernetesApi(HttpClient http, URI base, Supplier<String> token, Duration timeout) {
    this.http = http;
    this.base = URI.create(stripSlash(base.toString()));
    this.token = token;
    this.timeout = timeout;
  }

  /**
   * The client of the API server this pod runs under: {@code apiUrl} or the {@code
   * KUBERNETES_SERVICE_HOST}/{@code _PORT} variables, the service account's token and CA.
   *
   * @throws KubernetesApiException when the API server or the service account is not found
   */
  public static KubernetesApi inCluster(
      String apiUrl, Path serviceAccountDir, Map<String, String> env, Duration timeout) {
    String url = apiUrl;
    if (url == null || url.isBlank()) {
      String host = env.get("KUBERNETES_SERVICE_HOST");
      String port = env.getOrDefault("KUBERNETES_SERVICE_PORT", "443");
      if (host == null || host.isBlank()) {
        throw new KubernetesApiException(
            "KUBERNETES_SERVICE_HOST is not set (not running in a Kubernetes pod?): set"
                + " paramserver.pserver.kubernetes.api-url");
      }
      url = "https://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
    HttpClient.Builder client = HttpClient.newBuilder().connectTimeout(timeout);
    Path ca = serviceAccountDir.resolve("ca.crt");
    if (url.startsWith("https:") && Files.isRegularFile(ca)) {
      client.sslContext(trusting(ca));
    }
    Path tokenFile = serviceAccountDir.resolve("token");
    return new KubernetesApi(client.build(), URI.create(url), () -> readToken(tokenFile), timeout);
  }

  /** The namespace of this pod's service account ({@code <dir>/namespace}). */
  public static String podNamespace(Path serviceAccountDir) {
    Path file = serviceAccountDir.resolve("namespace");
    try {
      return Files.readString(file).trim();
    } catch (IOException e) {
      throw new KubernetesApiException(
          "cannot read the pod's namespace from "
              + file
              + " ("
              + e
              + "): mount the service-account token (automountServiceAccountToken: true) or set"
              + " paramserver.pserver.kubernetes.namespace",
          e);
    }
  }

  /**
   * {@code spec.replicas} of the StatefulSet (1 when the answer leaves it out, as Kubernetes does
   * by default).
   *
   * @throws KubernetesApiException naming the StatefulSet and what went wrong (no answer, refused,
   *     not found, not the expected JSON)
   */
  public int statefulSetReplicas(String namespace, String name) throws InterruptedException {
    String what = "statefulset " + namespace + "/" + name;
    String path = "/apis/apps/v1/namespaces/" + encode(namespace) + "/statefulsets/" + encode(name);
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(base + path))
            .timeout(timeout)
            .header("Accept", "application/json")
            .GET();
    String bearer = token.get();
    if (!bearer.isEmpty()) {
      request.header("Authorization", "Bearer " + bearer);
    }
    HttpResponse<String> r;
    try {
      r = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new KubernetesApiException(
          "cannot read " + what + " from the Kubernetes API at " + base + ": " + e, e);
    }
    int status = r.statusCode();
    if (status == 401 || status == 403) {
      throw new KubernetesApiException(
          "the Kubernetes API refused to read "
              + what
              + " ("
              + status
              + " "
              + reason(r.body())
              + "): the pod's service account needs a Role allowing get on statefulsets/"
              + name
              + " (the chart's pserver.elastic.enabled creates it)");
    }
    if (status == 404) {
      throw new KubernetesApiException(
          what + " does not exist (paramserver.pserver.kubernetes.stateful-set and namespace)");
    }
    if (status / 100 != 2) {
      throw new KubernetesApiException(
          "the Kubernetes API answered " + status + " to GET " + what + ": " + reason(r.body()));
    }
    JsonNode body;
    try {
      body = JSON.readTree(r.body());
    } catch (JacksonException e) {
      throw new KubernetesApiException(
          "the Kubernetes API answered GET " + what + " with something that is not JSON", e);
    }
    JsonNode replicas = body.path("spec").path("replicas");
    if (replicas.isMissingNode() || replicas.isNull()) {
      if (!body.path("spec").isObject()) {
        throw new KubernetesApiException(
            "the Kubernetes API answered GET " + what + " without a spec: " + abbreviate(r.body()));
      }
      return 1;
    }
    if (!replicas.canConvertToInt() || !replicas.isIntegralNumber() || replicas.asInt() < 0) {
      throw new KubernetesApiException(what + " has spec.replicas " + replicas + ", not a count");
    }
    return replicas.asInt();
  }

  private static String reason(String body) {
    try {
      JsonNode status = JSON.readTree(body == null ? "" : body);
      if (status != null && status.path("message").isString()) {
        return status.path("message").asString();
      }
    } catch (JacksonException e) {
      // not a Status object: the raw body says it
    }
    return abbreviate(body);
  }

  private static String readToken(Path file) {
    try {
      return Files.readString(file).trim();
    } catch (NoSuchFileException e) {
      throw new KubernetesApiException(
          "no service-account token at "
              + file
              + ": the pod must mount it (automountServiceAccountToken: true)",
          e);
    } catch (IOException e) {
      throw new KubernetesApiException("cannot read the service-account token " + file, e);
    }
  }

  /** An SSL context trusting the certificates of a PEM file (the cluster's CA). */
  static SSLContext trusting(Path pem) {
    try (InputStream in = Files.newInputStream(pem)) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-" + i++, c);
      }
      if (i == 0) {
        throw new KubernetesApiException("no certificate in " + pem);
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      SSLContext ssl = SSLContext.getInstance("TLS");
      ssl.init(null, tmf.getTrustManagers(), null);
      return ssl;
    } catch (IOException | GeneralSecurityException e) {
      throw new KubernetesApiException("cannot read the cluster's CA from " + pem + ": " + e, e);
    }
  }

  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private static String abbreviate(String s) {
    String one = s == null ? "" : s.replaceAll("\\s+", " ").trim();
    return one.length() > 200 ? one.substring(0, 200) + "..." : one;
  }

  private static String stripSlash(String s) {
    return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
  }

  /** A call to the Kubernetes API that failed; the message names what and why. */
  public static final class KubernetesApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    KubernetesApiException(String message) {
      super(message);
    }

    KubernetesApiException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
