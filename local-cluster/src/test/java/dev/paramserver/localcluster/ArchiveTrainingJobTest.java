package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ArchiveTrainingJobTest {
  private static final String JAVA = "/opt/java"; // version unknown: CDS archives, not AOT caches

  @TempDir Path dir;
  private final Map<Role, Path> jars = new EnumMap<>(Role.class);

  @BeforeEach
  void setUp() throws Exception {
    System.setProperty("paramserver.cds.dir", dir.resolve("cache").toString());
    for (Role role : Role.values()) {
      jars.put(role, Files.writeString(dir.resolve(role.id() + "-exec.jar"), "jar of " + role));
    }
  }

  @AfterEach
  void tearDown() {
    System.clearProperty("paramserver.cds.dir");
  }

  private ClusterSpec spec() {
    ClusterSpec.Builder b =
        ClusterSpec.builder(dir.resolve("run"))
            .job("real-job")
            .pservers(2)
            .trainers(3)
            .javaBinary(JAVA)
            .archiveTrainingJob(true);
    jars.forEach(b::jar);
    return b.build();
  }

  /** Gives {@code role}'s jar a ready archive entry, as a finished recording leaves it. */
  private Path readyEntry(Role role) throws Exception {
    Path entry = dir.resolve("cache").resolve(ClassDataArchives.key(jars.get(role), JAVA));
    Path extracted =
        Files.createDirectories(entry.resolve("app")).resolve(jars.get(role).getFileName());
    Files.writeString(extracted, "extracted");
    Files.writeString(entry.resolve("app.jsa"), "archive");
    Files.writeString(entry.resolve("ready"), "");
    return entry;
  }

  @Test
  void theJob_recordsTheMissingArchives_andStartsTheOthersFromTheirs() throws Exception {
    ClusterSpec spec = spec();
    Path pserverEntry = readyEntry(Role.PSERVER);
    // the master and the trainer are recorded: extracted (here by a stand-in), locked
    Map<Role, ClassDataArchives.Recording> recordings = new EnumMap<>(Role.class);
    for (Role role : new Role[] {Role.MASTER, Role.TRAINER}) {
      recordings.put(
          role,
          ClassDataArchives.begin(
                  jars.get(role),
                  JAVA,
                  (jar, app, log) -> {
                    Files.createDirectories(app);
                    Files.writeString(app.resolve(jar.getFileName()), "extracted");
                  })
              .orElseThrow());
    }
    Path jobDir = dir.resolve("run").resolve("class-data-training");

    ClusterSpec job = ArchiveTrainingJob.trainingSpec(spec, jobDir, recordings);

    // one of each, on its own job, in its own folder, with the run's Java
    assertThat(job.runDir()).isEqualTo(jobDir);
    assertThat(job.job()).isEqualTo("class-data");
    for (Role role : ArchiveTrainingJob.ROLES) {
      assertThat(job.count(role)).as(role.id()).isEqualTo(1);
    }
    assertThat(job.count(Role.SERVING)).as("serving replicas").isZero();
    assertThat(job.javaBinary()).isEqualTo(JAVA);
    assertThat(job.classDataSharing()).isFalse();
    for (Role role : recordings.keySet()) {
      ClassDataArchives.Recording r = recordings.get(role);
      assertThat(job.jar(role)).isEqualTo(r.extractedJar());
      assertThat(job.jvmOptions(role))
          .startsWith(r.recordOptions().toArray(String[]::new))
          .containsSubsequence(spec.jvmOptions(role))
          .anyMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit="));
    }
    // the pserver has its archive: it runs from it and records nothing
    assertThat(job.jar(Role.PSERVER))
        .isEqualTo(pserverEntry.resolve("app").resolve(jars.get(Role.PSERVER).getFileName()));
    assertThat(job.jvmOptions(Role.PSERVER))
        .contains("-XX:SharedArchiveFile=" + pserverEntry.resolve("app.jsa"))
        .noneMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit"));
    // a short job on demo data written into the job's folder
    assertThat(job.extraProperties(Role.MASTER)).containsEntry("paramserver.master.passes", "1");
    assertThat(job.extraProperties(Role.TRAINER).get("paramserver.trainer.train-data"))
        .startsWith(jobDir.resolve("data").toString());
    recordings.values().forEach(ClassDataArchives::abandon);
    assertThat(dir.resolve("cache").resolve(ClassDataArchives.key(jars.get(Role.MASTER), JAVA)))
        .doesNotExist();
  }

  @Test
  void withoutEveryServicesJar_noJobRuns() throws Exception {
    ClusterSpec.Builder b =
        ClusterSpec.builder(dir.resolve("run")).javaBinary(JAVA).archiveTrainingJob(true);
    b.jar(Role.MASTER, jars.get(Role.MASTER));
    b.jar(Role.PSERVER, jars.get(Role.PSERVER));

    assertThat(ArchiveTrainingJob.run(b.build())).isFalse();
    assertThat(dir.resolve("run").resolve("class-data-training")).doesNotExist();
  }

  @Test
  void withEveryArchiveMade_noJobRuns() throws Exception {
    for (Role role : Role.values()) {
      readyEntry(role);
    }
    assertThat(ArchiveTrainingJob.run(spec())).isFalse();
    assertThat(dir.resolve("run").resolve("class-data-training")).doesNotExist();
  }
}
