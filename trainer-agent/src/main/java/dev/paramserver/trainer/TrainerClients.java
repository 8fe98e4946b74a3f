package dev.paramserver.trainer;

import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.coordination.TrainerCoordination;
import dev.paramserver.trainer.master.MasterClient;
import dev.paramserver.trainer.master.MasterReports;
import dev.paramserver.trainer.pserver.PserverDirectory;
import dev.paramserver.trainer.stop.StopSignal;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The trainer's clients of the master and the pservers, found through the trainer's {@link
 * TrainerCoordination}, over the service's {@link ChannelFactory} (TLS and client metrics) and
 * retrying until the {@link StopSignal} says stop. Closed with the context, after the training
 * session stopped.
 */
@Configuration(proxyBeanMethods = false)
class TrainerClients {
  @Bean(destroyMethod = "close")
  MasterClient masterClient(
      TrainerCoordination coordination,
      TrainerProperties props,
      StopSignal stop,
      ChannelFactory channels) {
    CommunicationProperties comm = props.communication();
    return new MasterClient(
        coordination.masters(), comm.rpcTimeout(), stop.retryUpTo(comm.maxBackoff()), channels);
  }

  @Bean
  MasterReports masterReports(MasterClient master, TrainerProperties props) {
    return new MasterReports(master, props.id());
  }

  @Bean(destroyMethod = "close")
  PserverDirectory pserverDirectory(TrainerCoordination coordination, ChannelFactory channels) {
    return new PserverDirectory(coordination.pservers(), channels);
  }
}
