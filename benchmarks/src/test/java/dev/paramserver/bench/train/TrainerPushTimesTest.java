package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class TrainerPushTimesTest {
  @Test
  void parse_readsUnaryPushCallsAndStreamedRoundTrips_ignoringOtherMethods() {
    String body =
        """
        grpc_client_call_duration_seconds_count{grpc_method="paramserver.v1.ParameterServer/PushGradients",grpc_status="OK",grpc_target="127.0.0.1:1"} 10.0
        grpc_client_call_duration_seconds_sum{grpc_method="paramserver.v1.ParameterServer/PushGradients",grpc_status="OK",grpc_target="127.0.0.1:1"} 0.05
        grpc_client_call_duration_seconds_count{grpc_method="paramserver.v1.ParameterServer/PullParameters",grpc_status="OK",grpc_target="127.0.0.1:1"} 99.0
        paramserver_trainer_push_round_trip_seconds_count{application="trainer-agent"} 4.0
        paramserver_trainer_push_round_trip_seconds_sum 0.008
        paramserver_trainer_push_round_trip_seconds_max 0.003
        """;

    Map<String, ServerRpcTimes.Times> times = TrainerPushTimes.parse(body);

    assertThat(times.get("PushGradients round trip (client)"))
        .isEqualTo(new ServerRpcTimes.Times(10, 0.05));
    assertThat(times.get("streamed push round trip (client)"))
        .isEqualTo(new ServerRpcTimes.Times(4, 0.008));
    assertThat(times).hasSize(2);
  }
}
