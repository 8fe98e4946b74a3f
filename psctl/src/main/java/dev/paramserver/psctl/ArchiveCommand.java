package dev.paramserver.psctl;

import dev.paramserver.localcluster.ClassDataArchives;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.psctl.startup.BootJarLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code psctl archive --jar PSCTL_JAR --launch-file FILE} (hidden; bin/psctl runs it once per
 * build of psctl and Java): makes psctl's start-up archive as {@link ClassDataArchives} makes the
 * services' (an AOT cache on Java 24 and later, else a class-data archive), recorded by a training
 * run of {@link WarmUpCommand}, and writes the JVM arguments that start psctl from it to {@code
 * FILE}, one a line, for bin/psctl to read without starting a JVM. Without an archive (it could not
 * be made) the file names the jar alone, so psctl still starts, more slowly.
 */
@Command(
    name = "archive",
    hidden = true,
    description = "Make psctl's start-up archive (bin/psctl runs this once per build and Java).")
public final class ArchiveCommand extends PsctlCommand {
  /**
   * The JVM options psctl runs with, in the training run and afterwards alike (see {@link
   * #jvmOptions(int)}). Reflection through native accessors (Java 18 and later; older ones ignore
   * it) spares a quick command the hundred method-handle classes Jackson's reflective calls would
   * make at run time, which no archive holds: a third of {@code psctl status}'s CPU time. C1 alone
   * compiles, and only what runs 1,000 times ({@link ClusterSpec#START_UP_JIT_OPTIONS}, as the
   * services start): a third of a quick command's CPU time went to C1 compiling code that then ran
   * a few hundred times.
   */
  public static final List<String> JVM_OPTIONS =
      Stream.concat(
              Stream.of(
                  "-XX:TieredStopAtLevel=1",
                  "-XX:+UseSerialGC",
                  "--enable-native-access=ALL-UNNAMED",
                  "-Djdk.reflect.useNativeAccessorOnly=true"),
              ClusterSpec.START_UP_JIT_OPTIONS.stream())
          .toList();

  /**
   * On Java {@value #REPLAY_FEATURE} and later, whose AOT cache holds the training run's method
   * profiles (JEP 515): the JVM does not replay them. Replaying them compiles at start-up what the
   * training run, which ran each quick command twice, found hot; a single command runs it too few
   * times to gain from that.
   */
  static final List<String> NO_PROFILE_REPLAY =
      List.of("-XX:+UnlockDiagnosticVMOptions", "-XX:-AOTReplayTraining");

  /** The first Java whose AOT cache holds method profiles (JEP 515). */
  static final int REPLAY_FEATURE = 25;

  /** {@link #JVM_OPTIONS}, and {@link #NO_PROFILE_REPLAY} on a Java of that feature or later. */
  static List<String> jvmOptions(int javaFeature) {
    List<String> options = new ArrayList<>(JVM_OPTIONS);
    if (javaFeature >= REPLAY_FEATURE) {
      options.addAll(NO_PROFILE_REPLAY);
    }
    return List.copyOf(options);
  }

  @Option(names = "--jar", required = true, paramLabel = "JAR", description = "psctl's exec jar.")
  Path jar;

  @Option(
      names = "--launch-file",
      required = true,
      paramLabel = "FILE",
      description = "Where to write the JVM arguments that launch psctl.")
  Path launchFile;

  @Override
  protected int run() throws Exception {
    if (!Files.isRegularFile(jar)) {
      throw usageError("--jar " + jar + ": no such file");
    }
    String javaBinary = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ClassDataArchives.prepare(
        jar,
        javaBinary,
        (j, app, log) -> BootJarLayout.extract(j, app, Main.class.getName()),
        extracted -> {
          List<String> cmd = new ArrayList<>(jvmOptions(Runtime.version().feature()));
          cmd.addAll(List.of("-jar", extracted.toString(), WarmUpCommand.NAME));
          return cmd;
        });
    ClassDataArchives.Launch launch = ClassDataArchives.launchOf(jar, javaBinary);
    List<String> args = new ArrayList<>(jvmOptions(Runtime.version().feature()));
    args.addAll(launch.jvmOptions());
    args.add("-jar");
    args.add(launch.jar().toString());
    Path parent = launchFile.toAbsolutePath().getParent();
    Files.createDirectories(parent);
    Path tmp = Files.createTempFile(parent, ".launch", ".tmp");
    Files.write(tmp, args, StandardCharsets.UTF_8);
    Files.move(tmp, launchFile, StandardCopyOption.ATOMIC_MOVE);
    err()
        .println(
            launch.archive().isPresent()
                ? "psctl: start-up archive ready (" + launch.archive().get() + ")"
                : "psctl: no start-up archive could be made: psctl starts from its jar");
    err().flush();
    return 0;
  }
}
