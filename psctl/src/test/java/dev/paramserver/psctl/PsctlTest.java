package dev.paramserver.psctl;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PsctlTest {
  @Test
  void subcommandNames_areTheClassesOwn() {
    Psctl.SUBCOMMANDS.forEach(
        (name, type) ->
            assertThat(type.getAnnotation(picocli.CommandLine.Command.class).name())
                .as("%s", type)
                .isEqualTo(name));
  }

  @Test
  void aCommandLineForOneSubcommand_loadsThatOneOnly_andHelpLoadsAll() {
    assertThat(
            Psctl.commandLine(java.util.Map.of(), new String[] {"--verbose", "version", "--client"})
                .getSubcommands())
        .containsOnlyKeys("version");
    assertThat(Psctl.commandLine(java.util.Map.of(), new String[] {"--help"}).getSubcommands())
        .containsKeys("status", "convert", "help");
    assertThat(Psctl.commandLine(java.util.Map.of(), new String[] {"stauts"}).getSubcommands())
        .hasSize(Psctl.SUBCOMMANDS.size());
    Run r = Run.psctl("version", "--client");
    assertThat(r.code()).isZero();
  }

  @Test
  void noSubcommand_isUsageError() {
    Run r = Run.psctl();
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("missing subcommand").contains("convert").contains("inspect");
  }

  @Test
  void unknownOption_printsOneLineAndExits2() {
    Run r = Run.psctl("convert", "--input", "a.csv", "--out", "o", "--bogus");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).startsWith("psctl convert: ").contains("--bogus").contains("--help");
  }

  @Test
  void badCompressor_isUsageErrorNamingTheValue() {
    Run r = Run.psctl("demo-data", "--out", "x", "--compressor", "lz4");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("unknown compressor 'lz4': expected one of none, gzip, snappy");
  }

  @Test
  void plainCommandLine_keepsExitCodes() {
    assertThat(Run.plain("convert").code()).isEqualTo(2);
    Run r = Run.plain("inspect", "/nonexistent/dir/*.recordio");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err().strip())
        .isEqualTo("psctl inspect: no file matches '/nonexistent/dir/*.recordio'");
  }

  @Test
  void verbose_addsStackTrace_beforeOrAfterSubcommand() {
    Run quiet = Run.psctl("inspect", "/nonexistent.recordio");
    assertThat(quiet.err()).doesNotContain("\tat ");
    Run after = Run.psctl("inspect", "--verbose", "/nonexistent.recordio");
    assertThat(after.code()).isEqualTo(1);
    assertThat(after.err()).contains("\tat ");
    Run before = Run.psctl("--verbose", "inspect", "/nonexistent.recordio");
    assertThat(before.err()).contains("\tat ");
  }

  @Test
  void version_andHelp_exit0() {
    assertThat(Run.psctl("--version").out()).startsWith("psctl ");
    Run help = Run.psctl("convert", "--help");
    assertThat(help.code()).isZero();
    assertThat(help.out()).contains("--label-column").contains("--index-base");
  }
}
