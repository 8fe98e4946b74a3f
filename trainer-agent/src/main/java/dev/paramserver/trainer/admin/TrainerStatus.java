package dev.paramserver.trainer.admin;

import dev.paramserver.service.AdminStatusSource;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.training.TrainerLifecycle;
import dev.paramserver.trainer.training.TrainingLoop;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.stereotype.Component;

/** What {@code GET /admin/status} shows for a trainer. */
@Component
class TrainerStatus implements AdminStatusSource {
  private final TrainerProperties props;
  private final TrainerLifecycle lifecycle;

  TrainerStatus(TrainerProperties props, TrainerLifecycle lifecycle) {
    this.props = props;
    this.lifecycle = lifecycle;
  }

  @Override
  public String role() {
    return "trainer";
  }

  @Override
  public String state() {
    TrainingLoop loop = lifecycle.loop();
    return loop == null ? "STARTING" : loop.progress().state().name();
  }

  @Override
  public String identity() {
    return props.id();
  }

  @Override
  public Map<String, Object> details() {
    TrainingLoop loop = lifecycle.loop();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("model", props.model());
    m.put("optimizer", props.optimizer());
    if (loop != null) {
      m.putAll(loop.progress().details());
      if (loop.parameterClient() != null) {
        m.put("bytesPushed", loop.parameterClient().bytesPushed());
        m.put("bytesPulled", loop.parameterClient().bytesPulled());
        m.put("droppedPushes", loop.parameterClient().droppedPushes());
      }
    }
    return m;
  }
}
