package dev.paramserver.trainer.testing;

import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.util.List;

/** Channels to in-process servers: the address registered in etcd is the server's name. */
public final class InProcessChannels extends ChannelFactory {
  public InProcessChannels() {
    super(null, List.of());
  }

  @Override
  public ManagedChannel forAddress(String name) {
    return InProcessChannelBuilder.forName(name).directExecutor().build();
  }
}
