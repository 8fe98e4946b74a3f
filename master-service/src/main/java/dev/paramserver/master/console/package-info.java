/**
 * The job console's model ({@code GET /admin/job}, docs/console.md): {@link
 * dev.paramserver.master.console.JobConsole} is the door for the web adapter (the view, checkpoint
 * and stop); it samples the job ({@code MasterJob}), the pservers and trainers ({@code
 * ClusterProbe}, which reads a pserver's status through {@code PserverStatuses}) and the scaling
 * ({@code ScalingSample}, from the coordinator's typed status) into {@code ConsoleModel}. The HTTP
 * controller is in {@code master.web}.
 */
package dev.paramserver.master.console;
