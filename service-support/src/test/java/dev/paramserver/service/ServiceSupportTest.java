package dev.paramserver.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.JobToken;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.service.testapp.NotLeaderMasterService;
import dev.paramserver.service.testapp.TestServiceApp;
import dev.paramserver.testsupport.EtcdExtension;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.micrometer.metrics.test.autoconfigure.AutoConfigureMetrics;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

// metrics export is off in Boot tests unless asked for: the prometheus check needs it
@AutoConfigureMetrics
@SpringBootTest(
    classes = TestServiceApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "paramserver.admin.token=s3cret",
      "spring.application.name=support-test",
      "paramserver.role=tester"
    })
class ServiceSupportTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final ObjectMapper JSON = new ObjectMapper();

  @DynamicPropertySource
  static void etcdProperties(DynamicPropertyRegistry registry) {
    registry.add("paramserver.etcd.endpoints", etcd::endpoint);
    registry.add("paramserver.job", etcd::uniqueJob);
  }

  @LocalServerPort int port;
  @Autowired ApplicationContext context;
  @Autowired Environment environment;
  @Autowired Coordinator coordinator;

  private String url(String path) {
    return "http://127.0.0.1:" + port + path;
  }

  @Test
  void adminStatus_withoutToken_is401WithJsonError() throws Exception {
    HttpResponse<String> r = Http.get(url("/admin/status"), null);
    assertThat(r.statusCode()).isEqualTo(401);
    JsonNode body = JSON.readTree(r.body());
    assertThat(body.get("error").asString()).isEqualTo("unauthorized");
    assertThat(body.get("message").asString()).contains("Authorization");
  }

  @Test
  void adminEndpoints_withWrongToken_are401AndDoNothing() throws Exception {
    assertThat(Http.get(url("/admin/status"), "wrong").statusCode()).isEqualTo(401);
    HttpResponse<String> r = Http.post(url("/admin/shutdown"), "s3cre");
    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(JSON.readTree(r.body()).get("message").asString()).contains("wrong admin token");
    assertThat(context.getBean(AdminShutdown.class).isShuttingDown()).isFalse();
  }

  @Test
  void adminStatus_withToken_mergesRoleStateIdentityAndDetails() throws Exception {
    HttpResponse<String> r = Http.get(url("/admin/status"), "s3cret");
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode body = JSON.readTree(r.body());
    assertThat(body.get("role").asString()).isEqualTo("tester");
    assertThat(body.get("state").asString()).isEqualTo("RUNNING");
    assertThat(body.get("identity").asString()).isEqualTo("127.0.0.1:1234");
    assertThat(body.get("answer").asInt()).isEqualTo(42);
  }

  @Test
  void readiness_includesEtcdUp() throws Exception {
    HttpResponse<String> r = Http.get(url("/actuator/health/readiness"), null);
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode body = JSON.readTree(r.body());
    assertThat(body.get("status").asString()).isEqualTo("UP");
    assertThat(body.at("/components/etcd/status").asString()).isEqualTo("UP");
    assertThat(body.at("/components/readinessState/status").asString()).isEqualTo("UP");
    assertThat(Http.get(url("/actuator/health/liveness"), null).statusCode()).isEqualTo(200);
  }

  @Test
  void defaults_exposeOnlyHealthInfoPrometheus_andShutDownGracefully() throws Exception {
    HttpResponse<String> prometheus = Http.get(url("/actuator/prometheus"), null);
    assertThat(prometheus.statusCode()).isEqualTo(200);
    assertThat(prometheus.body()).containsPattern("paramserver_etcd_connected\\{.*\\} 1.0");
    assertThat(Http.get(url("/actuator/env"), null).statusCode()).isEqualTo(404);
    assertThat(environment.getProperty("server.shutdown")).isEqualTo("graceful");
  }

  @Test
  void prometheus_hasCommonTags_etcdCallLatency_andGrpcHistogramsOnBothSides() throws Exception {
    int grpcPort = context.getBean(NotLeaderMasterService.class).port();
    ManagedChannel channel =
        context.getBean(ChannelFactory.class).forAddress("127.0.0.1:" + grpcPort);
    try {
      assertThatThrownBy(
              () ->
                  MasterGrpc.newBlockingStub(channel)
                      .withDeadlineAfter(30, TimeUnit.SECONDS)
                      .getStatus(GetStatusRequest.getDefaultInstance()))
          .isInstanceOf(StatusRuntimeException.class);
    } finally {
      Channels.close(channel);
    }
    coordinator.kv().get(coordinator.keys().prefix() + "probe");

    String body = Http.get(url("/actuator/prometheus"), null).body();
    String job = "paramserver_job=\"" + coordinator.keys().job() + "\"";
    String method = "grpc_method=\"paramserver.v1.Master/GetStatus\"";
    String status = "grpc_status=\"FAILED_PRECONDITION\"";
    // labels are sorted by name, le comes last
    assertThat(body)
        .contains(
            "grpc_client_call_duration_seconds_bucket{application=\"support-test\","
                + method
                + ","
                + status
                + ",grpc_target=\"127.0.0.1:"
                + grpcPort
                + "\","
                + job
                + ",role=\"tester\",le=\"+Inf\"} 1")
        .contains("grpc_client_call_duration_seconds_bucket{", "le=\"0.005\"}")
        .containsPattern(
            "grpc_server_call_duration_seconds_bucket\\{application=\"support-test\","
                + method
                + ","
                + status
                + ",.*"
                + job
                + ",role=\"tester\",le=\"0.005\"}")
        .contains(
            "paramserver_etcd_call_seconds_bucket{application=\"support-test\","
                + "operation=\"get\",outcome=\"success\","
                + job
                + ",role=\"tester\",le=\"0.01\"}")
        .contains(
            "paramserver_etcd_connected{application=\"support-test\","
                + job
                + ",role=\"tester\"} 1.0");
  }

  @Test
  void coordinator_usesTheConfiguredJob_andGrpcGetsTheErrorMapping() {
    assertThat(coordinator.isConnected()).isTrue();
    assertThat(coordinator.keys().job()).startsWith("test-");
    assertThat(context.getBeansOfType(ErrorMappingInterceptor.class)).hasSize(1);
  }

  @Test
  void channelFactory_isPlaintext_withTheClientCallMetrics_andTheJobToken() {
    ChannelFactory factory = context.getBean(ChannelFactory.class);
    assertThat(factory.tls()).isNull();
    // the admin token is set: internal calls carry it (JobToken.attach)
    assertThat(factory.interceptors()).hasSize(2);
    assertThat(factory.interceptors().get(0)).isSameAs(context.getBean(ClientCallMetrics.class));
    assertThat(factory.interceptors().get(1).getClass().getName())
        .startsWith(JobToken.class.getName());
  }

  @Test
  void grpcHandlerErrors_areMappedByTheGlobalInterceptor() {
    int grpcPort = context.getBean(NotLeaderMasterService.class).port();
    ManagedChannel channel =
        ManagedChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().build();
    try {
      assertThatThrownBy(
              () ->
                  MasterGrpc.newBlockingStub(channel)
                      .withDeadlineAfter(5, TimeUnit.SECONDS)
                      .getStatus(GetStatusRequest.getDefaultInstance()))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                assertThat(RpcErrors.reasonOf(e)).isEqualTo(ErrorReason.NOT_LEADER);
                assertThat(e.getStatus().getDescription()).contains("not the leader");
              });
    } finally {
      channel.shutdownNow();
    }
  }

  @Test
  void grpcServer_answersTheStandardHealthCheck_andServerReflection() {
    int grpcPort = context.getBean(NotLeaderMasterService.class).port();
    ManagedChannel channel =
        ManagedChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().build();
    try {
      HealthCheckResponse health =
          HealthGrpc.newBlockingStub(channel)
              .withDeadlineAfter(5, TimeUnit.SECONDS)
              .check(HealthCheckRequest.getDefaultInstance());
      assertThat(health.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
      assertThat(context.getBean(io.grpc.protobuf.services.HealthStatusManager.class)).isNotNull();
      assertThat(context.getBeansOfType(io.grpc.BindableService.class).values())
          .anyMatch(s -> s.bindService().getServiceDescriptor().getName().contains("reflection"));
    } finally {
      channel.shutdownNow();
    }
  }
}
