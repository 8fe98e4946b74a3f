/**
 * Elastic placement (docs/explanation/elastic.md): {@link
 * dev.paramserver.master.placement.PlacementCoordinator} is the door for the web adapter ({@code
 * scale}, {@code growTo}, {@code view}) and the console; it keeps its phase as a {@link
 * dev.paramserver.master.placement.ScalingPhase} (checked transitions) and answers a {@link
 * dev.paramserver.master.placement.ScalingStatus}. Behind it, {@code PlacementPservers} reads the
 * registrations and calls the pservers (status, {@code MoveOut}) through {@code PserverCalls}
 * (implemented in {@code master.grpc}), {@code EmptiedPservers} shuts down what a shrink emptied,
 * and {@code ScalingMetrics} counts the moves.
 */
package dev.paramserver.master.placement;
