package dev.paramserver.trainer.training;

import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.service.InvalidPropertyException;
import dev.paramserver.service.StartupCheck;
import dev.paramserver.trainer.config.TrainerProperties;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.springframework.stereotype.Component;

/**
 * What the trainer checks before it touches etcd: every local training and test glob matches a
 * file, and a warm-start model file ({@code init-from}) is readable and describes the configured
 * model type. URIs ({@code scheme://...}) are left to the reader that understands them.
 */
@Component
public class TrainerStartupCheck implements StartupCheck {
  private final TrainerProperties props;

  public TrainerStartupCheck(TrainerProperties props) {
    this.props = props;
  }

  @Override
  public void check() {
    globsMatch("paramserver.trainer.train-data", props.data().trainData());
    globsMatch("paramserver.trainer.test-data", props.data().testData());
    String from = props.model().initFrom();
    if (from != null && !from.isBlank()) {
      WarmStart.check(from, props.model().model().id());
    }
  }

  private static void globsMatch(String property, List<String> globs) {
    for (String glob : globs) {
      if (glob.contains("://")) {
        continue;
      }
      String absolute = ModelSpecs.absolute(List.of(glob)).get(0);
      try {
        RecordIndex.expandGlobs(List.of(absolute));
      } catch (IOException e) {
        throw new InvalidPropertyException(
            property,
            property
                + ": no file matches '"
                + glob
                + "'"
                + (glob.equals(absolute)
                    ? ""
                    : " (relative to " + Path.of("").toAbsolutePath() + ")")
                + ": check the path, or create the RecordIO files first (psctl convert)");
      }
    }
  }
}
