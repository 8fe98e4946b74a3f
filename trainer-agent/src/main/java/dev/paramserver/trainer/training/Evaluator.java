package dev.paramserver.trainer.training;

import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.master.MasterReports;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Evaluates the model on the test set, with the latest values from the pservers (sparse rows pulled
 * batch by batch), and reports the result to the master. Each pass is evaluated by one trainer of
 * the job, the first to claim it ({@code eval/<pass>} under its membership); see {@link
 * PassEvaluations} for when.
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

  /**
   * Whether this trainer evaluates pass {@code pass}: it claimed {@code eval/<pass>}, or holds it
   * already (the same trainer id, restarted). When the claim cannot be made, yes: an evaluation
   * made twice costs time, one that nobody makes loses the pass's figures.
   */
  boolean elected(TrainingContext ctx, int pass) {
    return ctx.membership().locks().claimEvaluation(pass);
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
    // rows go into tables of the evaluation's own, never the training thread's (its row cache)
    Parameters view = new Parameters();
    for (String name : values.denseNames()) {
      view.putDense(name, values.dense(name));
    }
    for (String t : values.sparseNames()) {
      view.putSparse(t, new Parameters.SparseTable(values.sparse(t).width()));
    }
    Evaluation e =
        Evaluation.of(
            ctx.model(),
            view,
            ctx.testSet(),
            BATCH,
            b -> {
              ctx.prepare(b);
              if (!view.sparseNames().isEmpty()) {
                for (String t : view.sparseNames()) {
                  view.sparse(t).clear();
                }
                ctx.client().pullRows(view, b.sparseIds());
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
