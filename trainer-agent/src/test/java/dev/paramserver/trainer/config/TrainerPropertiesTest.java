package dev.paramserver.trainer.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.DataType;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.validation.ValidationAutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/** The settings groups bind the flat {@code paramserver.trainer.*} keys users already pass. */
class TrainerPropertiesTest {
  @Configuration(proxyBeanMethods = false)
  @EnableConfigurationProperties({
    AgentProperties.class,
    DataProperties.class,
    ModelProperties.class,
    OptimizerProperties.class,
    CommunicationProperties.class
  })
  @Import(TrainerConfiguration.class)
  static class Config {}

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(ValidationAutoConfiguration.class))
          .withUserConfiguration(Config.class);

  @Test
  void everyExistingKey_bindsToItsGroup() {
    runner
        .withPropertyValues(
            "paramserver.trainer.id=t7",
            "paramserver.trainer.train-data=/d/train-*.recordio,/e/*.recordio",
            "paramserver.trainer.test-data=/d/test.recordio",
            "paramserver.trainer.model=mlp",
            "paramserver.trainer.features=784",
            "paramserver.trainer.classes=10",
            "paramserver.trainer.hidden=128,64",
            "paramserver.trainer.activation=tanh",
            "paramserver.trainer.optimizer=adam",
            "paramserver.trainer.learning-rate=0.01",
            "paramserver.trainer.momentum=0.5",
            "paramserver.trainer.weight-decay=0.001",
            "paramserver.trainer.batch-size=32",
            "paramserver.trainer.block-size=1024",
            "paramserver.trainer.sync=true",
            "paramserver.trainer.model-output=/out/model.bin",
            "paramserver.trainer.rpc-timeout=3s",
            "paramserver.trainer.log-every=7",
            "paramserver.trainer.seed=9",
            "paramserver.trainer.exit-when-done=false",
            "paramserver.trainer.max-backoff=2s",
            "paramserver.trainer.accumulate=4",
            "paramserver.trainer.gradient-dtype=bf16",
            "paramserver.trainer.prefetch=false",
            "paramserver.trainer.embedding-width=16",
            "paramserver.trainer.pipeline=false")
        .run(
            ctx -> {
              TrainerProperties p = ctx.getBean(TrainerProperties.class);
              assertThat(p.id()).isEqualTo("t7");
              assertThat(p.agent().seed()).isEqualTo(9);
              assertThat(p.agent().logEvery()).isEqualTo(7);
              assertThat(p.agent().exitWhenDone()).isFalse();
              assertThat(p.data().trainData())
                  .containsExactly("/d/train-*.recordio", "/e/*.recordio");
              assertThat(p.data().testData()).containsExactly("/d/test.recordio");
              assertThat(p.data().batchSize()).isEqualTo(32);
              assertThat(p.data().prefetch()).isFalse();
              assertThat(p.model().model()).isEqualTo("mlp");
              assertThat(p.model().features()).isEqualTo(784);
              assertThat(p.model().classes()).isEqualTo(10);
              assertThat(p.model().hidden()).containsExactly(128, 64);
              assertThat(p.model().activation()).isEqualTo("tanh");
              assertThat(p.model().embeddingWidth()).isEqualTo(16);
              assertThat(p.model().modelOutput()).isEqualTo("/out/model.bin");
              assertThat(p.optimizer().optimizer()).isEqualTo("adam");
              assertThat(p.optimizer().learningRate()).isEqualTo(0.01f);
              assertThat(p.optimizer().momentum()).isEqualTo(0.5f);
              assertThat(p.optimizer().weightDecay()).isEqualTo(0.001f);
              assertThat(p.optimizer().accumulate()).isEqualTo(4);
              assertThat(p.communication().sync()).isTrue();
              assertThat(p.communication().blockSize()).isEqualTo(1024);
              assertThat(p.communication().rpcTimeout()).isEqualTo(Duration.ofSeconds(3));
              assertThat(p.communication().maxBackoff()).isEqualTo(Duration.ofSeconds(2));
              assertThat(p.communication().gradientWireType()).isEqualTo(DataType.BFLOAT16);
              assertThat(p.communication().pipelined()).isFalse();
            });
  }

  @Test
  void defaults_areThoseDocumented() {
    runner.run(
        ctx -> {
          TrainerProperties p = ctx.getBean(TrainerProperties.class);
          assertThat(p.id()).isNotBlank();
          assertThat(p.model().model()).isEqualTo("softmax");
          assertThat(p.optimizer().optimizer()).isEqualTo("sgd");
          assertThat(p.optimizer().learningRate()).isEqualTo(0.1f);
          assertThat(p.data().batchSize()).isEqualTo(64);
          assertThat(p.communication().blockSize()).isEqualTo(262144);
          assertThat(p.communication().rpcTimeout()).isEqualTo(Duration.ofSeconds(10));
          assertThat(p.communication().pipelined()).isTrue();
          assertThat(p.agent().exitWhenDone()).isTrue();
          assertThat(p.data().trainData()).isEmpty();
        });
  }

  @Test
  void badValues_failAtStart_namingTheKey() {
    runner
        .withPropertyValues("paramserver.trainer.batch-size=0")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("paramserver.trainer.batch-size"));
    runner
        .withPropertyValues("paramserver.trainer.learning-rate=0")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("paramserver.trainer.learning-rate"));
    runner
        .withPropertyValues("paramserver.trainer.rpc-timeout=0s")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("paramserver.trainer.rpc-timeout must be positive"));
  }

  @Test
  void missingTrainData_andUnknownDtype_areNamedWhenUsed() {
    DataProperties data = new DataProperties(null, null, 1, true);
    assertThatThrownBy(data::requireTrainData)
        .hasMessageContaining("paramserver.trainer.train-data is empty");
    CommunicationProperties comm =
        new CommunicationProperties(
            false, 1, "int8", true, 4, Duration.ofSeconds(1), Duration.ofSeconds(1));
    assertThatThrownBy(comm::gradientWireType)
        .hasMessageContaining("paramserver.trainer.gradient-dtype 'int8' is unknown");
  }
}
