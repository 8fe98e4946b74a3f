package dev.paramserver.master.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.grpc.HostileMasterCall.Mutation;
import dev.paramserver.master.grpc.HostileMasterCall.Target;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.TempDirs;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

/**
 * Hostile inputs to the master's trainer-facing service (issue 26 item 5): random sequences of
 * valid and mutated requests (globs that are empty, malformed, hold NUL or name no RecordIO file;
 * empty trainer ids; unknown task ids; hostile epochs, passes, hold times and task counts; NaN and
 * infinite evaluations; duplicated reports) over the in-process transport, to the real service and
 * job, before the dataset is set, while the job runs and after the master lost its leadership.
 *
 * <p>Each call either succeeds or fails with a status that is not UNKNOWN or INTERNAL and carries
 * an {@code ErrorInfo} reason; a refused call saves nothing and leaves the task queues (the job's
 * status) as they were; a call that must fail does; and the master answers GetStatus afterwards.
 * Tries: {@code jqwik.tries.default} (jqwik's 1000 in this module), raised with {@code
 * -Djqwik.tries.default=5000} for a long run.
 */
class MasterHostileInputFuzzTest {

  /** The job's state when the calls start. */
  enum Start {
    NO_DATASET,
    RUNNING,
    NOT_LEADER
  }

  @Property
  void hostileCalls_succeedOrAreRefusedWithAReason_andARefusalChangesNoQueue(
      @ForAll Start start,
      @ForAll @Size(min = 1, max = 4) List<@From("calls") HostileMasterCall> calls)
      throws Exception {
    try (Fixture f = new Fixture(start)) {
      for (HostileMasterCall call : calls) {
        State before = f.state();
        Throwable t = catchThrowable(() -> call.call().apply(f.target()));
        if (t == null) {
          assertThat(call.mustFail()).as("%s from %s was accepted", call, start).isFalse();
          continue;
        }
        assertRefusedWithReason(t, call + " from " + start);
        assertThat(f.state()).as("job after refused %s from %s", call, start).isEqualTo(before);
      }
      if (start != Start.NOT_LEADER) {
        assertThat(f.stub().getStatus(GetStatusRequest.getDefaultInstance())).isNotNull();
      }
    }
  }

  /**
   * Every hostile glob list, from each start: an unclosed '[' reached the JDK's glob parser and its
   * PatternSyntaxException was answered INVALID_ARGUMENT without a reason.
   */
  @Example
  void setDatasetWithEachHostileGlob_isRefusedWithItsReason() throws Exception {
    for (Start start : Start.values()) {
      for (long seed = 0; seed < 40; seed++) {
        hostileCalls_succeedOrAreRefusedWithAReason_andARefusalChangesNoQueue(
            start, List.of(Mutation.SET_DATASET_HOSTILE.with(seed)));
      }
    }
  }

  @Provide
  Arbitrary<HostileMasterCall> calls() {
    return Combinators.combine(Arbitraries.of(Mutation.class), Arbitraries.longs())
        .as(Mutation::with);
  }

  /** The call failed with a chosen code and a {@code google.rpc.ErrorInfo} naming its reason. */
  static void assertRefusedWithReason(Throwable t, String what) {
    Status status = Status.fromThrowable(t);
    assertThat(status.getCode())
        .as("status of %s: %s", what, status)
        .isNotIn(Status.Code.UNKNOWN, Status.Code.INTERNAL, Status.Code.OK);
    assertThat(status.getDescription()).as("message of %s", what).isNotBlank();
    com.google.rpc.Status details = StatusProto.fromThrowable(t);
    assertThat(details).as("rich status of %s: %s", what, status).isNotNull();
    ErrorInfo info = null;
    for (Any any : details.getDetailsList()) {
      if (any.is(ErrorInfo.class)) {
        try {
          info = any.unpack(ErrorInfo.class);
        } catch (InvalidProtocolBufferException e) {
          throw new AssertionError(e);
        }
      }
    }
    assertThat(info).as("ErrorInfo of %s: %s", what, status).isNotNull();
    assertThat(info.getDomain()).isEqualTo(RpcErrors.DOMAIN);
    ErrorReason reason = ErrorReason.valueOf(info.getReason());
    assertThat(reason).isNotEqualTo(ErrorReason.ERROR_REASON_UNSPECIFIED);
    assertThat(RpcErrors.codeFor(reason)).as("code of %s", what).isEqualTo(status.getCode());
  }

  /** What a refused call must leave as it was: what was saved, and the queues' counts. */
  record State(int saves, ByteString lastSnapshot, Optional<JobStatus> status) {}

  /** A store that keeps what the master saved, so a refused call can be seen to save nothing. */
  static final class RecordingStore implements JobStore {
    int saves;
    ByteString last = ByteString.EMPTY;

    @Override
    public Optional<DatasetIndex> loadDataset() {
      return Optional.empty();
    }

    @Override
    public Optional<MasterSnapshot> loadSnapshot() {
      return Optional.empty();
    }

    @Override
    public synchronized void saveDataset(DatasetIndex index) {
      saves++;
    }

    @Override
    public synchronized long saveSnapshot(byte[] serializedSnapshot) {
      saves++;
      last = ByteString.copyFrom(serializedSnapshot);
      return serializedSnapshot.length;
    }
  }

  /** The real service and job over the in-process transport, brought to a {@link Start}. */
  static final class Fixture implements AutoCloseable {
    final RecordingStore store = new RecordingStore();
    final MasterJob job;
    private final Path dir = TempDirs.create("master-fuzz");
    private final InProcessGrpc grpc = new InProcessGrpc();
    private final MasterGrpc.MasterBlockingStub stub;
    private long taskId;
    private long epoch;

    Fixture(Start start) {
      MasterProperties props =
          new MasterProperties(
              2,
              2,
              Duration.ofSeconds(60),
              2,
              Duration.ofSeconds(1),
              Duration.ofMillis(50),
              MasterProperties.AdaptiveTimeout.disabled(),
              0,
              MasterProperties.Console.defaults(),
              MasterProperties.Tracking.off(),
              0,
              0);
      job = new MasterJob(props, store, Clock.systemUTC());
      job.startServing("127.0.0.1:7001");
      try {
        for (String f : new String[] {"train-0.rio", "train-1.rio"}) {
          try (RecordWriter w = RecordWriter.create(dir.resolve(f), Compressor.NONE, 5)) {
            for (int i = 0; i < 10; i++) {
              w.write(new byte[] {(byte) i});
            }
          }
        }
        Files.writeString(dir.resolve("notes.txt"), "not a RecordIO file\n");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      stub =
          MasterGrpc.newBlockingStub(
              grpc.startDirect(
                  ServerInterceptors.intercept(
                      new MasterGrpcService(job), new ErrorMappingInterceptor())));
      if (start != Start.NO_DATASET) {
        stub().setDataset(HostileMasterCall.dataset("t1", HostileMasterCall.glob(dir)));
        GetTaskResponse r = stub().getTask(HostileMasterCall.getTask("t1").build());
        taskId = r.getTask().getId();
        epoch = r.getTask().getEpoch();
      }
      if (start == Start.NOT_LEADER) {
        job.stopServing();
      }
    }

    MasterGrpc.MasterBlockingStub stub() {
      return stub.withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    Target target() {
      return new Target(stub(), dir, taskId, epoch);
    }

    State state() {
      synchronized (store) {
        return new State(store.saves, store.last, job.statusIfServing());
      }
    }

    @Override
    public void close() throws InterruptedException {
      grpc.close();
      TempDirs.deleteRecursively(dir);
    }
  }
}
