/**
 * The master's HTTP adapters under {@code /admin/job}: {@code JobConsoleController} calls {@code
 * JobConsole} and {@code PlacementCoordinator}; {@code NotLeaderAdvice} is the one answer of a
 * standby (409 naming the leader).
 */
package dev.paramserver.master.web;
