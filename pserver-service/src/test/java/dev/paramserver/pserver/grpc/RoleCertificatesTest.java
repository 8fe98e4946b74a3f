package dev.paramserver.pserver.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.FillResponse;
import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;
import dev.paramserver.proto.v1.MoveInChunk;
import dev.paramserver.proto.v1.MoveInResponse;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.ShardFollowGrpc;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.PeerRoles;
import dev.paramserver.testsupport.SelfSignedCertificates;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Internal calls authorised by role over real mutual TLS (Netty on loopback, certificates made in
 * the test by keytool, one per role named by its OU): a trainer's certificate is refused on Fill,
 * Replicate, MoveIn, AwaitCopyInstalled, MoveOut and Follow; a pserver's is taken on Fill,
 * Replicate, MoveIn and Follow, the master's on MoveOut, a serving replica's on Follow only; a
 * certificate that names no role is left to the job token.
 */
@Timeout(240)
class RoleCertificatesTest {
  private static final char[] PASSWORD = SelfSignedCertificates.PASSWORD.toCharArray();

  private static final long FOLLOW_EPOCH = 77;

  @TempDir static Path dir;

  /** Made once for the class: keytool is slow on a loaded machine. */
  private static final Map<String, KeyStore> stores = new HashMap<>();

  private final List<ManagedChannel> channels = new ArrayList<>();
  private Server server;

  @BeforeAll
  static void certificates() throws Exception {
    for (String[] c :
        new String[][] {
          {"server", "CN=localhost, OU=pserver"},
          {"trainer", "CN=trainer-0, OU=trainer"},
          {"pserver", "CN=ps-1, OU=pserver"},
          {"master", "CN=master, OU=master"},
          {"serving", "CN=serving-0, OU=serving"},
          {"shared", "CN=paramserver"}
        }) {
      stores.put(c[0], SelfSignedCertificates.make(dir, c[0], c[1]));
    }
  }

  @BeforeEach
  void start() throws Exception {
    ServerCredentials credentials =
        TlsServerCredentials.newBuilder()
            .keyManager(keys("server"))
            .trustManager(trustAll())
            .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE)
            .build();
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), credentials)
            .addService(new Replication())
            .addService(new Moves())
            .addService(new Follow())
            .intercept(PeerRoles.require(InternalCallsConfiguration.ROLES))
            .build()
            .start();
  }

  @AfterEach
  void stop() throws InterruptedException {
    channels.forEach(Channels::close);
    server.shutdownNow();
    server.awaitTermination(10, TimeUnit.SECONDS);
  }

  @Test
  void trainerCertificate_isRefusedOnFillReplicateAndMoves_peersOfTheRightRoleAreTaken()
      throws Exception {
    ManagedChannel trainer = channel("trainer");
    for (ThrowingCall call :
        List.<ThrowingCall>of(
            () -> fill(trainer),
            () -> moveIn(trainer),
            () -> awaitCopyInstalled(trainer),
            () -> replicate(trainer),
            () -> moveOut(trainer),
            () -> follow(trainer))) {
      assertThatThrownBy(call::run)
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
                assertThat(e.getStatus().getDescription())
                    .contains("names role 'trainer'")
                    .doesNotContain("epoch");
              });
    }

    ManagedChannel pserver = channel("pserver");
    assertThat(fill(pserver)).isNotNull();
    assertThat(moveIn(pserver)).isNotNull();
    assertThat(awaitCopyInstalled(pserver)).isNotNull();
    assertThat(replicate(pserver)).isNotNull();
    assertThatThrownBy(() -> moveOut(pserver))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));

    ManagedChannel master = channel("master");
    assertThat(moveOut(master)).isNotNull();
    assertThatThrownBy(() -> awaitCopyInstalled(master))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));
    assertThatThrownBy(() -> fill(master))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));

    ManagedChannel shared = channel("shared");
    assertThat(fill(shared)).as("a certificate without a role: the job token decides").isNotNull();
    assertThat(moveOut(shared)).isNotNull();
    assertThat(follow(shared)).isNotNull();
  }

  @Test
  void shardFollow_takesServingReplicasAndPservers_refusesTrainersAndTheMaster() throws Exception {
    assertThat(follow(channel("serving")).getEpoch()).isEqualTo(FOLLOW_EPOCH);
    assertThat(follow(channel("pserver")).getEpoch()).isEqualTo(FOLLOW_EPOCH);
    ManagedChannel serving = channel("serving");
    for (String refused : List.of("trainer", "master")) {
      assertThatThrownBy(() -> follow(channel(refused)))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
                assertThat(e.getStatus().getDescription())
                    .contains("ShardFollow/Follow takes calls from role pserver or serving only")
                    .contains("names role '" + refused + "'");
              });
    }
    assertThatThrownBy(() -> fill(serving))
        .as("a serving replica follows; it does not fill a backup")
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));
  }

  @Test
  void roleIsTheSubjectsOrganisationalUnit() {
    assertThat(PeerRoles.roleOf("CN=ps-1,OU=PServer,O=paramserver")).contains("pserver");
    assertThat(PeerRoles.roleOf("CN=paramserver")).isEmpty();
    assertThat(PeerRoles.roleOf("not a name")).isEmpty();
  }

  private interface ThrowingCall {
    void run() throws Exception;
  }

  private FillResponse fill(ManagedChannel channel) throws Exception {
    CompletableFuture<FillResponse> answer = new CompletableFuture<>();
    StreamObserver<FillChunk> out =
        ShardReplicationGrpc.newStub(channel)
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .fill(observer(answer));
    out.onNext(FillChunk.getDefaultInstance());
    out.onCompleted();
    return unwrap(answer);
  }

  private MoveInResponse moveIn(ManagedChannel channel) throws Exception {
    CompletableFuture<MoveInResponse> answer = new CompletableFuture<>();
    StreamObserver<MoveInChunk> out =
        SlotMovesGrpc.newStub(channel)
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .moveIn(observer(answer));
    out.onNext(MoveInChunk.getDefaultInstance());
    out.onCompleted();
    return unwrap(answer);
  }

  private static MoveInResponse awaitCopyInstalled(ManagedChannel channel) {
    return SlotMovesGrpc.newBlockingStub(channel)
        .withDeadlineAfter(30, TimeUnit.SECONDS)
        .awaitCopyInstalled(SlotMove.getDefaultInstance());
  }

  private static ReplicateResponse replicate(ManagedChannel channel) {
    return ShardReplicationGrpc.newBlockingStub(channel)
        .withDeadlineAfter(30, TimeUnit.SECONDS)
        .replicate(ReplicateRequest.getDefaultInstance());
  }

  /** The first message of a Follow stream (the test's service sends one, then ends). */
  private static FollowMessage follow(ManagedChannel channel) {
    Iterator<FollowMessage> stream =
        ShardFollowGrpc.newBlockingStub(channel)
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .follow(FollowRequest.getDefaultInstance());
    FollowMessage first = stream.next();
    stream.forEachRemaining(m -> {});
    return first;
  }

  private static MoveOutResponse moveOut(ManagedChannel channel) {
    return SlotMovesGrpc.newBlockingStub(channel)
        .withDeadlineAfter(30, TimeUnit.SECONDS)
        .moveOut(SlotMove.getDefaultInstance());
  }

  private static <T> StreamObserver<T> observer(CompletableFuture<T> answer) {
    return new StreamObserver<>() {
      @Override
      public void onNext(T value) {
        answer.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        answer.completeExceptionally(t);
      }

      @Override
      public void onCompleted() {}
    };
  }

  private static <T> T unwrap(CompletableFuture<T> answer) throws Exception {
    try {
      return answer.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException s) {
        throw s;
      }
      throw e;
    }
  }

  private ManagedChannel channel(String name) throws Exception {
    ChannelCredentials credentials =
        TlsChannelCredentials.newBuilder().keyManager(keys(name)).trustManager(trustAll()).build();
    ManagedChannel channel =
        Grpc.newChannelBuilder("127.0.0.1:" + server.getPort(), credentials)
            .overrideAuthority("localhost")
            .build();
    channels.add(channel);
    return channel;
  }

  private static javax.net.ssl.KeyManager[] keys(String name) throws Exception {
    KeyManagerFactory f = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    f.init(stores.get(name), PASSWORD);
    return f.getKeyManagers();
  }

  /** Every certificate of the test is self-signed and trusted by every side. */
  private static javax.net.ssl.TrustManager[] trustAll() throws Exception {
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    for (Map.Entry<String, KeyStore> e : stores.entrySet()) {
      trust.setCertificateEntry(e.getKey(), e.getValue().getCertificate(e.getKey()));
    }
    TrustManagerFactory f =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    f.init(trust);
    return f.getTrustManagers();
  }

  /** Answers every call: the test is about who gets in. */
  private static final class Replication extends ShardReplicationGrpc.ShardReplicationImplBase {
    @Override
    public StreamObserver<FillChunk> fill(StreamObserver<FillResponse> out) {
      return new StreamObserver<>() {
        @Override
        public void onNext(FillChunk chunk) {}

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onNext(FillResponse.getDefaultInstance());
          out.onCompleted();
        }
      };
    }

    @Override
    public void replicate(ReplicateRequest request, StreamObserver<ReplicateResponse> out) {
      out.onNext(ReplicateResponse.getDefaultInstance());
      out.onCompleted();
    }
  }

  private static final class Moves extends SlotMovesGrpc.SlotMovesImplBase {
    @Override
    public StreamObserver<MoveInChunk> moveIn(StreamObserver<MoveInResponse> out) {
      return new StreamObserver<>() {
        @Override
        public void onNext(MoveInChunk chunk) {}

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onNext(MoveInResponse.getDefaultInstance());
          out.onCompleted();
        }
      };
    }

    @Override
    public void moveOut(SlotMove request, StreamObserver<MoveOutResponse> out) {
      out.onNext(MoveOutResponse.getDefaultInstance());
      out.onCompleted();
    }

    @Override
    public void awaitCopyInstalled(SlotMove request, StreamObserver<MoveInResponse> out) {
      out.onNext(MoveInResponse.getDefaultInstance());
      out.onCompleted();
    }
  }

  private static final class Follow extends ShardFollowGrpc.ShardFollowImplBase {
    @Override
    public void follow(FollowRequest request, StreamObserver<FollowMessage> out) {
      out.onNext(FollowMessage.newBuilder().setEpoch(FOLLOW_EPOCH).build());
      out.onCompleted();
    }
  }
}
