package dev.paramserver.psctl.command;

import java.util.Map;

/**
 * What the {@code psctl} root command gives every subcommand: its global options and the
 * environment its {@code PSCTL_*} defaults come from. Owned here and implemented by the root
 * command, so that {@link PsctlCommand} reads them without depending on the package that lists the
 * subcommands.
 */
public interface GlobalOptions {
  /** Whether {@code --verbose} was given (before or after the subcommand name). */
  boolean verbose();

  /** The environment psctl reads its PSCTL_* defaults from. */
  Map<String, String> env();
}
