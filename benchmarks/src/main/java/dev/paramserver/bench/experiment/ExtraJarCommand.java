package dev.paramserver.bench.experiment;

import dev.paramserver.localcluster.Role;
import dev.paramserver.localcluster.ServiceCommand;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Launches the services as usual, except that the pserver's unchanged exec jar is started through
 * Spring Boot's {@code PropertiesLauncher} with {@code -Dloader.path=<extra jar>}, so the classes
 * of the extra jar (for example {@link TunedGrpcServerConfiguration}) join its application.
 */
public final class ExtraJarCommand implements ServiceCommand {
  private final Path extraJar;
  private final int onlyIndex;

  /**
   * @param onlyIndex the one pserver index that gets the extra jar, or -1 for every pserver
   */
  public ExtraJarCommand(Path extraJar, int onlyIndex) {
    this.extraJar = extraJar;
    this.onlyIndex = onlyIndex;
  }

  @Override
  public List<String> build(LaunchContext ctx) {
    List<String> cmd = ServiceCommand.javaServices().build(ctx);
    if (ctx.role() != Role.PSERVER || (onlyIndex >= 0 && ctx.index() != onlyIndex)) {
      return cmd;
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < cmd.size(); i++) {
      if (cmd.get(i).equals("-jar")) {
        out.add("-Dloader.path=" + extraJar);
        out.add("-cp");
        out.add(cmd.get(i + 1));
        out.add("org.springframework.boot.loader.launch.PropertiesLauncher");
        i++;
      } else {
        out.add(cmd.get(i));
      }
    }
    return out;
  }
}
