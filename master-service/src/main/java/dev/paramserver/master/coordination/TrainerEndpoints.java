package dev.paramserver.master.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * What a joining trainer's {@code trainers/<id>} holds: its admin endpoint, or {@code <peer
 * host>:0} when it has none. The console calls that endpoint with the job's admin token, so an
 * endpoint must be on the host the Join came from (the same address, or a name that resolves to
 * it): a caller cannot point the master at another machine.
 */
final class TrainerEndpoints {
  private TrainerEndpoints() {}

  static String registration(String endpoint, String peerHost) {
    if (endpoint.isEmpty()) {
      return hostPort(peerHost, 0);
    }
    int colon = endpoint.lastIndexOf(':');
    String host = colon > 0 ? endpoint.substring(0, colon) : "";
    int port;
    try {
      port = Integer.parseInt(endpoint.substring(colon + 1));
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (host.isEmpty() || port < 0 || port > 65535) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "endpoint '"
              + endpoint
              + "' is not host:port: send the trainer's admin host:port, or ''");
    }
    String bare =
        host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    if (!peerHost.isEmpty() && !sameHost(bare, peerHost)) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "endpoint '"
              + endpoint
              + "' is not on the host this call came from ("
              + peerHost
              + "): the console calls the endpoint with the admin token, so it must be the"
              + " trainer's own; send "
              + hostPort(peerHost, port)
              + ", or leave it empty");
    }
    return endpoint;
  }

  private static boolean sameHost(String host, String peerHost) {
    if (host.equalsIgnoreCase(peerHost)) {
      return true;
    }
    try {
      InetAddress peer = InetAddress.getByName(peerHost);
      for (InetAddress a : InetAddress.getAllByName(host)) {
        if (a.equals(peer)) {
          return true;
        }
      }
    } catch (UnknownHostException e) {
      return false;
    }
    return false;
  }

  static String hostPort(String host, int port) {
    String h = host == null || host.isEmpty() ? "unknown" : host;
    return (h.indexOf(':') >= 0 && !h.startsWith("[") ? "[" + h + "]" : h) + ":" + port;
  }
}
