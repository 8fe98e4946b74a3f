/**
 * Run tracking (docs/tracking.md): {@link dev.paramserver.master.tracking.RunTracker} is the door
 * for the console's sampler; it writes the metrics file and TensorBoard events ({@link
 * dev.paramserver.master.tracking.TrackingFiles} says where).
 */
package dev.paramserver.master.tracking;
