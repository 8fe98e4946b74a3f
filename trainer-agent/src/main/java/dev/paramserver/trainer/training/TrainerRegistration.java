package dev.paramserver.trainer.training;

import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.coordination.JoinDetails;
import dev.paramserver.trainer.coordination.Membership;
import dev.paramserver.trainer.coordination.TrainerCoordination;
import java.util.List;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ApplicationContext;
import org.springframework.stereotype.Component;

/**
 * Makes this trainer a member of its job ({@code trainers/<id>}, with its admin address {@code
 * host:httpPort}), through the trainer's {@link TrainerCoordination}: a membership that ends with
 * the session or the process.
 */
@Component
public class TrainerRegistration {
  private final TrainerCoordination coordination;
  private final ApplicationContext context;
  private final TrainerProperties props;
  private final String advertiseHost;

  public TrainerRegistration(
      TrainerCoordination coordination,
      ApplicationContext context,
      TrainerProperties props,
      @Value("${paramserver.advertise-host:127.0.0.1}") String advertiseHost) {
    this.coordination = coordination;
    this.context = context;
    this.props = props;
    this.advertiseHost = advertiseHost;
  }

  /** The address published: the advertised host and the HTTP port (0 without a web server). */
  String endpoint() {
    int port =
        context instanceof WebServerApplicationContext web && web.getWebServer() != null
            ? web.getWebServer().getPort()
            : 0;
    return advertiseHost + ":" + port;
  }

  /**
   * Joins the job with the model's {@code parameters}; the caller closes the membership.
   *
   * @param session identifies this run of the trainer (its pushes carry it too)
   */
  Membership join(String session, List<ParameterSpec> parameters, ModelFile description) {
    CommunicationProperties comm = props.communication();
    return coordination.join(
        new JoinDetails(
            props.id(),
            session,
            endpoint(),
            parameters,
            comm.mode().wire(),
            comm.staleness(),
            description));
  }

  /** A new session id. */
  static String newSession() {
    return UUID.randomUUID().toString();
  }
}
