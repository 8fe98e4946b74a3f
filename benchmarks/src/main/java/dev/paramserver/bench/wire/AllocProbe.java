package dev.paramserver.bench.wire;

import com.sun.management.ThreadMXBean;
import com.sun.tools.attach.VirtualMachine;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServerConnection;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Bytes allocated by another JVM (all its live threads), read over JMX through the attach API's
 * local management agent: {@code com.sun.management.ThreadMXBean#getThreadAllocatedBytes} summed
 * over every thread. A thread that ends between two readings takes its count with it, so a phase
 * should run on long-lived threads (the pserver's transport and executor threads are).
 */
final class AllocProbe implements AutoCloseable {
  private final JMXConnector connector;
  private final ThreadMXBean threads;

  private AllocProbe(JMXConnector connector, ThreadMXBean threads) {
    this.connector = connector;
    this.threads = threads;
  }

  // BanJNDI: the JMX address is the local management agent of the local JVM with that pid
  @SuppressWarnings("BanJNDI")
  static AllocProbe attach(long pid) throws Exception {
    VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
    String address;
    try {
      address = vm.startLocalManagementAgent();
    } finally {
      vm.detach();
    }
    JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(address));
    MBeanServerConnection conn = c.getMBeanServerConnection();
    ThreadMXBean t =
        ManagementFactory.newPlatformMXBeanProxy(
            conn, ManagementFactory.THREAD_MXBEAN_NAME, ThreadMXBean.class);
    if (!t.isThreadAllocatedMemorySupported()) {
      c.close();
      throw new IllegalStateException("JVM " + pid + " does not count allocated bytes per thread");
    }
    t.setThreadAllocatedMemoryEnabled(true);
    return new AllocProbe(c, t);
  }

  /** Bytes allocated so far by the JVM's live threads. */
  long allocatedBytes() {
    long sum = 0;
    for (long b : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
      if (b > 0) {
        sum += b;
      }
    }
    return sum;
  }

  /**
   * Runs {@code depth} operations of {@code bytesPerOp} payload bytes in flight for {@code ms}
   * (every started operation finishes before it returns) and gives the target JVM's allocated bytes
   * per payload byte moved.
   */
  double bytesPerPayloadByte(AsyncOp.Factory factory, int depth, long bytesPerOp, long ms)
      throws Exception {
    AtomicLong done = new AtomicLong();
    AsyncOp.Factory counting =
        () -> {
          AsyncOp op = factory.create();
          return new AsyncOp() {
            @Override
            public void start(Completion c) throws Exception {
              op.start(
                  new Completion() {
                    @Override
                    public void done() {
                      done.incrementAndGet();
                      c.done();
                    }

                    @Override
                    public void failed(Throwable t) {
                      c.failed(t);
                    }
                  });
            }

            @Override
            public void close() {
              op.close();
            }
          };
        };
    long before = allocatedBytes();
    DepthRunner.run(counting, depth, bytesPerOp, 0, ms);
    long after = allocatedBytes();
    if (done.get() == 0) {
      throw new IllegalStateException("no operation finished in the allocation phase");
    }
    return (after - before) / ((double) done.get() * bytesPerOp);
  }

  @Override
  public void close() throws IOException {
    connector.close();
  }
}
