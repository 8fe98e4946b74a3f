/**
 * The master service (docs/explanation/architecture.md): {@code MasterApplication} starts it and
 * {@code MasterConfiguration} wires the packages below; nothing in them depends on this package.
 * The doors: {@link dev.paramserver.master.task.MasterJob} (the job and its tasks), {@link
 * dev.paramserver.master.election.MasterElection} (who leads), {@link
 * dev.paramserver.master.placement.PlacementCoordinator} (scaling), {@link
 * dev.paramserver.master.console.JobConsole} (the console's view); the adapters are in {@code grpc}
 * and {@code web}.
 */
package dev.paramserver.master;
