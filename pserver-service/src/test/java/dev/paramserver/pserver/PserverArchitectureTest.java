package dev.paramserver.pserver;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.fields;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noFields;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.IndexHolder;
import dev.paramserver.pserver.shard.MovingSlots;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.Replica;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.arch.ModuleArchitectureTest;
import dev.paramserver.testsupport.arch.ModuleRules;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The shape of the pserver's main code (this module and pserver-core, same packages): the shared
 * rules of every module (test-support's {@link ModuleArchitectureTest}), one owner of the shard's
 * role, one holder of each fact of the shard (its index, the backup relation, the committed
 * placement, a backup's "synced") with its setter called by one class, and a shard of at most 400
 * lines.
 */
class PserverArchitectureTest extends ModuleArchitectureTest {

  @Override
  protected ModuleRules rules() {
    return ModuleRules.forRootPackage("dev.paramserver.pserver")
        .alsoModule("../pserver-core", "dev.paramserver.pserver")
        .grpcPackage(
            "dev.paramserver.pserver",
            "PserverConfiguration tunes the Netty gRPC server (the wiring of every package)")
        .grpcPackage(
            "dev.paramserver.pserver.placement",
            "a move's old owner streams the slots to the new one over gRPC (OutgoingMove's"
                + " client call, IncomingMove's stream, refusals as FAILED_PRECONDITION)")
        .grpcPackage(
            "dev.paramserver.pserver.replication",
            "the primary streams records and copies to its backups over gRPC (PrimaryReplicator,"
                + " CopyUpload, RegisteredBackup's channel)")
        .grpcPackage(
            "dev.paramserver.pserver.k8s",
            "the Kubernetes hooks find the leader master over gRPC (LeaderMaster)");
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
        .callMethod(ParameterShard.class, "indexFrom", IndexHolder.class)
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
  void theIndexServedAndTheBackupRelation_areHeldByTheLifecycleAlone() {
    fields()
        .that()
        .haveNameMatching("index|backupOf|lastShard")
        .and()
        .areDeclaredInClassesThat()
        .resideOutsideOfPackages("dev.paramserver.pserver.role..", "dev.paramserver.pserver.wal..")
        .should()
        .beFinal()
        .because(
            "ShardLifecycle holds which index this pserver serves and which shard it backs up;"
                + " a field elsewhere is the index an object was made for, never a copy that"
                + " follows the lifecycle's (the shard asks it: IndexHolder)")
        .allowEmptyShould(true)
        .check(mainClasses());
  }

  @Test
  void theCommittedPlacement_isHeldByTheShard_andWrittenByThePlacementFollowerAlone() {
    noFields()
        .that()
        .areDeclaredInClassesThat()
        .resideOutsideOfPackage("dev.paramserver.pserver.shard..")
        .should()
        .haveRawType(SlotMap.class)
        .because("the shard's gate holds the committed map; the placement follower writes it")
        .check(mainClasses());
    noClasses()
        .that()
        .doNotHaveFullyQualifiedName("dev.paramserver.pserver.placement.PlacementFollower")
        .should()
        .callMethod(
            ShardMoves.class, "setPlacement", SlotMap.class, MovingSlots.class, MovingSlots.class)
        .because("the placement and the moves in progress have one writer: PlacementFollower")
        .check(mainClasses());
  }

  @Test
  void aBackupsSyncedFact_isToldToTheLifecycleByTheBackupReplicaAlone() {
    noClasses()
        .that()
        .doNotHaveFullyQualifiedName("dev.paramserver.pserver.replication.BackupReplica")
        .should()
        .callMethod(ShardLifecycle.class, "backupSynced", int.class, boolean.class)
        .because("whether a backup holds every update is held by BackupReplica's BackupPhase")
        .check(mainClasses());
    noClasses()
        .that()
        .resideOutsideOfPackage("dev.paramserver.pserver.replication..")
        .should()
        .callMethod(ShardLifecycle.class, "beginTakeover", int.class)
        .orShould()
        .callMethod(ShardLifecycle.class, "takeoverAborted", boolean.class)
        .orShould()
        .callMethod(ShardLifecycle.class, "takeoverInstalled")
        .orShould()
        .callMethod(ShardLifecycle.class, "backup", int.class)
        .because("the backup relation changes through replication only")
        .check(mainClasses());
  }

  @Test
  void noPackage_isSplitBetweenPserverCoreAndThisModule() throws IOException {
    Set<String> core = packagesOf(Path.of("../pserver-core/src/main/java"));
    Set<String> service = packagesOf(Path.of("src/main/java"));
    assertThat(service)
        .as("packages of pserver-service that pserver-core has too (one package, one module)")
        .doesNotContainAnyElementsOf(core);
  }

  @Test
  void everyPackageOfTheShard_saysWhichClassIsTheDoorForWhom() throws IOException {
    for (Path root :
        new Path[] {Path.of("../pserver-core/src/main/java"), Path.of("src/main/java")}) {
      for (String p : packagesOf(root)) {
        assertThat(root.resolve(p.replace('.', '/')).resolve("package-info.java"))
            .as("package-info.java of %s", p)
            .exists();
      }
    }
  }

  @Test
  void theShardsDomain_linksNoEtcdClientNorNetworkStack() {
    JavaClasses core =
        new ClassFileImporter().importPath(Path.of("../pserver-core/target/classes"));
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "io.etcd..", "io.netty..", "io.grpc..", "io.vertx..", "dev.paramserver.etcd..")
        .because(
            "pserver-core is the shard's domain: etcd stays behind interfaces it owns"
                + " (CheckpointPointers), gRPC in pserver-service's adapters")
        .check(core);
  }

  private static Set<String> packagesOf(Path sources) throws IOException {
    try (Stream<Path> files = Files.walk(sources)) {
      return files
          .filter(f -> f.toString().endsWith(".java"))
          .map(f -> sources.relativize(f.getParent()).toString().replace('/', '.'))
          .collect(Collectors.toCollection(TreeSet::new));
    }
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
