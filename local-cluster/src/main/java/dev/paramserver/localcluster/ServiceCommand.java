package dev.paramserver.localcluster;

import java.util.List;

/**
 * Builds the command line of one service process. The default, {@link #javaServices()}, runs the
 * role's executable jar with the cluster's properties; tests of the supervision mechanics may run a
 * trivial long-lived command instead.
 */
@FunctionalInterface
public interface ServiceCommand {

  /** The command (program and arguments) for the process described by {@code context}. */
  List<String> build(LaunchContext context);

  /**
   * What a command needs to know about the process it launches.
   *
   * @param spec the cluster's specification
   * @param role the process's role
   * @param index its index within the role
   * @param httpPort its HTTP port
   * @param grpcPort its gRPC port (0 for roles without a gRPC server)
   * @param etcdEndpoint the etcd client URL
   * @param masters the masters' gRPC addresses ({@code 127.0.0.1:port}), for trainers coordinated
   *     by the master ({@link ClusterSpec#trainersThroughMaster()}); empty when not known
   */
  record LaunchContext(
      ClusterSpec spec,
      Role role,
      int index,
      int httpPort,
      int grpcPort,
      String etcdEndpoint,
      List<String> masters) {
    public LaunchContext {
      masters = List.copyOf(masters);
    }

    /** A context without the masters' addresses. */
    public LaunchContext(
        ClusterSpec spec, Role role, int index, int httpPort, int grpcPort, String etcdEndpoint) {
      this(spec, role, index, httpPort, grpcPort, etcdEndpoint, List.of());
    }
  }

  /** {@code java <jvm options> -jar <role jar> --server.port=... <role properties>}. */
  static ServiceCommand javaServices() {
    return JavaServiceCommand.INSTANCE;
  }
}
