package dev.paramserver.localcluster;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Runs a service's executable jar with the shared properties of the cluster plus its own. */
final class JavaServiceCommand implements ServiceCommand {
  static final JavaServiceCommand INSTANCE = new JavaServiceCommand();

  private JavaServiceCommand() {}

  @Override
  public List<String> build(LaunchContext ctx) {
    ClusterSpec spec = ctx.spec();
    Path jar = spec.jar(ctx.role());
    if (jar == null) {
      throw new IllegalStateException(
          "no executable jar configured for role "
              + ctx.role().id()
              + ": build it with ./mvnw -B -DskipTests package and pass its path to"
              + " ClusterSpec.Builder.jar");
    }
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(
          "executable jar of role "
              + ctx.role().id()
              + " not found at "
              + jar
              + ": build it with ./mvnw -B -DskipTests package");
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(spec.javaBinary());
    cmd.addAll(spec.jvmOptions(ctx.role()));
    cmd.add("-jar");
    cmd.add(jar.toString());
    properties(ctx).forEach((key, value) -> cmd.add("--" + key + "=" + value));
    return cmd;
  }

  /**
   * The Spring properties of the process, built-ins first; the spec's extra properties override
   * them (a property repeated on the command line would turn into a comma-joined list in Spring).
   */
  static Map<String, String> properties(LaunchContext ctx) {
    ClusterSpec spec = ctx.spec();
    Map<String, String> props = new LinkedHashMap<>();
    props.put("server.address", "127.0.0.1");
    props.put("server.port", Integer.toString(ctx.httpPort()));
    if (ctx.role().hasGrpcServer()) {
      props.put("grpc.server.address", "127.0.0.1");
      props.put("grpc.server.port", Integer.toString(ctx.grpcPort()));
    }
    props.put("paramserver.job", spec.job());
    props.put("paramserver.etcd.endpoints", ctx.etcdEndpoint());
    props.put("paramserver.admin.token", spec.adminToken());
    props.put("paramserver.advertise-host", "127.0.0.1");
    switch (ctx.role()) {
      case PSERVER -> {
        props.put("paramserver.pserver.desired", Integer.toString(spec.count(Role.PSERVER)));
        props.put(
            "paramserver.pserver.checkpoint-dir",
            spec.runDir().resolve("checkpoints").resolve("pserver-" + ctx.index()).toString());
      }
      case TRAINER -> props.put("paramserver.trainer.id", "trainer-" + ctx.index());
      case MASTER -> {}
    }
    props.putAll(spec.extraProperties(ctx.role()));
    return props;
  }
}
