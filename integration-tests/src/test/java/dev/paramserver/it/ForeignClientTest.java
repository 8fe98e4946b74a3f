package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A client in another language against a real pserver process: {@code clients/python/wire_check.py}
 * with stock gRPC for Python and message classes protoc generates from the repository's .proto
 * files (Debian's python3-grpcio, python3-protobuf and protobuf-compiler, which {@code
 * scripts/install-deps.sh} installs). It initialises dense SGD and Adam tensors larger than an
 * HTTP/2 frame and a sparse table, pushes by unary calls and on a StreamPushes stream, resends one
 * push and sends two bad ones. Every request it sent is replayed here on a shard in this JVM: each
 * answer it got, and the values it pulled at the end, must equal the replay's bit for bit, and each
 * refusal must carry the reason the replay throws.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class ForeignClientTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final Duration START = Duration.ofSeconds(90);

  private static Path dir;
  private static ServiceRun pserver;

  @BeforeAll
  static void startPserver() throws Exception {
    dir = TempDirs.create("foreign-client");
    pserver =
        ServiceRun.start(
            Role.PSERVER,
            dir.resolve("logs/pserver.log"),
            Map.of(
                "paramserver.job", etcd.uniqueJob(),
                "paramserver.etcd.endpoints", etcd.endpoint(),
                "paramserver.pserver.desired", "1",
                "paramserver.pserver.checkpoint-dir", dir.resolve("ckpt").toString()));
  }

  @AfterAll
  static void stop() {
    if (pserver != null) {
      pserver.close();
    }
    TempDirs.deleteRecursively(dir);
  }

  @Test
  void aPythonClientGetsTheUpdatesAShardInThisJvmComputes() throws Exception {
    Path gen = Files.createDirectories(dir.resolve("gen"));
    Path out = dir.resolve("out");
    Path protos = Path.of("..", "common-proto", "src", "main", "proto").toAbsolutePath();
    List<String> protoc =
        new ArrayList<>(
            List.of(
                "protoc",
                "--python_out=" + gen,
                "-I",
                "" + protos,
                "-I",
                "" + wellKnownProtos(protos.resolve("paramserver/v1"))));
    try (Stream<Path> files = Files.list(protos.resolve("paramserver/v1"))) {
      files.filter(f -> f.toString().endsWith(".proto")).sorted().forEach(f -> protoc.add("" + f));
    }
    run(protoc, dir.resolve("logs/protoc.log"));

    pserver.awaitGrpcListening(START);
    ManagedChannel channel = Channels.forAddress("127.0.0.1:" + pserver.grpcPort);
    try {
      ParameterServerGrpc.ParameterServerBlockingStub stub =
          ParameterServerGrpc.newBlockingStub(channel);
      Poll.until(
          START,
          () -> {
            try {
              stub.withDeadlineAfter(2, TimeUnit.SECONDS)
                  .getShardStatus(GetShardStatusRequest.getDefaultInstance());
              return true;
            } catch (RuntimeException e) {
              return false;
            }
          },
          "the pserver serves its shard");
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    Path script = Path.of("..", "clients", "python", "wire_check.py").toAbsolutePath();
    run(
        List.of(
            python(),
            script.toString(),
            "--target",
            "127.0.0.1:" + pserver.grpcPort,
            "--gen",
            gen.toString(),
            "--out",
            out.toString()),
        dir.resolve("logs/wire_check.log"));

    List<String> manifest = Files.readAllLines(out.resolve("manifest.tsv"), StandardCharsets.UTF_8);
    assertThat(manifest).hasSize(18);
    // rows each tagged push's answer listed, in order (steps 7, 8 and 9)
    List<Integer> listed = new java.util.ArrayList<>();
    // rows each tagged pull's answer listed
    List<Integer> pullListed = new java.util.ArrayList<>();
    ParameterShard replay = new ParameterShard(true);
    int refused = 0;
    int duplicates = 0;
    boolean pulled = false;
    boolean streamPulled = false;
    for (String line : manifest) {
      String[] f = line.split("\t");
      byte[] request = Files.readAllBytes(out.resolve(f[1]));
      boolean ok = f[2].equals("ok");
      switch (f[0]) {
        case "InitParameters" -> replay.init(InitParametersRequest.parseFrom(request));
        case "FinishInit" -> replay.finishInit(FinishInitRequest.parseFrom(request));
        case "PushGradients", "StreamPushes" -> {
          PushGradientsRequest push = PushGradientsRequest.parseFrom(request);
          if (push.hasPull()) {
            // a pull on the stream, answered in its turn: the values after the pushes before it
            PushGradientsResponse got =
                PushGradientsResponse.parseFrom(Files.readAllBytes(out.resolve(f[3])));
            assertThat(got.getPulled().getBlocksCount()).as(line).isEqualTo(4);
            assertThat(got)
                .as(line)
                .isEqualTo(
                    PushGradientsResponse.newBuilder()
                        .setPulled(replay.pull(push.getPull()))
                        .build());
            streamPulled = true;
            continue;
          }
          if (ok) {
            PushGradientsResponse got =
                PushGradientsResponse.parseFrom(Files.readAllBytes(out.resolve(f[3])));
            PushOutcome r = replay.pushOutcome(push);
            PushGradientsResponse.Builder want =
                PushGradientsResponse.newBuilder()
                    .setStep(r.step())
                    .setDuplicate(r.duplicate())
                    .setServesPulls(f[0].equals("StreamPushes"));
            if (push.getReturnValues()) {
              want.addAllBlocks(replay.valuesAfter(push, r.step(), true).getBlocksList());
              assertThat(got.getBlocksCount()).isEqualTo(4);
            }
            if (push.getWriterTag() != 0) {
              // read in the push's own probe of each row, cut to what another writer changed
              assertThat(r.rows()).as(line).isNotNull();
              want.addAllSparseRows(r.rows()).setRowsChangedOnly(r.changedOnly());
              listed.add(got.getSparseRowsList().stream().mapToInt(t -> t.getRowIdsCount()).sum());
              assertThat(got.getRowsChangedOnly()).as(line).isTrue();
            }
            assertThat(got).as(line).isEqualTo(want.build());
            duplicates += got.getDuplicate() ? 1 : 0;
          } else {
            refused++;
            try {
              replay.pushOutcome(push);
              fail("the replay applied what the pserver refused: " + line);
            } catch (ServiceException e) {
              assertThat(e.reason().name()).as(line).isEqualTo(f[4]);
            }
          }
        }
        case "PullParameters" -> {
          PullParametersResponse got =
              PullParametersResponse.parseFrom(Files.readAllBytes(out.resolve(f[3])));
          PullParametersRequest pull = PullParametersRequest.parseFrom(request);
          PullParametersResponse want = replay.pull(pull);
          if (pull.getWriterTag() != 0) {
            assertThat(got.getRowsChangedOnly()).as(line).isTrue();
            pullListed.add(got.getSparseRows(0).getRowIdsCount());
          } else {
            assertThat(got.getBlocksCount()).isEqualTo(4);
            assertThat(got.getSparseRows(0).getRowIdsCount()).isEqualTo(4);
            pulled = true;
          }
          // bit for bit: the same bytes of every block and row
          assertThat(got).as(line).isEqualTo(want);
        }
        default -> fail("unknown call in the manifest: " + line);
      }
      if (!ok && !f[0].startsWith("Push")) {
        fail("the pserver refused a call the client made in good faith: " + line);
      }
    }
    assertThat(refused).isEqualTo(2);
    assertThat(duplicates).isEqualTo(1);
    assertThat(pulled).isTrue();
    assertThat(streamPulled).as("a pull answered on the stream").isTrue();
    // step 7: its 3 rows, last updated untagged; step 8, same writer: only the row step 7 did not
    // push; step 9, another writer: all 4
    assertThat(listed).containsExactly(3, 1, 4);
    // step 9's writer holding three rows gets the fourth; the other writer gets all four
    assertThat(pullListed).containsExactly(1, 4);
    // nine pushes applied, one duplicate changed nothing
    assertThat(replay.step()).isEqualTo(9);
  }

  /**
   * The protobuf well-known types ({@code google/protobuf/*.proto}) the repository's files import,
   * copied from protobuf-java's jar: Debian's protoc package does not carry them (they come with
   * libprotobuf-dev), and the Python runtime has their generated modules already.
   */
  private static Path wellKnownProtos(Path protoDir) throws IOException {
    Path root = Files.createDirectories(dir.resolve("well-known"));
    Pattern wellKnown = Pattern.compile("^import \"(google/protobuf/[a-z_]+\\.proto)\";");
    try (Stream<Path> files = Files.list(protoDir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".proto")).toList()) {
        for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
          Matcher m = wellKnown.matcher(line.trim());
          if (!m.matches()) {
            continue;
          }
          Path target = root.resolve(m.group(1));
          Files.createDirectories(target.getParent());
          try (InputStream in = ForeignClientTest.class.getResourceAsStream("/" + m.group(1))) {
            if (in == null) {
              fail(m.group(1) + " is not on the test class path (protobuf-java carries it)");
            }
            Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
    }
    return root;
  }

  /** Debian's python3 (the packages' interpreter), or the python3 on the PATH. */
  private static String python() {
    Path debian = Path.of("/usr/bin/python3");
    return Files.isExecutable(debian) ? debian.toString() : "python3";
  }

  private static void run(List<String> command, Path log) throws IOException, InterruptedException {
    Files.createDirectories(log.getParent());
    Process p;
    try {
      p =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
    } catch (IOException e) {
      throw new AssertionError(
          command.get(0) + " could not start (scripts/install-deps.sh installs it): " + e, e);
    }
    if (!p.waitFor(2, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      fail(command.get(0) + " did not finish in 2 minutes; see " + log);
    }
    if (p.exitValue() != 0) {
      fail(
          String.join(" ", command)
              + " exited with "
              + p.exitValue()
              + ":\n"
              + Files.readString(log, StandardCharsets.UTF_8));
    }
  }
}
