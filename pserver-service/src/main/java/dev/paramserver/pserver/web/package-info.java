/**
 * The pserver's HTTP adapters: {@code CheckpointController} answers {@code POST /admin/checkpoint}
 * over the checkpoint service ({@code persistence.CheckpointService}); {@code PreStopController}
 * answers the pod's preStop call ({@code GET /k8s/pre-stop}) over {@code k8s.PreStopHook}. They
 * convert and answer; the work is done by the classes they call.
 */
package dev.paramserver.pserver.web;
