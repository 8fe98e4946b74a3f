package dev.paramserver.serving.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.ServingReplicaRecord;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PredictRequest;
import dev.paramserver.proto.v1.PredictResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.Channels;
import dev.paramserver.serving.ServingApplication;
import dev.paramserver.serving.replica.ServedModel;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FreePorts;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * {@code POST /v1/lookup}, {@code POST /v1/pull} and {@code POST /v1/predict} on the whole serving
 * app (real etcd, real HTTP and gRPC servers on loopback ports): the same values as the gRPC
 * Lookup, and the same errors as 400/503 answers naming the problem. The replica's one shard is
 * installed from a shard built in the test (no pserver runs: the replica finds no primary to follow
 * and keeps what it holds).
 */
class ServingRestTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private static final int WIDTH = 4;

  /**
   * The model Predict answers with: sparse-lr, 3 dense features, embedding width {@link #WIDTH}.
   */
  private static final ModelSpec PREDICTED =
      new ModelSpec("sparse-lr", 3, 2, List.of(), Mlp.Activation.RELU, WIDTH);

  private static final OptimizerConfig SGD =
      OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(0.5f).build();

  private static ConfigurableApplicationContext ctx;
  private static EtcdCoordinator coordinator;
  private static int grpcPort;

  @BeforeAll
  static void start() {
    String job = etcd.uniqueJob();
    // generous etcd call timeouts (here and in the app): the machine running the tests may be
    // loaded
    coordinator =
        EtcdCoordinator.connect(
            new EtcdSettings(
                List.of(etcd.endpoint()), job, Duration.ofSeconds(30), null, null, null));
    coordinator.kv().put(coordinator.keys().psDesired(), "1".getBytes(StandardCharsets.UTF_8));
    grpcPort = FreePorts.next();
    ctx =
        new SpringApplicationBuilder(ServingApplication.class)
            .run(
                "--server.port=0",
                "--server.address=127.0.0.1",
                "--spring.grpc.server.port=" + grpcPort,
                "--spring.grpc.server.address=127.0.0.1",
                "--paramserver.etcd.endpoints=" + etcd.endpoint(),
                "--paramserver.etcd.call-timeout=30s",
                "--paramserver.job=" + job,
                "--paramserver.serving.max-ids=10",
                "--paramserver.serving.max-examples=4",
                "--paramserver.serving.min-version-wait=100ms");
  }

  @AfterAll
  static void stop() {
    if (ctx != null) {
      ctx.close();
    }
    if (coordinator != null) {
      coordinator.close();
    }
  }

  /** Installs a shard holding sparse "emb" (rows 3 and 4 pushed) and dense "w" (2 x 3). */
  private static void install() {
    ParameterShard primary = new ParameterShard(true);
    primary.init(
        InitParametersRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId("i1")
            .addParameters(
                ParameterSpec.newBuilder()
                    .setName("emb")
                    .addShape(1000)
                    .addShape(WIDTH)
                    .setDtype(DataType.FLOAT32)
                    .setSparse(true)
                    .setInitStddev(0.1f)
                    .setOptimizer(SGD))
            .addParameters(
                ParameterSpec.newBuilder()
                    .setName("w")
                    .addShape(2)
                    .addShape(3)
                    .setDtype(DataType.FLOAT32)
                    .setInitStddev(0.1f)
                    .setOptimizer(SGD))
            // the rest of the sparse-lr model PREDICTED describes (its "emb" is the one above)
            .addAllParameters(
                ModelFactory.create(PREDICTED).parameters().stream()
                    .filter(d -> !d.name().equals("emb"))
                    .map(
                        d ->
                            ParameterSpec.newBuilder()
                                .setName(d.name())
                                .addAllShape(
                                    d.sparse() ? List.of(1000L, d.shape().get(1)) : d.shape())
                                .setDtype(DataType.FLOAT32)
                                .setSparse(d.sparse())
                                .setInitStddev(0.1f)
                                .setOptimizer(SGD)
                                .build())
                    .toList())
            .build());
    primary.finishInit(FinishInitRequest.newBuilder().setTrainerId("t0").setInitId("i1").build());
    primary.push(
        PushGradientsRequest.newBuilder()
            .setTrainerId("t0")
            .addSparseGradients(
                SparseRows.newBuilder()
                    .setName("emb")
                    .addRowIds(3)
                    .addRowIds(4)
                    .setDtype(DataType.FLOAT32)
                    .setData(TensorCodec.encode(new float[] {1, 2, 3, 4, -1, -2, -3, -4})))
            .build());
    ctx.getBean(ServedModel.class).install(0, 7, primary.snapshot());
  }

  private static HttpResponse<String> post(String path, String body) throws Exception {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode expectError(String path, String body, int status, String reason)
      throws Exception {
    HttpResponse<String> r = post(path, body);
    assertThat(r.statusCode()).as("%s %s -> %s", path, body, r.body()).isEqualTo(status);
    JsonNode error = JSON.readTree(r.body());
    assertThat(error.get("error").asString()).isEqualTo(reason);
    assertThat(r.body()).doesNotContain("Exception").doesNotContain("\tat ");
    return error;
  }

  @Test
  void lookupPullAndPredict_answerTheGrpcValues_andBadRequestsGet400NamingTheProblem()
      throws Exception {
    // nothing served yet: 503, retry
    assertThat(
            expectError("/v1/lookup", "{\"table\":\"emb\",\"ids\":[1]}", 503, "NOT_INITIALIZED")
                .get("message")
                .asString())
        .contains("no copy of some shard yet");
    install();

    // the replica registered itself in etcd: its gRPC address and the version it serves
    String key = coordinator.keys().serving(ctx.getBean(ServedModel.class).replica());
    Poll.until(
        Duration.ofSeconds(30),
        () ->
            coordinator
                .kv()
                .get(key)
                .map(kv -> ServingReplicaRecord.decode(kv.value()).version() == 1)
                .orElse(false),
        "the replica's registration at version 1");
    ServingReplicaRecord registered =
        ServingReplicaRecord.decode(coordinator.kv().get(key).orElseThrow().value());
    assertThat(registered.address()).isEqualTo("127.0.0.1:" + grpcPort);
    assertThat(registered.state()).isEqualTo("SERVING");
    assertThat(registered.sequences()).containsExactly(1L);

    HttpResponse<String> ok =
        post("/v1/lookup", "{\"table\":\"emb\",\"ids\":[3,500,4],\"width\":4}");
    assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
    JsonNode rows = JSON.readTree(ok.body());
    assertThat(rows.get("width").asInt()).isEqualTo(WIDTH);
    assertThat(rows.get("defaulted").toString()).isEqualTo("[1]");
    assertThat(rows.at("/version/number").asLong()).isEqualTo(1);
    assertThat(rows.at("/version/shards/0/sequence").asLong()).isEqualTo(1);
    ManagedChannel channel = Channels.forAddress("127.0.0.1:" + grpcPort);
    try {
      LookupResponse grpc =
          ServingGrpc.newBlockingStub(channel)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .lookup(
                  LookupRequest.newBuilder()
                      .setTable("emb")
                      .addIds(3)
                      .addIds(500)
                      .addIds(4)
                      .build());
      FloatBuffer values =
          grpc.getValues().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < WIDTH; j++) {
          assertThat((float) rows.at("/rows/" + i + "/" + j).asDouble())
              .as("row %d value %d", i, j)
              .isEqualTo(values.get(i * WIDTH + j));
        }
      }
      assertThat(grpc.getVersion().getReplica()).isEqualTo(rows.at("/version/replica").asString());
    } finally {
      channel.shutdownNow();
    }

    HttpResponse<String> pull = post("/v1/pull", "{}");
    assertThat(pull.statusCode()).as(pull.body()).isEqualTo(200);
    JsonNode w = null;
    for (JsonNode t : JSON.readTree(pull.body()).get("tensors")) {
      w = t.get("name").asString().equals("w") ? t : w;
    }
    assertThat(w).as("w among every dense parameter: %s", pull.body()).isNotNull();
    assertThat(w.get("shape").toString()).isEqualTo("[2,3]");
    assertThat(w.get("values").size()).isEqualTo(6);

    assertThat(
            expectError("/v1/lookup", "{\"table\":\"nope\",\"ids\":[1]}", 400, "UNKNOWN_PARAMETER")
                .get("message")
                .asString())
        .contains("sparse table 'nope' is not served: the tables are [emb, wide]");
    assertThat(
            expectError(
                    "/v1/lookup",
                    "{\"table\":\"emb\",\"ids\":[1],\"width\":8}",
                    400,
                    "SHAPE_MISMATCH")
                .get("message")
                .asString())
        .contains("rows of 4 float32 values, the request expects 8");
    assertThat(
            expectError(
                    "/v1/lookup",
                    "{\"table\":\"emb\",\"ids\":[1,2,3,4,5,6,7,8,9,10,11]}",
                    400,
                    "TOO_LARGE")
                .get("message")
                .asString())
        .contains("at most 10 ids (paramserver.serving.max-ids), got 11");
    assertThat(
            expectError("/v1/lookup", "{\"ids\":[1]}", 400, "BAD_ARGUMENT")
                .get("message")
                .asString())
        .contains("'table' is missing");
    assertThat(
            expectError("/v1/lookup", "{\"table\":\"emb\",\"ids\":[\"x\"", 400, "BAD_ARGUMENT")
                .get("message")
                .asString())
        .startsWith("the request body is not the JSON this call takes");
    assertThat(
            expectError("/v1/pull", "{\"names\":[\"emb\"]}", 400, "UNKNOWN_PARAMETER")
                .get("message")
                .asString())
        .contains("'emb' is not a dense parameter of the model: the dense ones are [")
        .contains(" w]");
    JsonNode behind =
        expectError(
            "/v1/lookup",
            "{\"table\":\"emb\",\"ids\":[1],\"min_version\":{\"shards\":[{\"index\":0,\"sequence\":5}],"
                + "\"wait_ms\":20}}",
            503,
            "VERSION_NOT_REACHED");
    assertThat(behind.get("message").asString()).contains("shard 0 is at sequence 1");
    assertThat(behind.at("/metadata/wanted").asString()).isEqualTo("5");
    expectError(
        "/v1/lookup",
        "{\"table\":\"emb\",\"ids\":[1],\"min_version\":{\"shards\":[{\"index\":3,\"sequence\":1}]}}",
        400,
        "BAD_ARGUMENT");
    // a reached min_version answers at once
    HttpResponse<String> reached =
        post(
            "/v1/lookup",
            "{\"table\":\"emb\",\"ids\":[3],\"min_version\":{\"shards\":[{\"index\":0,\"sequence\":1}]}}");
    assertThat(reached.statusCode()).as(reached.body()).isEqualTo(200);

    predict_answersTheGrpcValuesBitForBit_andBadRequestsGetTheSameErrors();
  }

  /** Three examples: dense features, pushed and unknown sparse ids, with and without values. */
  private static final String EXAMPLES =
      "[{\"dense\":[0.5,-1.25,3.0],\"sparse_ids\":[3,500]},"
          + "{\"dense\":[0.1,0.2,0.3],\"sparse_ids\":[4],\"sparse_values\":[2.5]},"
          + "{\"dense\":[-7.0,0.0,1.0E-3]}]";

  private static PredictRequest grpcExamples() {
    return PredictRequest.newBuilder()
        .addExamples(
            Example.newBuilder()
                .addDense(0.5f)
                .addDense(-1.25f)
                .addDense(3.0f)
                .addSparseIds(3)
                .addSparseIds(500))
        .addExamples(
            Example.newBuilder()
                .addDense(0.1f)
                .addDense(0.2f)
                .addDense(0.3f)
                .addSparseIds(4)
                .addSparseValues(2.5f))
        .addExamples(Example.newBuilder().addDense(-7.0f).addDense(0.0f).addDense(1.0E-3f))
        .build();
  }

  private static void predict_answersTheGrpcValuesBitForBit_andBadRequestsGetTheSameErrors()
      throws Exception {
    String body = "{\"examples\":" + EXAMPLES + "}";
    // the job recorded no model description yet: 503, as gRPC's FAILED_PRECONDITION NO_MODEL
    assertThat(expectError("/v1/predict", body, 503, "NO_MODEL").get("message").asString())
        .contains("the job has no model description yet");
    coordinator
        .kv()
        .put(
            coordinator.keys().modelDescription(),
            ModelFiles.description(PREDICTED, "job", DatasetInfo.getDefaultInstance())
                .toByteArray());

    HttpResponse<String> ok = post("/v1/predict", body);
    assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
    JsonNode rest = JSON.readTree(ok.body());
    ManagedChannel channel = Channels.forAddress("127.0.0.1:" + grpcPort);
    try {
      PredictResponse grpc =
          ServingGrpc.newBlockingStub(channel)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .predict(grpcExamples());
      assertThat(rest.get("classes").asInt()).isEqualTo(grpc.getClasses()).isEqualTo(2);
      assertThat(rest.at("/version/number").asLong()).isEqualTo(grpc.getVersion().getNumber());
      assertThat(rest.get("probabilities").size()).isEqualTo(3);
      for (int i = 0; i < 3; i++) {
        assertThat(rest.at("/predicted/" + i).asInt()).isEqualTo(grpc.getPredicted(i));
        for (int k = 0; k < 2; k++) {
          float got = (float) rest.at("/probabilities/" + i + "/" + k).asDouble();
          assertThat(Float.floatToRawIntBits(got))
              .as("example %d class %d: %s vs %s", i, k, got, grpc.getProbabilities(i * 2 + k))
              .isEqualTo(Float.floatToRawIntBits(grpc.getProbabilities(i * 2 + k)));
        }
      }
    } finally {
      channel.shutdownNow();
    }

    assertThat(
            expectError(
                    "/v1/predict", "{\"examples\":[{\"dense\":[1]},{},{},{},{}]}", 400, "TOO_LARGE")
                .get("message")
                .asString())
        .contains("at most 4 examples (paramserver.serving.max-examples), got 5");
    assertThat(
            expectError("/v1/predict", "{\"examples\":[{\"dense\":[1]}]}", 400, "BAD_ARGUMENT")
                .get("message")
                .asString())
        .contains("the model expects 3");
    expectError("/v1/predict", "{\"examples\":[null]}", 400, "BAD_ARGUMENT");
    expectError("/v1/predict", "{\"examples\":[{\"dense\":\"x\"}]}", 400, "BAD_ARGUMENT");
    JsonNode behind =
        expectError(
            "/v1/predict",
            "{\"examples\":"
                + EXAMPLES
                + ",\"min_version\":{\"shards\":[{\"index\":0,\"sequence\":99}],\"wait_ms\":20}}",
            503,
            "VERSION_NOT_REACHED");
    assertThat(behind.at("/metadata/wanted").asString()).isEqualTo("99");
  }
}
