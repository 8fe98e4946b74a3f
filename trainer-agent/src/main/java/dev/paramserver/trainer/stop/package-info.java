/**
 * The trainer's one way of saying "stop": {@code StopSignal}, which every wait, pause and retry
 * loop of the trainer asks. It sits below every other package of the trainer, so that all of them
 * may use it without a cycle through the root package.
 */
package dev.paramserver.trainer.stop;
