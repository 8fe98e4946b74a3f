package dev.paramserver.trainer.config;

/**
 * Settings of a trainer agent ({@code paramserver.trainer.*}), grouped by concern. Every group
 * binds its own keys directly under {@code paramserver.trainer}, so the keys stay flat ({@code
 * paramserver.trainer.learning-rate}, not {@code ...optimizer.learning-rate}).
 *
 * @param agent the process: id, seed, logging, exit
 * @param data what is read: training and test globs, batch size, prefetch
 * @param model the model trained and where it is written
 * @param optimizer how gradients become updates
 * @param communication calls to the master and the pservers: mode, blocks, wire type, deadlines
 */
public record TrainerProperties(
    AgentProperties agent,
    DataProperties data,
    ModelProperties model,
    OptimizerProperties optimizer,
    CommunicationProperties communication) {

  /** This trainer's id. */
  public String id() {
    return agent.id();
  }
}
