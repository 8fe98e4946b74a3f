package dev.paramserver.trainer.training;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.master.MasterReports;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Evaluates the model on the test set, with the latest values from the pservers (sparse rows pulled
 * batch by batch), and reports the result to the master. Each pass is evaluated by one trainer of
 * the job, the first to claim it in etcd ({@code eval/<pass>} under its lease); see {@link
 * PassEvaluations} for when.
 */
@Component
public class Evaluator {
  private static final Logger log = LoggerFactory.getLogger(Evaluator.class);
  private static final int BATCH = 1024;

  private final MasterReports reports;
  private final TrainingProgress progress;
  private final Coordinator coordinator;
  private final String trainerId;

  public Evaluator(
      MasterReports reports,
      TrainingProgress progress,
      Coordinator coordinator,
      TrainerProperties props) {
    this.reports = reports;
    this.progress = progress;
    this.coordinator = coordinator;
    this.trainerId = props.id();
  }

  /**
   * Whether this trainer evaluates pass {@code pass}: it claimed {@code eval/<pass>}, or holds it
   * already (the same trainer id, restarted). When etcd does not answer, yes: an evaluation made
   * twice costs time, one that nobody makes loses the pass's figures.
   */
  boolean elected(TrainingContext ctx, int pass) {
    String key = coordinator.keys().evaluator(pass);
    byte[] me = trainerId.getBytes(StandardCharsets.UTF_8);
    try {
      if (coordinator.kv().putIfAbsent(key, me, ctx.lease())) {
        return true;
      }
      Optional<byte[]> holder = coordinator.kv().get(key).map(kv -> kv.value());
      if (holder.isPresent() && Arrays.equals(holder.get(), me)) {
        return true;
      }
      log.debug("pass {} is evaluated by trainer {}", pass, holder.map(String::new).orElse("?"));
      return false;
    } catch (RuntimeException e) {
      log.warn("cannot claim the evaluation of pass {} ({}); evaluating it", pass, e.getMessage());
      return true;
    }
  }

  /**
   * Pulls the latest values into {@code values} (which only this thread uses meanwhile), evaluates
   * pass {@code pass} with them and reports it; nothing without test data.
   */
  void evaluate(TrainingContext ctx, Parameters values, int pass) {
    if (ctx.testSet().size() == 0) {
      return;
    }
    ctx.client().pull(values);
    Evaluation e =
        Evaluation.of(
            ctx.model(),
            values,
            ctx.testSet(),
            BATCH,
            b -> {
              ctx.prepare(b);
              if (!values.sparseNames().isEmpty()) {
                for (String t : values.sparseNames()) {
                  values.sparse(t).rows().clear();
                }
                ctx.client().pullRows(values, b.sparseIds());
              }
            });
    progress.evaluation(e.loss(), e.accuracy());
    log.info(
        String.format(
            Locale.ROOT,
            "pass %d evaluation: loss %.4f accuracy %.4f on %d test examples",
            pass,
            e.loss(),
            e.accuracy(),
            e.samples()));
    reports.evaluation(pass, e.loss(), e.accuracy(), e.samples(), e.auc());
  }
}
