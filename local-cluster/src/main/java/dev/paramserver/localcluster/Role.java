package dev.paramserver.localcluster;

import java.util.Locale;

/** The kinds of service process a {@link LocalCluster} runs. */
public enum Role {
  MASTER("master-service", true),
  PSERVER("pserver-service", true),
  TRAINER("trainer-agent", false),
  /** A read replica of the model (serving-service), started by {@code run-local --serving N}. */
  SERVING("serving-service", true);

  private final String module;
  private final boolean grpcServer;

  Role(String module, boolean grpcServer) {
    this.module = module;
    this.grpcServer = grpcServer;
  }

  /**
   * The lower-case name used in logs, file names and cluster.json: master, pserver, trainer,
   * serving.
   */
  public String id() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The Maven module that builds this role's executable jar. */
  public String module() {
    return module;
  }

  /** Whether processes of this role serve gRPC (and so get a gRPC port). */
  public boolean hasGrpcServer() {
    return grpcServer;
  }

  /**
   * The role for {@code master}, {@code pserver}, {@code trainer} or {@code serving} (any case).
   */
  public static Role parse(String text) {
    for (Role role : values()) {
      if (role.id().equalsIgnoreCase(text.trim())) {
        return role;
      }
    }
    throw new IllegalArgumentException(
        "unknown role '" + text + "': expected master, pserver, trainer or serving");
  }
}
