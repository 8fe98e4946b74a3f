package dev.paramserver.bench.component;

import dev.paramserver.models.Parameters;
import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.pserver.grpc.ParameterServerGrpcService;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.pserver.wal.WriteAheadLog;
import dev.paramserver.service.AdminAddress;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.internal.CompositeReadableBuffer;
import io.grpc.internal.ReadableBuffers;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Executor;
import java.util.stream.Stream;
import org.springframework.core.env.StandardEnvironment;

/**
 * The pserver's push path in one thread, apart from the network and from contention: the click-
 * through workload's pushes ({@link CtrPushes}), encoded beforehand, are cut into the 16 KiB slices
 * a transport delivers, parsed by the service's own request marshaller (zero-copy), handed to the
 * real streaming service ({@code StreamPushes}, {@link ParameterServerGrpcService}) over a real
 * {@link ParameterShard}, and answered with the rows after the push, encoded by the response
 * marshaller; with the write-ahead log off and on ({@code wal.sync=batch}). Against it, the kernel
 * of one JVM: the same tables ({@link Parameters.SparseTable}) and optimizer on the same ids and
 * gradients, as the single-JVM trainer applies them. Every pass runs the same batches (the first
 * pass, unmeasured, creates the rows), the three interleaved over rounds; thread CPU time, and
 * bytes allocated, per row. Prints one {@code name=value} line per figure of each round.
 *
 * <p>Arguments: {@code rounds batches dir}.
 */
public final class PserverPushBench {
  static final int SLICE = 16 << 10;

  private PserverPushBench() {}

  public static void main(String[] args) throws Exception {
    int rounds = Integer.parseInt(args[0]);
    int count = Integer.parseInt(args[1]);
    Path dir = Path.of(args[2]);
    CtrPushes work = new CtrPushes(count);
    Kernel kernel = new Kernel(work);
    Service off = new Service(work, null);
    Service on = new Service(work, dir);
    try {
      // the first pass creates the rows and compiles the paths; not measured
      kernel.pass();
      off.pass();
      on.pass();
      for (int round = 0; round < rounds; round++) {
        print("kernel_ns_per_row", round, kernel.pass().nsPerRow());
        Pass a = off.pass();
        print("service_ns_per_row", round, a.nsPerRow());
        print("service_alloc_bytes_per_row", round, a.allocPerRow());
        print("service_alloc_bytes_per_pushed_byte", round, a.allocPerPushedByte());
        Pass b = on.pass();
        print("service_logged_ns_per_row", round, b.nsPerRow());
        print("service_logged_alloc_bytes_per_row", round, b.allocPerRow());
      }
      print("rows_per_push", 0, (double) a(work) / work.batches.size());
      print("pushed_bytes_per_row", 0, off.lastPushedBytes / (double) a(work));
    } finally {
      on.close();
      off.close();
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static long a(CtrPushes work) {
    long rows = 0;
    for (int b = 0; b < work.batches.size(); b++) {
      rows += work.rows(b);
    }
    return rows;
  }

  private static void print(String name, int round, double value) {
    System.out.println(String.format(Locale.ROOT, "%s.%d=%.4f", name, round, value));
  }

  /** One measured pass: thread CPU ns, bytes allocated, rows and pushed bytes. */
  record Pass(long cpuNanos, long allocated, long rows, long pushedBytes) {
    double nsPerRow() {
      return (double) cpuNanos / rows;
    }

    double allocPerRow() {
      return (double) allocated / rows;
    }

    double allocPerPushedByte() {
      return (double) allocated / pushedBytes;
    }
  }

  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** The single JVM's update: a hash table of rows per table, the optimizer row by row. */
  static final class Kernel {
    private final CtrPushes work;
    private final Parameters.SparseTable wide = new Parameters.SparseTable(1);
    private final Parameters.SparseTable emb = new Parameters.SparseTable(CtrPushes.EMB_WIDTH);
    private final ParameterOptimizer optimizer =
        ParameterOptimizer.of(CtrPushes.WIDE, CtrPushes.sgd());
    private final List<float[][]> gradients = new ArrayList<>();

    Kernel(CtrPushes work) {
      this.work = work;
      for (int b = 0; b < work.batches.size(); b++) {
        long[] ids = work.batches.get(b);
        gradients.add(
            new float[][] {
              CtrPushes.gradient(ids, 1, b), CtrPushes.gradient(ids, CtrPushes.EMB_WIDTH, b + 1)
            });
      }
    }

    Pass pass() {
      float[][] none = new float[0][];
      long rows = 0;
      long t0 = THREADS.getCurrentThreadCpuTime();
      long a0 = THREADS.getCurrentThreadAllocatedBytes();
      for (int b = 0; b < work.batches.size(); b++) {
        long[] ids = work.batches.get(b);
        float[][] g = gradients.get(b);
        apply(wide, ids, g[0], 0f, none);
        apply(emb, ids, g[1], 0.01f, none);
        rows += 2L * ids.length;
      }
      return new Pass(
          THREADS.getCurrentThreadCpuTime() - t0,
          THREADS.getCurrentThreadAllocatedBytes() - a0,
          rows,
          1);
    }

    private void apply(
        Parameters.SparseTable table, long[] ids, float[] g, float stddev, float[][] none) {
      int width = table.width();
      for (int i = 0; i < ids.length; i++) {
        float[] w = table.rowOrNull(ids[i]);
        if (w == null) {
          w = new float[width];
          if (stddev > 0) {
            SplittableRandom r = new SplittableRandom(ids[i]);
            for (int k = 0; k < width; k++) {
              w[k] = (float) (r.nextGaussian() * stddev);
            }
          }
          table.put(ids[i], w);
        }
        optimizer.update(w, g, i * width, none, 0);
      }
    }
  }

  /** The real service over a real shard, fed encoded pushes on one stream per pass. */
  static final class Service implements AutoCloseable {
    private final CtrPushes work;
    private final ParameterServerGrpcService service;
    private final MethodDescriptor.Marshaller<PushGradientsRequest> requests;
    private final MethodDescriptor.Marshaller<PushGradientsResponse> answers;
    private final WriteAheadLog log;
    private int session;
    long lastPushedBytes;

    /** With {@code logDir} null, without a write-ahead log. */
    @SuppressWarnings("unchecked")
    Service(CtrPushes work, Path logDir) throws Exception {
      this.work = work;
      ParameterShard shard = new ParameterShard(true);
      shard.indexFrom(() -> 0);
      if (logDir != null) {
        log =
            new WriteAheadLog(
                Files.createDirectories(logDir.resolve("wal")),
                WriteAheadLog.SyncMode.BATCH,
                Duration.ofMillis(50));
        log.open(0, 0, r -> true);
        shard.attachLog(log);
      } else {
        log = null;
      }
      ShardLifecycle lifecycle = new ShardLifecycle(shard);
      lifecycle.claimed(0);
      lifecycle.serve();
      Executor direct = Runnable::run;
      service =
          new ParameterServerGrpcService(
              shard,
              lifecycle,
              direct,
              new SimpleMeterRegistry(),
              new ShardTraffic(),
              new AdminAddress("127.0.0.1", new StandardEnvironment()));
      ServerMethodDefinition<?, ?> method =
          service
              .bindService()
              .getMethod(ParameterServerGrpc.getStreamPushesMethod().getFullMethodName());
      MethodDescriptor<PushGradientsRequest, PushGradientsResponse> d =
          (MethodDescriptor<PushGradientsRequest, PushGradientsResponse>)
              method.getMethodDescriptor();
      requests = d.getRequestMarshaller();
      answers = d.getResponseMarshaller();
      shard.init(CtrPushes.init());
      shard.finishInit(CtrPushes.finish());
    }

    Pass pass() {
      String s = "s" + (++session);
      List<byte[]> encoded = new ArrayList<>(work.batches.size());
      long rows = 0;
      long pushed = 0;
      for (int b = 0; b < work.batches.size(); b++) {
        byte[] bytes = work.push(s, b + 1, b).toByteArray();
        encoded.add(bytes);
        rows += work.rows(b);
        pushed += bytes.length;
      }
      AnswerSink<PushGradientsResponse> sink = new AnswerSink<>(answers);
      long t0 = THREADS.getCurrentThreadCpuTime();
      long a0 = THREADS.getCurrentThreadAllocatedBytes();
      StreamObserver<PushGradientsRequest> stream = service.streamPushes(sink);
      for (byte[] bytes : encoded) {
        stream.onNext(requests.parse(received(bytes)));
      }
      stream.onCompleted();
      long cpu = THREADS.getCurrentThreadCpuTime() - t0;
      long alloc = THREADS.getCurrentThreadAllocatedBytes() - a0;
      sink.check();
      if (sink.answers != encoded.size() || !sink.completed) {
        throw new IllegalStateException(sink.answers + " answers to " + encoded.size() + " pushes");
      }
      if (sink.last().getSparseRowsCount() != 2) {
        throw new IllegalStateException("an answer without its rows: " + sink.last());
      }
      lastPushedBytes = pushed;
      return new Pass(cpu, alloc, rows, pushed);
    }

    /** {@code bytes} as a transport hands a received message over: 16 KiB buffers. */
    private static InputStream received(byte[] bytes) {
      CompositeReadableBuffer all = new CompositeReadableBuffer();
      for (int at = 0; at < bytes.length; at += SLICE) {
        all.addBuffer(
            ReadableBuffers.wrap(ByteBuffer.wrap(bytes, at, Math.min(SLICE, bytes.length - at))));
      }
      return ReadableBuffers.openStream(all, true);
    }

    @Override
    public void close() {
      if (log != null) {
        log.close();
      }
    }
  }
}
