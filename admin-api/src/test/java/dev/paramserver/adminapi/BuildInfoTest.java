package dev.paramserver.adminapi;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class BuildInfoTest {
  @Test
  void theBuildWritesTheVersionAndCommit() {
    BuildInfo b = BuildInfo.current();
    assertThat(b.version()).isNotEqualTo("unknown").doesNotContain("@");
    // a build from a git checkout (this one) knows its commit
    assertThat(b.commit()).matches("[0-9a-f]{7,40}");
  }
}
