package dev.paramserver.trainer.training;

import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.master.MasterReports;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Evaluates the model on the test set at the end of a pass, with the latest values from the
 * pservers (sparse rows pulled batch by batch), and reports the result to the master.
 */
@Component
public class Evaluator {
  private static final Logger log = LoggerFactory.getLogger(Evaluator.class);
  private static final int BATCH = 1024;

  private final MasterReports reports;
  private final TrainingProgress progress;

  public Evaluator(MasterReports reports, TrainingProgress progress) {
    this.reports = reports;
    this.progress = progress;
  }

  /** Evaluates and reports pass {@code pass}; nothing without test data. */
  void evaluate(TrainingContext ctx, int pass) {
    if (ctx.testSet().size() == 0) {
      return;
    }
    progress.moveTo(TrainerState.EVALUATING);
    Parameters values = ctx.values();
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
