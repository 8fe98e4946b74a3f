/**
 * The master's {@code paramserver.master.*} settings: {@link
 * dev.paramserver.master.config.MasterProperties}, read by every package that needs a setting (the
 * scaling's own are {@link dev.paramserver.master.placement.ScalingProperties}). It depends on no
 * other package of the master.
 */
package dev.paramserver.master.config;
