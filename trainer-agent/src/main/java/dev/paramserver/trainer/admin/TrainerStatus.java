package dev.paramserver.trainer.admin;

import dev.paramserver.service.AdminStatusSource;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.pserver.PserverTraffic;
import dev.paramserver.trainer.training.TrainingProgress;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.stereotype.Component;

/** What {@code GET /admin/status} shows for a trainer. */
@Component
class TrainerStatus implements AdminStatusSource {
  private final TrainerProperties props;
  private final TrainingProgress progress;
  private final PserverTraffic traffic;

  TrainerStatus(TrainerProperties props, TrainingProgress progress, PserverTraffic traffic) {
    this.props = props;
    this.progress = progress;
    this.traffic = traffic;
  }

  @Override
  public String role() {
    return "trainer";
  }

  @Override
  public String state() {
    return progress.state().name();
  }

  @Override
  public String identity() {
    return props.id();
  }

  @Override
  public Map<String, Object> details() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("model", props.model().model().id());
    m.put("optimizer", props.optimizer().optimizer().id());
    m.putAll(progress.details());
    m.put("bytesPushed", traffic.bytesPushed());
    m.put("bytesPulled", traffic.bytesPulled());
    m.put("droppedPushes", traffic.droppedPushes());
    m.put("duplicatePushes", traffic.duplicatePushes());
    Map<String, Long> acknowledged = new LinkedHashMap<>();
    traffic.acknowledgedPushes().forEach((ps, n) -> acknowledged.put(Integer.toString(ps), n));
    m.put("acknowledgedPushes", acknowledged);
    return m;
  }
}
