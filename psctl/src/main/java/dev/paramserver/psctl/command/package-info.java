/**
 * What every psctl subcommand shares: the base class {@code PsctlCommand} (exit codes, one-line
 * errors, {@code --verbose}), {@code ExitCodes}, the output options ({@code OutputFormat}, {@code
 * FileOutputOptions}) and the root command's {@code GlobalOptions}. It depends on no other psctl
 * package: the command packages build on it, and the root package ({@code Psctl}) lists them.
 */
package dev.paramserver.psctl.command;
