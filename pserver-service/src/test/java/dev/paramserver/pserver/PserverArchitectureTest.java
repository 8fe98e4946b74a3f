package dev.paramserver.pserver;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.Replica;
import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The shape of the pserver's main code (this module and pserver-core, same packages): the shared
 * rules of every module (test-support's {@link ModuleArchitectureTest}), one owner of the shard's
 * role, and a shard of at most 400 lines.
 */
class PserverArchitectureTest extends ModuleArchitectureTest {
  private static final String MOVES =
      "slot moves: service, outgoing move and its channels in one package; the adapter moves to"
          + " pserver.grpc with issue 45 item 4 (the move code is being changed on another branch)";
  private static final String REPLICATION =
      "replication: the primary streams to its backups over gRPC; the adapter moves to"
          + " pserver.grpc with issue 45 item 4 (being changed on another branch)";

  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.pserver")
        .alsoModule("../pserver-core", "dev.paramserver.pserver")
        .grpcPackage(
            "dev.paramserver.pserver",
            "PserverConfiguration tunes the Netty gRPC server (the wiring of every package)")
        .grpcPackage("dev.paramserver.pserver.placement", MOVES)
        .adapterOutsideAdapterPackages(
            "dev.paramserver.pserver.placement.SlotMovesGrpcService", MOVES)
        .grpcPackage("dev.paramserver.pserver.replication", REPLICATION)
        .adapterOutsideAdapterPackages(
            "dev.paramserver.pserver.replication.ShardReplicationGrpcService", REPLICATION)
        .grpcPackage(
            "dev.paramserver.pserver.k8s",
            "the Kubernetes hooks find the leader master over gRPC (LeaderMaster)")
        .adapterOutsideAdapterPackages(
            "dev.paramserver.pserver.k8s.PreStopController",
            "Kubernetes' pre-stop endpoint, kept beside the drain it starts")
        .adapterOutsideAdapterPackages(
            "dev.paramserver.pserver.admin.CheckpointController",
            "the pserver's admin endpoints (checkpoints); a web package is issue 45 item 4");
  }

  @Test
  void roleChangingOperationsOfTheShard_areCalledOnlyByTheRoleLifecycle() {
    noClasses()
        .that()
        .resideOutsideOfPackages(
            "dev.paramserver.pserver.role..", "dev.paramserver.pserver.shard..")
        .should()
        .callMethod(ParameterShard.class, "holdCalls", String.class)
        .orShould()
        .callMethod(ParameterShard.class, "releaseCalls")
        .orShould()
        .callMethod(ParameterShard.class, "setIndex", int.class)
        .orShould()
        .callMethod(ParameterShard.class, "setPservers", int.class)
        .orShould()
        .callMethod(ParameterShard.class, "attachReplica", Replica.class)
        .orShould()
        .callMethod(ParameterShard.class, "beginDraining")
        .because("the shard's role has one owner: ShardLifecycle")
        .check(mainClasses());
  }

  @Test
  void theShard_staysAPassiveStoreOfAtMost400Lines() throws IOException {
    Path shard = Path.of("../pserver-core/src/main/java/dev/paramserver/pserver/shard");
    try (Stream<String> lines = Files.lines(shard.resolve("ParameterShard.java"))) {
      assertThat(lines.count())
          .as("ParameterShard holds parameters and optimizer state; its paths live beside it")
          .isLessThanOrEqualTo(400);
    }
  }
}
