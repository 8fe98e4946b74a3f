package dev.paramserver.bench.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AllocProbeTest {
  @TempDir Path dir;

  @Test
  void countsWhatTheEchoServerAllocatesPerByte() throws Exception {
    try (EchoServerProcess echo = EchoServerProcess.start(List.of("-Xmx256m"), dir);
        AllocProbe probe = AllocProbe.attach(echo.pid())) {
      long before = probe.allocatedBytes();
      assertThat(before).isPositive();
      int size = 1 << 20;
      // the bare gRPC echo parses every request into a fresh byte[]: at least one byte per byte
      double grpc =
          probe.bytesPerPayloadByte(
              () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.ECHO, size), 4, size, 300);
      assertThat(grpc).isGreaterThan(0.9);
      // the raw echo reuses one direct buffer per connection: next to nothing per byte
      double raw =
          probe.bytesPerPayloadByte(
              () -> new RawPipelineOps(echo.rawPort(), size, true), 4, size, 300);
      assertThat(raw).isLessThan(0.1);
    }
  }
}
