package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.service.CommonProperties;
import org.junit.jupiter.api.Test;

class ConfigurationPropertyNamesTest {
  @Test
  void namesArePrefixedKebabCaseWithNestedRecordsExpanded() {
    assertThat(ConfigurationPropertyNames.of(CommonProperties.class))
        .contains(
            "paramserver.job",
            "paramserver.advertise-host",
            "paramserver.etcd.call-timeout",
            "paramserver.admin.token")
        .doesNotContain("paramserver.etcd", "paramserver.admin");
    assertThat(ConfigurationPropertyNames.of(MasterProperties.class))
        .contains(
            "paramserver.master.chunks-per-task", "paramserver.master.adaptive-timeout.enabled");
  }

  @Test
  void environmentNamesAreSpringBootsCanonicalAndLegacyForms() {
    assertThat(ConfigurationPropertyNames.envNames("paramserver.etcd.call-timeout"))
        .containsExactlyInAnyOrder("PARAMSERVER_ETCD_CALLTIMEOUT", "PARAMSERVER_ETCD_CALL_TIMEOUT");
  }

  @Test
  void roleOfAnImage() {
    assertThat(ServiceRole.ofImage("paramserver/pserver-service:0.1.0-SNAPSHOT"))
        .isEqualTo(ServiceRole.PSERVER);
    assertThat(ServiceRole.ofImage("quay.io/coreos/etcd:v3.5.17")).isNull();
  }
}
