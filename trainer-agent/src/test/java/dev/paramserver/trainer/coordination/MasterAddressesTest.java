package dev.paramserver.trainer.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class MasterAddressesTest {
  @Test
  void failed_withALeaderHint_goesToTheLeaderNamed() {
    MasterAddresses m = new MasterAddresses(List.of("a:1", "b:2", "c:3"));
    m.failed("a:1", "c:3");
    assertThat(m.current()).contains("c:3");
  }

  @Test
  void failed_withoutAHint_goesRoundTheConfiguredList() {
    MasterAddresses m = new MasterAddresses(List.of("a:1", "b:2"));
    m.failed("a:1", null);
    assertThat(m.current()).contains("b:2");
    m.failed("b:2", null);
    assertThat(m.current()).contains("a:1");
  }

  @Test
  void failed_ofAMasterNoLongerInUse_isIgnored() {
    MasterAddresses m = new MasterAddresses(List.of("a:1", "b:2"));
    m.failed("a:1", null);
    m.failed("a:1", null); // a second caller's late report of the same failure
    assertThat(m.current()).contains("b:2");
  }

  @Test
  void aHintNamingTheFailedMasterItself_movesOnInstead() {
    MasterAddresses m = new MasterAddresses(List.of("a:1", "b:2"));
    m.failed("a:1", "a:1");
    assertThat(m.current()).contains("b:2");
  }

  @Test
  void noMasters_isRefusedNamingTheProperty() {
    assertThatThrownBy(() -> new MasterAddresses(List.of()))
        .hasMessageContaining("paramserver.trainer.coordination.masters");
  }
}
