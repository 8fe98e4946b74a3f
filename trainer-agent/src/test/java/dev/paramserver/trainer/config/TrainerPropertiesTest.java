package dev.paramserver.trainer.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Mlp;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.service.ConfigurationFailureAnalyzer;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.validation.autoconfigure.ValidationAutoConfiguration;
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
            "paramserver.trainer.gradient-dtype=bfloat16",
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
              assertThat(p.model().model()).isEqualTo(ModelType.MLP);
              assertThat(p.model().features()).isEqualTo(784);
              assertThat(p.model().classes()).isEqualTo(10);
              assertThat(p.model().hidden()).containsExactly(128, 64);
              assertThat(p.model().activation()).isEqualTo(Mlp.Activation.TANH);
              assertThat(p.model().embeddingWidth()).isEqualTo(16);
              assertThat(p.model().modelOutput()).isEqualTo("/out/model.bin");
              assertThat(p.optimizer().optimizer()).isEqualTo(OptimizerKind.ADAM);
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
    runner
        .withPropertyValues("paramserver.trainer.train-data=/d/*.recordio")
        .run(
            ctx -> {
              TrainerProperties p = ctx.getBean(TrainerProperties.class);
              assertThat(p.id()).isNotBlank();
              assertThat(p.model().model()).isEqualTo(ModelType.SOFTMAX);
              assertThat(p.optimizer().optimizer()).isEqualTo(OptimizerKind.SGD);
              assertThat(p.optimizer().learningRate()).isEqualTo(0.1f);
              assertThat(p.data().batchSize()).isEqualTo(64);
              assertThat(p.communication().blockSize()).isEqualTo(262144);
              assertThat(p.communication().rpcTimeout()).isEqualTo(Duration.ofSeconds(10));
              assertThat(p.communication().pipelined()).isTrue();
              assertThat(p.agent().exitWhenDone()).isTrue();
              assertThat(p.communication().mode()).isEqualTo(TrainingModeSetting.ASYNC);
              assertThat(p.optimizer().lrSchedule()).isEqualTo(LrScheduleKind.CONSTANT);
              assertThat(p.optimizer().beta1()).isEqualTo(0.9f);
              assertThat(p.optimizer().beta2()).isEqualTo(0.999f);
              assertThat(p.optimizer().sparse()).isEqualTo(OptimizerProperties.Sparse.SAME);
              assertThat(p.model().initFrom()).isNull();
            });
  }

  /** The reason the service reports when it does not start with {@code properties}. */
  private String failure(String... properties) {
    String[] all = new String[properties.length + 1];
    all[0] = "paramserver.trainer.train-data=/d/*.recordio";
    System.arraycopy(properties, 0, all, 1, properties.length);
    String[] reason = new String[1];
    runner
        .withPropertyValues(all)
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              reason[0] = ConfigurationFailureAnalyzer.reason(ctx.getStartupFailure());
            });
    return reason[0];
  }

  @Test
  void closedSets_bindCaseInsensitively_withRelaxedNames() {
    runner
        .withPropertyValues(
            "paramserver.trainer.train-data=/d/*.recordio",
            "paramserver.trainer.model=Sparse-LR",
            "paramserver.trainer.optimizer=ADAMW",
            "paramserver.trainer.gradient-dtype=Float16",
            "paramserver.trainer.lr-schedule=warmup_cosine",
            "paramserver.trainer.lr-warmup-steps=10",
            "paramserver.trainer.lr-total-steps=100",
            "paramserver.trainer.mode=bounded-staleness",
            "paramserver.trainer.activation=TANH")
        .run(
            ctx -> {
              TrainerProperties p = ctx.getBean(TrainerProperties.class);
              assertThat(p.model().model()).isEqualTo(ModelType.SPARSE_LR);
              assertThat(p.model().model().id()).isEqualTo("sparse-lr");
              assertThat(p.optimizer().optimizer()).isEqualTo(OptimizerKind.ADAMW);
              assertThat(p.communication().gradientWireType()).isEqualTo(DataType.FLOAT16);
              assertThat(p.optimizer().lrSchedule()).isEqualTo(LrScheduleKind.WARMUP_COSINE);
              assertThat(p.communication().mode()).isEqualTo(TrainingModeSetting.BOUNDED_STALENESS);
              assertThat(p.communication().staleness()).isEqualTo(4);
              assertThat(p.model().activation()).isEqualTo(Mlp.Activation.TANH);
            });
  }

  @Test
  void unknownValueOfAClosedSet_namesThePropertyAndTheAllowedValues() {
    assertThat(failure("paramserver.trainer.optimizer=lion"))
        .isEqualTo(
            "paramserver.trainer.optimizer 'lion' is not valid: choose one of sgd, momentum,"
                + " nesterov, adam, adamw, adagrad, rmsprop, adadelta");
    assertThat(failure("paramserver.trainer.model=cnn"))
        .isEqualTo(
            "paramserver.trainer.model 'cnn' is not valid: choose one of softmax, mlp, sparse-lr");
    assertThat(failure("paramserver.trainer.gradient-dtype=int8"))
        .isEqualTo(
            "paramserver.trainer.gradient-dtype 'int8' is not valid: choose one of float32,"
                + " float16, bfloat16");
    assertThat(failure("paramserver.trainer.lr-schedule=cosine"))
        .isEqualTo(
            "paramserver.trainer.lr-schedule 'cosine' is not valid: choose one of constant, step,"
                + " exponential, warmup-cosine, warmup-linear");
    assertThat(failure("paramserver.trainer.mode=semi"))
        .isEqualTo(
            "paramserver.trainer.mode 'semi' is not valid: choose one of async, sync,"
                + " bounded-staleness");
    assertThat(failure("paramserver.trainer.activation=sigmoid"))
        .isEqualTo(
            "paramserver.trainer.activation 'sigmoid' is not valid: choose one of relu, tanh");
    assertThat(failure("paramserver.trainer.sparse.optimizer=lion"))
        .isEqualTo(
            "paramserver.trainer.sparse.optimizer 'lion' is not valid: choose one of sgd,"
                + " momentum, nesterov, adam, adamw, adagrad, rmsprop, adadelta");
  }

  @Test
  void outOfBounds_namesThePropertyTheBoundAndTheValue() {
    assertThat(failure("paramserver.trainer.batch-size=0"))
        .isEqualTo("paramserver.trainer.batch-size must be greater than or equal to 1, got '0'");
    assertThat(failure("paramserver.trainer.beta1=1"))
        .isEqualTo("paramserver.trainer.beta1 must be less than 1, got '1.0'");
    assertThat(failure("paramserver.trainer.sparse.learning-rate=-1"))
        .isEqualTo("paramserver.trainer.sparse.learning-rate must be greater than 0, got '-1.0'");
    assertThat(failure("paramserver.trainer.batch-size=many"))
        .startsWith("paramserver.trainer.batch-size 'many' is not valid: expected a whole number");
  }

  @Test
  void emptyTrainData_isRefused() {
    String[] reason = new String[1];
    runner.run(ctx -> reason[0] = ConfigurationFailureAnalyzer.reason(ctx.getStartupFailure()));
    assertThat(reason[0]).isEqualTo("paramserver.trainer.train-data must not be empty, got '[]'");
  }

  @Test
  void settingsThatDependOnEachOther_areCheckedTogether() {
    assertThat(failure("paramserver.trainer.lr-schedule=step"))
        .isEqualTo(
            "paramserver.trainer.lr-schedule=step needs paramserver.trainer.lr-step-size > 0,"
                + " got 0");
    assertThat(
            failure(
                "paramserver.trainer.lr-schedule=warmup-linear",
                "paramserver.trainer.lr-warmup-steps=100",
                "paramserver.trainer.lr-total-steps=100"))
        .isEqualTo(
            "paramserver.trainer.lr-schedule=warmup-linear needs paramserver.trainer.lr-total-steps"
                + " > paramserver.trainer.lr-warmup-steps, got lr-total-steps=100"
                + " lr-warmup-steps=100");
    assertThat(
            failure("paramserver.trainer.sync=true", "paramserver.trainer.mode=bounded-staleness"))
        .isEqualTo(
            "paramserver.trainer.sync=true contradicts"
                + " paramserver.trainer.mode=bounded-staleness: set only mode");
  }

  @Test
  void syncFlag_meansModeSync() {
    runner
        .withPropertyValues(
            "paramserver.trainer.train-data=/d/*.recordio", "paramserver.trainer.sync=true")
        .run(
            ctx -> {
              CommunicationProperties c = ctx.getBean(TrainerProperties.class).communication();
              assertThat(c.mode()).isEqualTo(TrainingModeSetting.SYNC);
              assertThat(c.sync()).isTrue();
            });
    runner
        .withPropertyValues(
            "paramserver.trainer.train-data=/d/*.recordio", "paramserver.trainer.mode=sync")
        .run(
            ctx ->
                assertThat(ctx.getBean(TrainerProperties.class).communication().sync()).isTrue());
  }

  @Test
  void badValues_failAtStart_namingTheKey() {
    runner
        .withPropertyValues(
            "paramserver.trainer.train-data=/d/*.recordio", "paramserver.trainer.batch-size=0")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("paramserver.trainer.batch-size"));
    runner
        .withPropertyValues(
            "paramserver.trainer.train-data=/d/*.recordio", "paramserver.trainer.learning-rate=0")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("paramserver.trainer.learning-rate"));
    runner
        .withPropertyValues(
            "paramserver.trainer.train-data=/d/*.recordio", "paramserver.trainer.rpc-timeout=0s")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("paramserver.trainer.rpc-timeout must be positive"));
  }
}
