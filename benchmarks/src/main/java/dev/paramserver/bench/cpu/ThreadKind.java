package dev.paramserver.bench.cpu;

/**
 * What a thread of a sampled process does, told by its name as {@code /proc/<pid>/task/<tid>/comm}
 * shows it (the JVM's thread name cut to 15 characters).
 */
enum ThreadKind {
  /** The process's training thread ({@code trainer-loop} in a trainer, {@code main} in one JVM). */
  TRAIN,
  /** The JIT: HotSpot's C1 and C2 compiler threads. */
  JIT,
  /** Garbage collection and the VM thread (safepoints). */
  GC,
  /** gRPC's Netty event loops (client {@code grpc-nio-worker}, server {@code grpc-default-wo}). */
  LOOP,
  /** Everything else. */
  OTHER;

  /** The kind of the thread named {@code comm}; {@code trainThread} names the training thread. */
  static ThreadKind of(String comm, String trainThread) {
    if (trainThread != null && !trainThread.isEmpty() && comm.equals(cut(trainThread))) {
      return TRAIN;
    }
    if (comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler")) {
      return JIT;
    }
    if (comm.startsWith("GC Thread")
        || comm.startsWith("G1 ")
        || comm.equals("VM Thread")
        || comm.startsWith("ParGC")) {
      return GC;
    }
    if (comm.startsWith("grpc-nio-worker") || comm.startsWith("grpc-default-wo")) {
      return LOOP;
    }
    return OTHER;
  }

  /** {@code name} as the kernel keeps it: at most 15 characters. */
  private static String cut(String name) {
    return name.length() <= 15 ? name : name.substring(0, 15);
  }
}
