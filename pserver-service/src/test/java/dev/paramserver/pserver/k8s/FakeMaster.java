package dev.paramserver.pserver.k8s;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterGrpc;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Stands in for the leader master (no real master is started: pserver-service does not depend on
 * master-service): its gRPC GetStatus names the HTTP address, registered in etcd as {@code
 * master/addr}; {@code POST /admin/job/scale} checks the token and writes {@code ps_desired} (with
 * grow-only never lowering it) and the placement's count at once (no moves); {@code GET
 * /admin/job/scaling} answers {pservers, desired}. The first {@code refusals} scale calls answer
 * 409.
 */
final class FakeMaster implements AutoCloseable {
  static final String TOKEN = "tok";

  final List<String> calls = new CopyOnWriteArrayList<>();
  final AtomicInteger refusals = new AtomicInteger();
  final AtomicInteger pservers = new AtomicInteger(-1); // -1: the map is absent (null)

  /** false: a scale leaves the placement's count as it is (moves that never finish). */
  volatile boolean placementFollows = true;

  private final java.util.concurrent.atomic.AtomicBoolean closed =
      new java.util.concurrent.atomic.AtomicBoolean();
  private final Coordinator coordinator;
  private final HttpServer http;
  private final Server grpc;

  FakeMaster(Coordinator coordinator) throws IOException {
    this.coordinator = coordinator;
    http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    http.createContext("/admin/job/", this::handle);
    http.start();
    String admin = "127.0.0.1:" + http.getAddress().getPort();
    grpc =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(
                new MasterGrpc.MasterImplBase() {
                  @Override
                  public void getStatus(
                      GetStatusRequest request, StreamObserver<JobStatus> response) {
                    response.onNext(JobStatus.newBuilder().setAdminAddress(admin).build());
                    response.onCompleted();
                  }
                })
            .build()
            .start();
  }

  /** Publishes this master as the leader in etcd. */
  FakeMaster lead() {
    coordinator
        .kv()
        .put(
            coordinator.keys().masterAddr(),
            ("127.0.0.1:" + grpc.getPort()).getBytes(StandardCharsets.UTF_8));
    return this;
  }

  int desired() {
    return coordinator
        .kv()
        .get(coordinator.keys().psDesired())
        .map(kv -> Integer.parseInt(kv.valueAsString()))
        .orElse(-1);
  }

  void setDesired(int n) {
    coordinator
        .kv()
        .put(coordinator.keys().psDesired(), Integer.toString(n).getBytes(StandardCharsets.UTF_8));
  }

  private void handle(HttpExchange ex) throws IOException {
    String path = ex.getRequestURI().getPath();
    String query = ex.getRequestURI().getQuery();
    calls.add(ex.getRequestMethod() + " " + path + (query == null ? "" : "?" + query));
    if (!("Bearer " + TOKEN).equals(ex.getRequestHeaders().getFirst("Authorization"))) {
      answer(ex, 401, "{\"error\":\"unauthorized\",\"message\":\"wrong admin token\"}");
    } else if (path.equals("/admin/job/scale") && ex.getRequestMethod().equals("POST")) {
      if (refusals.getAndUpdate(r -> Math.max(0, r - 1)) > 0) {
        answer(ex, 409, "{\"error\":\"pserver 0 is not initialised yet\"}");
        return;
      }
      int n = Integer.parseInt(query.replaceAll(".*pservers=(\\d+).*", "$1"));
      boolean growOnly = query.contains("grow-only=true");
      if (!growOnly || n > desired()) {
        setDesired(n);
        if (placementFollows) {
          pservers.set(n);
        }
      }
      answer(ex, 200, scaling());
    } else if (path.equals("/admin/job/scaling")) {
      answer(ex, 200, scaling());
    } else {
      answer(ex, 404, "{\"error\":\"not found\"}");
    }
  }

  private String scaling() {
    int d = desired();
    int p = pservers.get();
    return "{\"epoch\":1,\"pservers\":"
        + (p < 0 ? "null" : p)
        + ",\"desired\":"
        + (d < 0 ? "null" : d)
        + ",\"phase\":\"idle\",\"move\":null,\"moves\":[]}";
  }

  private static void answer(HttpExchange ex, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    if (closed.getAndSet(true)) {
      return;
    }
    http.stop(0);
    grpc.shutdownNow();
  }
}
